"""The Markdown and JUnit feed formats, from real crawls of the test site."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv

pytestmark = pytest.mark.crawl


def _csv(site, tmp_path):
    u = site.url
    rows = [
        "url,expected",
        f"{u('127.0.0.7', '/chain/2')},{u('127.0.0.7', '/chain/0')}",  # pass
        f"{u('127.0.0.7', '/redirect/302?to=/ok')},{u('127.0.0.7', '/ok')}",  # fail: temporary
        f"{u('127.0.0.7', '/status/404')},{u('127.0.0.7', '/ok')}",  # fail: no redirect, 404
        f"{u('127.0.0.7', '/loop/a')},{u('127.0.0.7', '/ok')}",  # fail: loop
        f"{u('127.0.0.7', '/ok')},",  # no target: no testcase
        "mailto:someone@example.com,http://127.0.0.7/ok",  # error: invalid_url
    ]
    return write_csv(tmp_path / "in.csv", "\n".join(rows) + "\n")


@deferred_f_from_coro_f
async def test_junit_has_one_testcase_per_row_with_a_target(site, tmp_path):
    feed = tmp_path / "junit.xml"
    results, _ = await crawl(
        _csv(site, tmp_path), tmp_path / "out.jsonl", **FAST, FEEDS={str(feed): {"format": "junit"}}
    )
    assert len(results) == 6
    root = ET.parse(feed).getroot()
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    cases = suite.findall("testcase")
    by_row = {int(c.get("name").split(":")[0].removeprefix("row ")): c for c in cases}
    assert sorted(by_row) == [1, 2, 3, 4, 6]  # row 5 names no target
    failed = {row for row, case in by_row.items() if case.find("failure") is not None}
    assert failed == {2, 3, 4, 6}
    assert suite.get("tests") == root.get("tests") == "5"
    assert suite.get("failures") == root.get("failures") == "4"
    assert by_row[2].find("failure").get("message") == "temporary_redirect"
    assert by_row[4].find("failure").get("message").startswith("loop")
    assert by_row[6].find("failure").get("type") == "invalid_url"
    assert "expected: " + site.url("127.0.0.7", "/ok") in by_row[3].find("failure").text
    assert by_row[1].get("classname") == "urlcheck.127.0.0.7"
    assert float(by_row[1].get("time")) >= 0


@deferred_f_from_coro_f
async def test_markdown_has_the_summary_and_the_failing_rows(site, tmp_path):
    feed = tmp_path / "report.md"
    results, _ = await crawl(
        _csv(site, tmp_path),
        tmp_path / "out.jsonl",
        **FAST,
        FEEDS={str(feed): {"format": "markdown"}},
    )
    assert len(results) == 6
    text = feed.read_text(encoding="utf-8")
    assert "6 rows checked" in text
    assert "| pass | 1 |" in text and "| fail | 4 |" in text
    assert "| no expected target | 1 |" in text
    failing = [line for line in text.splitlines() if line.startswith("| ") and "127.0.0.7" in line]
    rows = sorted(int(line.split("|")[1]) for line in failing)
    assert rows == [2, 3, 4, 6]
    assert "| 6 | mailto:someone@example.com |" in text
    assert "temporary\\_redirect" in text


def _spreadsheet_csv(site, tmp_path):
    u = site.url
    rows = [
        "url,expected,title",
        f"{u('127.0.0.7', '/chain/2')},{u('127.0.0.7', '/chain/0')},Café crème",  # pass
        f"{u('127.0.0.7', '/redirect/302?to=/ok')},{u('127.0.0.7', '/ok')},+1+1",  # temporary
        f"{u('127.0.0.7', '/status/404')},{u('127.0.0.7', '/ok')},-2+3",  # 404
        '"=HYPERLINK(""http://evil.example"")",,@SUM(A1)',  # invalid URL, and a formula title
    ]
    return write_csv(tmp_path / "in.csv", "\n".join(rows) + "\n")


@deferred_f_from_coro_f
async def test_xlsx_and_excel_csv_open_as_excel_would(site, tmp_path):
    import csv

    import openpyxl

    book_path, excel, comma = tmp_path / "r.xlsx", tmp_path / "excel.csv", tmp_path / "comma.csv"
    feeds = {
        str(book_path): {"format": "xlsx"},
        str(excel): {"format": "excel"},
        str(comma): {"format": "excel", "item_export_kwargs": {"delimiter": ","}},
    }
    results, _ = await crawl(
        _spreadsheet_csv(site, tmp_path), tmp_path / "out.jsonl", **FAST, FEEDS=feeds
    )
    assert len(results) == 4
    reasons = {r["row"]: r["reasons"] + r["warnings"] for r in results}  # a sheet per code

    book: Any = openpyxl.load_workbook(book_path)
    assert book.sheetnames[:2] == ["results", "checks"]
    codes = {code for row in reasons.values() for code in row}
    assert set(book.sheetnames[2:]) == codes  # a sheet per check met
    header, *lines = list(book["results"].iter_rows())
    column = {cell.value: i for i, cell in enumerate(header)}
    by_row = {line[0].value: line for line in lines}
    assert sorted(by_row) == [1, 2, 3, 4]
    chain = by_row[1][column["chain"]].value
    assert chain.startswith("301 ") and chain.endswith(
        " -> 200 " + site.url("127.0.0.7", "/chain/0")
    )
    assert by_row[1][column["input.title"]].value == "Café crème"
    for row, text in ((2, "+1+1"), (3, "-2+3"), (4, "@SUM(A1)")):
        cell = by_row[row][column["input.title"]]
        assert (cell.value, cell.data_type) == (text, "s")  # text, not a formula
    url = by_row[4][column["url"]]
    assert (url.value, url.data_type) == ('=HYPERLINK("http://evil.example")', "s")
    for code in codes:
        rows = [r[0] for r in book[code].iter_rows(min_row=2, values_only=True)]
        assert sorted(rows) == sorted(row for row, found in reasons.items() if code in found)

    # The Excel CSV: a BOM, then ";" (URLCHECK_EXCEL_DELIMITER's default) or the feed's own.
    raw = excel.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfrow;url;")
    with excel.open(encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f, delimiter=";"))
    assert sorted(int(r["row"]) for r in table) == [1, 2, 3, 4]  # as the rows ended
    by_row = {int(r["row"]): r for r in table}
    assert by_row[1]["input.title"] == "Café crème"
    assert by_row[2]["input.title"] == "'+1+1"  # a CSV cell cannot be typed: neutralised
    assert by_row[4]["url"] == '\'=HYPERLINK("http://evil.example")'
    assert by_row[1]["chain"] == chain
    assert comma.read_bytes().startswith(b"\xef\xbb\xbfrow,url,")
    with comma.open(encoding="utf-8-sig", newline="") as f:
        assert list(csv.DictReader(f)) == table


def test_the_final_page_is_the_same_columns_on_every_row() -> None:
    from urlcheck.crawl.exporters import flatten

    page = {
        "content_type": "text/html",
        "title": "T",
        "canonical": "https://a.test/",
        "robots": [{"source": "meta:robots", "directives": ["noindex", "nofollow"]}],
    }
    with_page = flatten({"row": 1, "final_page": page})
    without = flatten({"row": 2, "final_page": None})
    assert list(with_page) == list(without)
    assert with_page["final_page.robots"] == "meta:robots: noindex, nofollow"
    assert with_page["final_page.title"] == "T" and without["final_page.title"] is None
