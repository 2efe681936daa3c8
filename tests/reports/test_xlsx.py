"""The workbook writer (``-o results.xlsx``): read back with openpyxl, as Excel would open it."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import openpyxl
import pytest

from urlcheck.crawl.exporters import XlsxItemExporter
from urlcheck.reports import xlsx
from urlcheck.reports.xlsx import EXCEL_MAX_CELL, XlsxWriter, sheet_name

HOSTILE = ['=HYPERLINK("http://evil.example")', "+1+1", "-2+3", "@SUM(A1)", "=1+1"]


def result(row: int, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "row": row,
        "url": f"http://a.test/{row}",
        "requested_url": f"http://a.test/{row}",
        "status": 301,
        "final_url": "http://b.test/",
        "final_status": 200,
        "hops": 1,
        "chain": [
            {"url": f"http://a.test/{row}", "status": 301, "location": "http://b.test/"},
            {"url": "http://b.test/", "status": 200},
        ],
        "loop": False,
        "verdict": "pass",
        "reasons": [],
        "warnings": [],
        "notes": [],
        "input": {"title": f"page {row}"},
    }
    record.update(fields)
    return record


def write(results: list[dict[str, Any]], **options: Any) -> openpyxl.Workbook:
    out = io.BytesIO()
    writer = XlsxWriter(out, **options)
    for r in results:
        writer.add(r)
    writer.close()
    out.seek(0)
    return openpyxl.load_workbook(out)


def rows_of(sheet: Any) -> list[list[Any]]:
    return [list(row) for row in sheet.iter_rows(values_only=True)]


def test_results_sheet_has_every_field_the_chain_as_text_and_the_input_columns() -> None:
    book = write([result(1), result(2, verdict="fail", reasons=["final_url_mismatch"])])
    assert book.sheetnames == ["results", "checks", "final_url_mismatch"]
    header, first, second = rows_of(book["results"])
    assert header[:4] == ["row", "url", "requested_url", "status"]
    assert header[-1] == "input.title" and "input" not in header
    values = dict(zip(header, first, strict=True))
    assert values["row"] == 1 and values["status"] == 301  # numbers stay numbers
    assert values["chain"] == "301 http://a.test/1 -> 200 http://b.test/"
    assert values["loop"] is False and values["input.title"] == "page 1"
    assert dict(zip(header, second, strict=True))["reasons"] == "final_url_mismatch"
    sheet = book["results"]  # the header frozen, a filter on every column
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == f"A1:{openpyxl.utils.get_column_letter(len(header))}3"
    assert book["final_url_mismatch"].auto_filter.ref == "A1:K2"


def test_a_sheet_per_check_code_found_in_the_rows() -> None:
    book = write(
        [
            result(1, reasons=["temporary_redirect"], warnings=["location_backslash"]),
            result(2, reasons=["final_status_404", "temporary_redirect"]),
            result(3),
            # a code nobody wrote a sheet for (another check, added later): its own sheet
            result(4, reasons=["audit_new_check"]),
        ]
    )
    assert book.sheetnames == [
        "results",
        "checks",
        "temporary_redirect",
        "location_backslash",
        "final_status_404",
        "audit_new_check",
    ]
    assert [r[0] for r in rows_of(book["temporary_redirect"])[1:]] == [1, 2]
    assert [r[0] for r in rows_of(book["audit_new_check"])[1:]] == [4]
    assert rows_of(book["checks"]) == [
        ["check", "kind", "rows", "sheet"],
        ["temporary_redirect", "reason", 2, "temporary_redirect"],
        ["audit_new_check", "reason", 1, "audit_new_check"],
        ["final_status_404", "reason", 1, "final_status_404"],
        ["location_backslash", "warning", 1, "location_backslash"],
    ]


def test_no_cell_is_a_formula() -> None:
    rows = [
        result(i + 1, url=text, requested_url=None, input={"title": text})
        for i, text in enumerate(HOSTILE)
    ]
    rows[0]["reasons"] = ["=cmd|' /C calc'!A0"]  # a code is text too, and names a sheet
    out = io.BytesIO()
    writer = XlsxWriter(out)
    for r in rows:
        writer.add(r)
    writer.close()
    with zipfile.ZipFile(io.BytesIO(out.getvalue())) as archive:
        for name in archive.namelist():
            if name.startswith("xl/worksheets/"):
                assert b"<f>" not in archive.read(name) and b"<f " not in archive.read(name)
    book = openpyxl.load_workbook(io.BytesIO(out.getvalue()))
    header, *lines = list(book["results"].iter_rows())
    column = {cell.value: i for i, cell in enumerate(header)}
    for line, text in zip(lines, HOSTILE, strict=True):
        for name in ("url", "input.title"):
            cell = line[column[name]]
            assert (cell.value, cell.data_type) == (text, "s")  # the text, as it was
            assert cell.quotePrefix  # and shown and edited as text in Excel
    assert book.sheetnames[2] == "=cmd|_ _C calc_!A0"  # no [ ] : * ? / \\ ' in a name
    assert rows_of(book["checks"])[1][0] == "=cmd|' /C calc'!A0"


def test_text_a_sheet_cannot_hold_is_escaped_or_cut() -> None:
    long_url = "http://a.test/" + "x" * 40_000
    book = write([result(1, url=long_url, input={"title": "a\x1b[2Jb\x00c"})])
    header, values = rows_of(book["results"])
    cells = dict(zip(header, values, strict=True))
    assert cells["input.title"] == "a\\x1b[2Jb\\x00c"
    assert len(cells["url"]) == EXCEL_MAX_CELL and cells["url"].endswith("… [cut]")


def test_a_full_sheet_continues_on_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xlsx, "EXCEL_MAX_ROWS", 3)  # a header and two rows a sheet
    book = write([result(row, reasons=["final_url_mismatch"]) for row in range(1, 6)])
    assert book.sheetnames[:2] == ["results", "checks"]
    parts = [name for name in book.sheetnames if name.startswith("results")]
    assert parts == ["results", "results (2)", "results (3)"]
    rows = [r[0] for name in parts for r in rows_of(book[name])]
    assert rows == ["row", 1, 2, "row", 3, 4, "row", 5]
    last = openpyxl.utils.get_column_letter(len(rows_of(book["results"])[0]))
    assert [book[name].auto_filter.ref for name in parts] == [
        f"A1:{last}3",
        f"A1:{last}3",
        f"A1:{last}2",
    ]
    assert rows_of(book["checks"])[1] == ["final_url_mismatch", "reason", 5, "final_url_mismatch"]


def test_check_sheets_are_bounded_and_named_validly() -> None:
    codes = ["a" * 40, "a" * 40 + "b", "x[1]:y?", "third"]
    book = write([result(1, reasons=codes)], max_check_sheets=3)
    assert book.sheetnames == ["results", "checks", "a" * 31, "a" * 27 + " (2)", "x_1__y_"]
    summary = rows_of(book["checks"])
    assert ["third", "reason", 1, None] in summary  # counted, without a sheet of its own
    taken: set[str] = {"results"}
    assert sheet_name("Results", taken) == "Results (2)"
    assert sheet_name("History", taken) == "History (2)"  # a name Excel reserves


def test_no_rows_is_a_workbook_with_the_header() -> None:
    book = write([])
    assert book.sheetnames == ["results", "checks"]
    assert rows_of(book["results"])[0][0] == "row"


def test_the_exporter_replaces_a_file_opened_for_appending(tmp_path: Any) -> None:
    path = tmp_path / "out.xlsx"
    path.write_bytes(b"an earlier run's bytes")
    with path.open("ab") as file:  # what a feed without `overwrite` gets
        exporter = XlsxItemExporter(file)
        exporter.start_exporting()
        exporter.export_item(result(1))
        exporter.finish_exporting()
    assert rows_of(openpyxl.load_workbook(path)["results"])[1][0] == 1


def test_the_excel_csv_delimiter_setting() -> None:
    from scrapy.settings import Settings

    from urlcheck.config.crawlconfig import ConfigError, excel_delimiter

    def parse(value: str | None) -> str:
        values = {} if value is None else {"URLCHECK_EXCEL_DELIMITER": value}
        return excel_delimiter(Settings(values))

    assert [parse(v) for v in (None, ",", "\t", "tab", " Semicolon ", "|")] == [
        ";",
        ",",
        "\t",
        "\t",
        ";",
        "|",
    ]
    for bad in (";;", '"', "\n", "a", "7"):
        with pytest.raises(ConfigError, match="URLCHECK_EXCEL_DELIMITER"):
            parse(bad)
