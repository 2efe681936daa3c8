"use strict";
(function () {
  // Failing rows: a text filter and a category filter, both client-side.
  var table = document.getElementById("failing-table");
  var text = document.getElementById("filter-text");
  var category = document.getElementById("filter-category");
  var count = document.getElementById("filter-count");
  function applyFilter() {
    var needle = text.value.trim().toLowerCase();
    var wanted = category.value;
    var shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      var ok = (!wanted || row.dataset.category === wanted) &&
        (!needle || row.textContent.toLowerCase().indexOf(needle) !== -1);
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    count.textContent = shown.toLocaleString("en") + " shown";
  }
  if (table && text && category) {
    text.addEventListener("input", applyFilter);
    category.addEventListener("change", applyFilter);
  }

  // Any table.sortable: click a header to sort by that column (numbers as numbers).
  function cellValue(row, index) {
    var cell = row.cells[index];
    var raw = cell ? cell.textContent.trim() : "";
    var number = parseFloat(raw.replace(/,/g, ""));
    return isNaN(number) || !/^[-\d.,]+%?$/.test(raw) ? raw.toLowerCase() : number;
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (sortable) {
    Array.prototype.forEach.call(sortable.tHead.rows[0].cells, function (header, index) {
      header.addEventListener("click", function () {
        var ascending = header.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(sortable.tHead.rows[0].cells, function (other) {
          other.removeAttribute("aria-sort");
        });
        header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = sortable.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, index), y = cellValue(b, index);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });

  // Heatmap: success or captcha rates.
  Array.prototype.forEach.call(document.querySelectorAll("input[name=heat]"), function (radio) {
    radio.addEventListener("change", function () {
      ["success", "captcha"].forEach(function (kind) {
        var map = document.getElementById("heatmap-" + kind);
        if (map) { map.hidden = kind !== radio.value; }
      });
    });
  });
})();
