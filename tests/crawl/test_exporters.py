"""The Markdown and JUnit feed formats, from real crawls of the test site."""

from __future__ import annotations

import xml.etree.ElementTree as ET

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
