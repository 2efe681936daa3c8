"""Cancel finishes the URL in hand (issue 16 point 4), end to end: ``scrapy job cancel`` on a
real crawl whose rows are half-way through their redirect chains. Rows whose hop in flight
answers within the grace finish their chain; a row whose hop hangs gets one line with
``error: "cancelled"`` and the chain so far; no row gets two lines; no new row starts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from tests.jobs.crawls import (
    HOSTS,
    Crawl,
    assert_no_duplicates,
    meta_of,
    read_results,
    requested_rows,
    write_rows,
)
from tests.processes import scrapy_job
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import JobState

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl


def two_hops(site: SiteServer, host: str, tag: str, row: int, second: str) -> str:
    """A 301 whose target (on the same host) answers after ``second``."""
    target = site.url(host, f"{second}?t={tag}&r={row}&hop=2")
    return site.url(host, f"/redirect/301?to={quote(target, safe='')}&t={tag}&r={row}")


def test_cancel_ends_the_rows_in_hand_with_a_line_each(tmp_path: Path, site: SiteServer) -> None:
    rows = 40
    urls = []
    for row in range(1, rows + 1):
        host = HOSTS[(row - 1) % len(HOSTS)]
        # Row 1's second hop hangs; the others' take 0.8 s.
        second = "/delay/60" if row == 1 else "/delay/0.8"
        urls.append(two_hops(site, host, "cancel-hand", row, second))
    csv = write_rows(tmp_path / "in.csv", urls)
    jobdir = tmp_path / "job"
    # The hanging hop ends at DOWNLOAD_TIMEOUT: long enough to still hang through the cancel
    # command and its 2 s grace (about 4 s from the hop's request), short enough not to keep
    # the closing process waiting for it (Scrapy closes a spider once its downloads have).
    crawl = Crawl(csv, jobdir, "URLCHECK_JOB_CANCEL_GRACE=2", "DOWNLOAD_TIMEOUT=10")
    # Wait until row 1's first hop has answered (the site logs a request once answered) and
    # other rows have lines; its hanging second hop (first in its host's queue: hops go before
    # new rows) leaves right after.
    deadline = time.monotonic() + 30
    while 1 not in {r for _, r in requested_rows(site, "cancel-hand")} or crawl.lines() < 2:
        assert time.monotonic() < deadline and crawl.process.poll() is None, crawl.stderr()[-3000:]
        time.sleep(0.05)
    time.sleep(0.5)
    cancelled = scrapy_job("cancel", str(jobdir))
    assert cancelled.returncode == ExitCode.FINISHED, cancelled.stderr
    # The lines are written after the 2 s grace; the process then waits for the hanging hop's
    # download to end, 10 s after it left at most.
    assert crawl.wait(timeout=60) == ExitCode.CANCELLED, crawl.stderr()[-3000:]

    results = read_results(jobdir / "results.jsonl")
    by_row = {r["row"]: r for r in results}
    assert_no_duplicates(results)
    hung = by_row[1]
    assert hung["error"] == "cancelled" and hung["final_status"] is None
    assert [h["status"] for h in hung["chain"]] == [301, None]
    assert hung["chain"][1]["error"] == "cancelled" and "hop=2" in hung["chain"][1]["url"]
    # Every row whose second hop was requested has its line: finished, or cancelled.
    second_hops = {r for _, r in hop2_rows(site)}
    assert second_hops <= set(by_row), f"rows cut short without a line: {second_hops - set(by_row)}"
    finished = [r for r in results if r["error"] is None]
    assert finished and all(r["hops"] == 1 and r["final_status"] == 200 for r in finished)
    # Every row whose first hop was requested has its line too (none was left mid-chain).
    first_hops = {r for _, r in requested_rows(site, "cancel-hand")}
    assert first_hops == set(by_row)
    assert len(by_row) < rows
    meta = meta_of(jobdir)
    assert meta.state is JobState.CANCELLED and meta.done_rows == len(results)
    assert meta.counts.by_status["error"] == sum(1 for r in results if r["error"] == "cancelled")


def hop2_rows(site: SiteServer) -> list[tuple[float, int]]:
    found = []
    for record in site.log():
        query = parse_qs(urlsplit(record["path"]).query)
        if query.get("t") == ["cancel-hand"] and query.get("hop") == ["2"]:
            found.append((record["t_arrival"], int(query["r"][0])))
    return found
