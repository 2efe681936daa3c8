// urlcheck serve: the pages' only script. It fetches JSON from this origin and writes text
// with textContent; it never builds HTML from strings, and makes links only of http(s) URLs
// (everything a checked site sends is hostile: a Location may be javascript:...).
"use strict";

(function () {
  const POLL_MS = 2000;
  const PAGE_SIZE = 50;

  function csrfToken() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  }

  // An element with text content, attributes and children; no HTML parsing anywhere.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = String(value);
      else if (name === "className") node.className = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // A link for an http(s) URL, plain text for anything else.
  function urlNode(url) {
    if (typeof url !== "string" || url === "") return document.createTextNode("-");
    let parsed = null;
    try {
      parsed = new URL(url);
    } catch (e) {
      parsed = null;
    }
    if (parsed && (parsed.protocol === "http:" || parsed.protocol === "https:")) {
      return el("a", { href: parsed.href, rel: "noopener noreferrer nofollow", target: "_blank", text: url });
    }
    return el("span", { className: "not-a-link", text: url });
  }

  function show(value, empty) {
    return value === null || value === undefined || value === "" ? (empty || "-") : String(value);
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "-";
    let s = Math.max(0, Math.round(seconds));
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    s = s % 60;
    if (h) return h + "h " + String(m).padStart(2, "0") + "m";
    if (m) return m + "m " + String(s).padStart(2, "0") + "s";
    return s + "s";
  }

  function setText(id, value) {
    const node = document.getElementById(id);
    if (node) node.textContent = value;
  }

  async function fetchJSON(url, options) {
    const response = await fetch(url, Object.assign({ credentials: "same-origin" }, options || {}));
    if (response.status === 304) return { status: 304, body: null, response };
    let body = null;
    try {
      body = await response.json();
    } catch (e) {
      body = null;
    }
    return { status: response.status, body, response };
  }

  async function post(url, body) {
    return fetchJSON(url, { method: "POST", body: body, headers: { "X-CSRF-Token": csrfToken() } });
  }

  function setBadge(node, state) {
    node.textContent = state;
    node.className = "badge state-" + state;
  }

  // --- the jobs list ------------------------------------------------------------------------
  function jobsPage() {
    const tbody = document.getElementById("jobs");
    let etag = null;
    function row(job) {
      const percent = job.percent === null ? "" : " (" + job.percent + "%)";
      const cells = [
        el("td", {}, el("a", { href: "/jobs/" + encodeURIComponent(job.id), text: job.name })),
        el("td", {}, el("span", { className: "badge state-" + job.state, text: job.state })),
        el("td", { text: job.done_rows + " / " + job.total_rows + percent }),
      ];
      for (const key of ["2xx", "3xx", "4xx", "5xx", "error"]) {
        cells.push(el("td", { className: "num", text: (job.counts.status || {})[key] || 0 }));
      }
      cells.push(el("td", { text: show(job.started_at || job.created_at, "") }), el("td", { text: job.csv_name }));
      return el("tr", { "data-id": job.id }, ...cells);
    }
    async function poll() {
      try {
        const headers = etag ? { "If-None-Match": etag } : {};
        const answer = await fetchJSON("/api/jobs", { headers });
        if (answer.status === 200 && answer.body) {
          etag = answer.response.headers.get("ETag");
          const rows = answer.body.jobs.map(row);
          // No jobs any more (their directories removed): the page says so, as it first did.
          const none = el("tr", { className: "empty" }, el("td", { colspan: 10 }, "No jobs yet: ", el("a", { href: "/new", text: "check some URLs" }), "."));
          tbody.replaceChildren(...(rows.length ? rows : [none]));
        }
      } finally {
        setTimeout(poll, POLL_MS);
      }
    }
    setTimeout(poll, POLL_MS);
  }

  // --- the upload form ----------------------------------------------------------------------
  function newPage() {
    const form = document.getElementById("upload-form");
    const problem = document.getElementById("upload-error");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      problem.textContent = "";
      const button = document.getElementById("upload-submit");
      button.disabled = true;
      try {
        const answer = await post("/api/upload", new FormData(form));
        if (answer.status === 201 && answer.body) {
          window.location.assign(answer.body.url);
          return;
        }
        problem.textContent = (answer.body && answer.body.error) || "the upload failed (" + answer.status + ")";
      } catch (e) {
        problem.textContent = "the server did not answer";
      } finally {
        button.disabled = false;
      }
    });
  }

  // --- a job --------------------------------------------------------------------------------
  function jobPage() {
    const section = document.getElementById("job");
    const jobId = section.dataset.id;
    const base = "/api/jobs/" + encodeURIComponent(jobId);
    const tbody = document.querySelector("#results tbody");
    const view = {
      generation: section.dataset.generation,
      filters: new URLSearchParams(),
      cursors: [0], // where each page starts
      page: 0,
      shown: 0, // rows on this page
      tail: null, // where the next new row will be read from, on the last page
      etag: null,
      backoff: [],
      backoffAt: 0,
      problem: null, // what the polls last said went wrong, until one is answered again
    };

    // A poll's trouble is shown until a poll is answered again (a restarted server), unless
    // a button's answer has replaced it meanwhile.
    function pollProblem(text) {
      view.problem = text;
      setText("message", text);
    }

    function pollAnswered() {
      const message = document.getElementById("message");
      if (view.problem !== null && message && message.textContent === view.problem) message.textContent = "";
      view.problem = null;
    }

    function query(params) {
      const q = new URLSearchParams(view.filters);
      for (const [k, v] of Object.entries(params)) q.set(k, v);
      q.set("gen", view.generation);
      return q.toString();
    }

    function chainTable(result) {
      const head = el("tr", {}, ...["#", "Status", "URL", "Kind", "ms", "Warnings", "Location as sent", "Error"].map((t) => el("th", { text: t })));
      const rows = (result.chain || []).map((hop, i) =>
        el(
          "tr",
          {},
          el("td", { text: i + 1 }),
          el("td", { text: show(hop.status) }),
          el("td", {}, urlNode(hop.url)),
          el("td", { text: show(hop.kind) }),
          el("td", { className: "num", text: show(hop.ms) }),
          el("td", { text: (hop.warnings || []).join(", ") }),
          el("td", { className: "raw", text: show(hop.location_raw !== undefined ? hop.location_raw : hop.location) }),
          el("td", { text: show(hop.error) }),
        ),
      );
      const facts = [];
      if (result.error_message) facts.push(el("p", { className: "error", text: result.error_message }));
      if ((result.reasons || []).length) facts.push(el("p", { text: "reasons: " + result.reasons.join(", ") }));
      if ((result.warnings || []).length) facts.push(el("p", { text: "warnings: " + result.warnings.join(", ") }));
      if (result.expected) facts.push(el("p", {}, "expected: ", urlNode(result.expected)));
      if (result.meta_refresh) facts.push(el("p", {}, "meta refresh: ", urlNode(result.meta_refresh)));
      const page = result.final_page;
      if (page) {
        const about = [page.content_type, page.title ? "title “" + page.title + "”" : null].filter(Boolean);
        if (about.length) facts.push(el("p", { text: "final page: " + about.join(", ") }));
        if (page.canonical) facts.push(el("p", {}, "canonical: ", urlNode(page.canonical)));
        const robots = (page.robots || []).map((r) => r.source + ": " + (r.directives || []).join(", "));
        if (robots.length) facts.push(el("p", { text: "robots: " + robots.join("; ") }));
      }
      return el("div", { className: "chain" }, el("table", { className: "chain-table" }, el("thead", {}, head), el("tbody", {}, ...rows)), ...facts);
    }

    function resultRow(result) {
      const detail = el("tr", { className: "detail", hidden: true }, el("td", { colspan: 9 }));
      const toggle = el("button", { type: "button", className: "chain-toggle", text: "chain" });
      toggle.addEventListener("click", () => {
        if (detail.hidden && !detail.firstChild.firstChild) detail.firstChild.append(chainTable(result));
        detail.hidden = !detail.hidden;
        toggle.textContent = detail.hidden ? "chain" : "hide";
      });
      const verdict = result.verdict || "";
      const row = el(
        "tr",
        { className: "result verdict-" + (verdict || "none") + (result.error ? " has-error" : ""), "data-row": result.row },
        el("td", { className: "num", text: result.row }),
        el("td", { className: "url" }, urlNode(result.url)),
        el("td", { text: show(result.status) }),
        el("td", { text: show(result.final_status) }),
        el("td", { className: "url" }, urlNode(result.final_url)),
        el("td", { className: "num", text: show(result.hops) }),
        el("td", { text: show(verdict) }),
        el("td", { text: show(result.error, "") }),
        el("td", {}, toggle),
      );
      return [row, detail];
    }

    function append(results) {
      for (const result of results) {
        tbody.append(...resultRow(result));
        view.shown += 1;
      }
    }

    function pageInfo(more) {
      document.getElementById("prev").disabled = view.page === 0;
      document.getElementById("next").disabled = !more;
      setText("page-info", "page " + (view.page + 1) + " · " + view.shown + " rows");
    }

    async function loadPage() {
      const start = view.cursors[view.page];
      const answer = await fetchJSON(base + "/results?" + query({ after: start, limit: PAGE_SIZE }));
      if (answer.status !== 200 || !answer.body) {
        setText("message", (answer.body && answer.body.error) || "the results could not be read");
        return;
      }
      const body = answer.body;
      if (body.reset || body.generation !== view.generation) {
        // Another results file (a re-run): the offsets of the old one mean nothing in it.
        view.generation = body.generation;
        view.cursors = [0];
        view.page = 0;
      }
      tbody.replaceChildren();
      view.shown = 0;
      append(body.results);
      // A full page leads on even when its next rows are not in yet, as a page the polls
      // fill does: a full page's polls read no rows, so they would never open the next one.
      const full = body.more || view.shown >= PAGE_SIZE;
      if (full) {
        view.cursors[view.page + 1] = body.next;
        view.tail = null;
      } else {
        view.tail = body.next;
      }
      pageInfo(full);
    }

    function backoffList() {
      const list = document.getElementById("backoff");
      const spent = (Date.now() - view.backoffAt) / 1000;
      const items = view.backoff.map((h) =>
        el("li", {}, el("span", { className: "host", text: h.host }), " attempt " + h.attempt + ", " + duration(h.seconds_left - spent) + " left"),
      );
      list.replaceChildren(...(items.length ? items : [el("li", { className: "none", text: "none" })]));
    }

    function cluster(info) {
      const box = document.getElementById("cluster");
      if (!info) {
        box.hidden = true;
        return;
      }
      box.hidden = false;
      if (info.error) {
        setText("cluster-summary", info.error);
        return;
      }
      setText(
        "cluster-summary",
        info.status + " · " + info.committed + " committed · " + info.in_flight + " in flight · " + info.hosts_in_backoff + " hosts in back-off",
      );
      const rows = info.workers.map((w) =>
        el("tr", {}, ...[w.id, w.role, w.host, w.state, duration(w.seconds_since_beat) + " ago", w.rows, w.in_flight].map((v) => el("td", { text: v }))),
      );
      document.querySelector("#workers tbody").replaceChildren(...rows);
    }

    function status(s) {
      setBadge(document.getElementById("state"), s.state);
      setText("done", s.done_rows);
      setText("total", s.total_rows);
      setText("percent", show(s.percent));
      setText("rate", s.rate === null ? "-" : s.rate.toFixed(1));
      setText("eta", duration(s.eta_seconds));
      setText("updated", new Date().toLocaleTimeString());
      setText("waiting", s.waiting || s.failed || "");
      const bar = document.getElementById("progress");
      bar.max = Math.max(1, s.total_rows);
      bar.value = s.done_rows;
      for (const [table, counts] of [["counts-status", s.counts.status], ["counts-verdict", s.counts.verdict]]) {
        for (const tr of document.querySelectorAll("#" + table + " tr[data-key]")) {
          tr.querySelector("td").textContent = (counts || {})[tr.dataset.key] || 0;
        }
      }
      for (const [action, enabled] of Object.entries(s.actions)) {
        const button = document.getElementById("btn-" + action);
        if (button) button.disabled = !enabled;
      }
      view.backoff = s.backoff_hosts;
      view.backoffAt = Date.now();
      backoffList();
      const given = s.given_up_hosts.map((h) => el("li", { text: h }));
      document.getElementById("given-up").replaceChildren(...(given.length ? given : [el("li", { className: "none", text: "none" })]));
      manyToOne(s.many_to_one);
      cluster(s.cluster);
    }

    // The landing URLs many rows reach (a site's own text: shown as text, never a link).
    function manyToOne(seen) {
      const urls = (seen && seen.urls) || [];
      const items = urls.map((x) => el("li", { text: x.url + " (" + x.rows + " rows)" }));
      const more = seen ? seen.landings - urls.length : 0;
      if (more > 0) items.push(el("li", { className: "none", text: "and " + more + " more" }));
      document.getElementById("many-to-one").replaceChildren(...(items.length ? items : [el("li", { className: "none", text: "none" })]));
    }

    async function poll() {
      try {
        const room = view.tail === null ? 0 : Math.max(0, PAGE_SIZE - view.shown);
        const params = { after: view.tail === null ? 0 : view.tail, limit: room };
        const headers = view.etag ? { "If-None-Match": view.etag } : {};
        const answer = await fetchJSON(base + "?" + query(params), { headers });
        if (answer.status === 304 || (answer.status === 200 && answer.body)) pollAnswered();
        if (answer.status === 200 && answer.body) {
          view.etag = answer.response.headers.get("ETag");
          const body = answer.body;
          status(body);
          // The server says reset only to a poll from an offset (the last page's tail); on an
          // earlier page the poll asks for no rows, so a new generation is seen here.
          if (body.reset || body.generation !== view.generation) {
            view.generation = body.generation;
            view.cursors = [0];
            view.page = 0;
            view.etag = null;
            await loadPage();
          } else if (view.tail !== null && room > 0) {
            append(body.results);
            view.tail = body.next;
            if (view.shown >= PAGE_SIZE) {
              view.cursors[view.page + 1] = view.tail;
              view.tail = null;
              pageInfo(true);
            } else {
              pageInfo(false);
            }
          }
        } else if (answer.status !== 304) {
          pollProblem((answer.body && answer.body.error) || "the server answered " + answer.status);
        }
      } catch (e) {
        pollProblem("the server did not answer; trying again");
      } finally {
        setTimeout(poll, POLL_MS);
      }
    }

    for (const button of document.querySelectorAll(".controls button[data-action]")) {
      button.addEventListener("click", async () => {
        const action = button.dataset.action;
        button.disabled = true;
        const answer = await post(base + "/" + action, null);
        setText("message", (answer.body && (answer.body.message || answer.body.error)) || "answer " + answer.status);
        view.etag = null;
      });
    }

    const filters = document.getElementById("filters");
    filters.addEventListener("submit", (event) => {
      event.preventDefault();
      const params = new URLSearchParams();
      for (const [k, v] of new FormData(filters).entries()) if (v) params.set(k, v);
      view.filters = params;
      view.cursors = [0];
      view.page = 0;
      view.etag = null;
      loadPage();
    });
    filters.addEventListener("reset", () => {
      view.filters = new URLSearchParams();
      view.cursors = [0];
      view.page = 0;
      view.etag = null;
      setTimeout(loadPage, 0);
    });
    document.getElementById("next").addEventListener("click", () => {
      if (view.cursors[view.page + 1] === undefined) return;
      view.page += 1;
      loadPage();
    });
    document.getElementById("prev").addEventListener("click", () => {
      if (view.page === 0) return;
      view.page -= 1;
      loadPage();
    });
    setInterval(backoffList, 1000);
    loadPage().then(() => setTimeout(poll, 0));
  }

  const page = document.body.dataset.page;
  if (page === "jobs") jobsPage();
  else if (page === "new") newPage();
  else if (page === "job") jobPage();
})();
