"""The progress line, with or without JOBDIR: a fake clock for the figures, a real crawl for
the wiring."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.conftest import FAST, crawl, write_csv
from urlcheck.check.hops import RowTask
from urlcheck.check.result import build_result
from urlcheck.check.verdict import VerdictRules
from urlcheck.config.crawlconfig import ConfigError
from urlcheck.crawl.runtime import runtime
from urlcheck.extensions.progress import Progress


def _result(row):
    task = RowTask(row, "http://a.test/", "http://a.test/", None, {})
    return build_result(task, [], rules=VerdictRules(), error="dns")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _extension(total=100, done_before=10):
    crawler = get_crawler(Spider, {"URLCHECK_BACKOFF_BASE": 30})
    found = runtime(crawler)
    found.results = SimpleNamespace(done=range(done_before))  # type: ignore[assignment]  # all Progress reads
    found.total_rows = total
    clock = Clock()
    return Progress(crawler, found, clock=clock), clock, found


def test_the_line_without_a_job():
    progress, clock, found = _extension()
    for row in range(20):
        progress.item_scraped(_result(row))
    progress.item_scraped({"row": 99})  # not a result
    clock.now += 60
    assert progress.line() == (
        "Progress: 30/100 rows (30.0%), 20.0 rows/min, ETA 3m 30s; hosts: 0 active, 0 in back-off"
    )
    found.backoff.pause("slow.example", 1)
    assert progress.line().endswith("hosts: 0 active, 1 in back-off")


def test_time_paused_is_not_counted():
    progress, clock, _ = _extension(done_before=0)
    for row in range(10):
        progress.item_scraped(_result(row))
    clock.now += 30
    progress.paused()
    clock.now += 600
    progress.resumed()
    clock.now += 30
    assert "10/100 rows (10.0%), 10.0 rows/min, ETA 9m 00s" in progress.line()


def test_nothing_before_the_input_is_read():
    progress, _, found = _extension()
    found.total_rows = 0
    assert progress.line() is None


def test_interval_setting():
    with pytest.raises(NotConfigured):
        Progress.from_crawler(get_crawler(Spider, {"URLCHECK_PROGRESS_INTERVAL": 0}))
    with pytest.raises(ConfigError, match="URLCHECK_PROGRESS_INTERVAL"):
        Progress.from_crawler(get_crawler(Spider, {"URLCHECK_PROGRESS_INTERVAL": "soon"}))
    assert Progress.from_crawler(get_crawler(Spider)).interval == 30.0


@pytest.mark.crawl
@deferred_f_from_coro_f
async def test_a_crawl_without_jobdir_logs_progress(site, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="urlcheck.extensions.progress")
    rows = [site.url("127.0.0.7", f"/ok?p={i}") for i in range(3)]
    rows.append(site.url("127.0.0.8", "/delay/1"))
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    results, _ = await crawl(csv, tmp_path / "out.jsonl", **FAST, URLCHECK_PROGRESS_INTERVAL=0.2)
    assert len(results) == 4
    lines = [m for m in caplog.messages if m.startswith("Progress: ")]
    assert lines, "no progress line"
    assert any(line.startswith("Progress: 3/4 rows (75.0%)") for line in lines)
    assert all("hosts: " in line and "in back-off" in line for line in lines)
