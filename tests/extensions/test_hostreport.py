"""What a crawl learns of its hosts reaches the report: a real crawl with a job directory where one
host answers 429 and one is down, then the report made from that job (hosts.json)."""

from __future__ import annotations

import io
import json
import re

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import crawl, write_csv
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.reports.build import build_report
from urlcheck.reports.run import run_report

pytestmark = pytest.mark.crawl

SEQUENTIAL = {
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "CONCURRENT_REQUESTS": 8,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
}
BASE = 0.2  # URLCHECK_BACKOFF_BASE: pauses of 0.2, 0.4, 0.8 s
SLOW, DOWN, FINE = "127.0.0.4", "127.0.0.5", "127.0.0.6"


def _cells(page: str, host: str) -> tuple[str, list[str]]:
    """The hosts table row of ``host``: its class attribute and its cells' text."""
    match = re.search(rf'<tr([^>]*) data-host="{re.escape(host)}">(.*?)</tr>', page)
    assert match is not None, f"no hosts row for {host}"
    cells = [
        re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", match[2])
    ]
    return match[1], cells


@deferred_f_from_coro_f
async def test_learned_delay_back_off_time_and_unavailable_hosts_reach_the_report(site, tmp_path):
    u = site.url
    rows = [
        u(SLOW, "/ratelimit/2?id=hostsreport"),  # 429, 429, then 200: two pauses, 0.2 + 0.4 s
        *(u(DOWN, f"/always/503?id=hostsreport&i={i}") for i in range(3)),
        u(FINE, "/ok?id=hostsreport"),
    ]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    job = tmp_path / "job"
    results, _ = await crawl(
        csv,
        job / "results.jsonl",
        **SEQUENTIAL,
        URLCHECK_BACKOFF_BASE=BASE,
        URLCHECK_HOST_DOWN_AFTER=2,
        JOBDIR=str(job),
    )
    assert [r["error"] for r in sorted(results, key=lambda r: r["row"])] == [
        None,
        None,
        None,
        "host_unavailable",
        None,
    ]

    hosts = json.loads((job / "hosts.json").read_text())["hosts"]
    assert set(hosts) == {SLOW, DOWN}  # a host that was never slowed or paused is not there
    # The 429 host: its two pauses did not overlap (the retry waits for the pause to end).
    assert hosts[SLOW]["too_fast"] == 2 and hosts[SLOW]["delay"] == 0.6
    assert hosts[SLOW]["backoff_seconds"] == pytest.approx(BASE + 2 * BASE)
    assert hosts[SLOW]["unavailable"] is None
    # The down host: two rows ran their ladders (0.2 + 0.4 + 0.8 s each, possibly overlapping)
    # before it was given up on; the third row was not sent.
    ladder = BASE * (1 + 2 + 4)
    assert ladder <= hosts[DOWN]["backoff_seconds"] <= 2 * ladder + 1e-6
    assert hosts[DOWN]["unavailable"]["rows_tried"] == 2
    assert hosts[DOWN]["unavailable"]["last_status"] == 503

    data = build_report(job)
    by_host = {h.host: h for h in data.hosts}
    assert data.unavailable_hosts == 1 and by_host[DOWN].unavailable
    assert by_host[SLOW].delay == 0.6 and not by_host[SLOW].unavailable
    assert by_host[SLOW].backoff_seconds == pytest.approx(0.6)
    assert by_host[DOWN].backoff_seconds == hosts[DOWN]["backoff_seconds"]
    assert by_host[DOWN].delay is None  # nothing learned: the host only answered 503
    assert by_host[FINE].backoff_seconds is None and by_host[FINE].delay is None
    assert data.hosts[0].host == DOWN  # unavailable hosts first

    out, err = io.StringIO(), io.StringIO()
    assert run_report(job, str(tmp_path / "x.html"), out=out, err=err) == ExitCode.FINISHED
    page = (tmp_path / "x.html").read_text()
    header = re.search(r'<table[^>]*id="hosts-table">.*?</thead>', page, re.S)
    assert header is not None
    columns = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<th[^>]*>(.*?)</th>", header[0])]
    assert columns == [
        "host",
        "rows",
        "errors",
        "retries",
        "longest Retry-After (s)",
        "back-off (s)",
        "learned delay (s)",
        "median latency (ms)",
    ]
    assert "<strong>1 unavailable</strong>" in page
    css, cells = _cells(page, DOWN)
    assert 'class="unavailable"' in css and cells[0] == f"{DOWN} unavailable"
    assert cells[1] == "3" and cells[5] == f"{hosts[DOWN]['backoff_seconds']:,.1f}"
    assert cells[6] == "-"
    css, cells = _cells(page, SLOW)
    assert "unavailable" not in css
    assert cells[0] == SLOW and cells[5] == "0.6" and cells[6] == "0.6"
    _, cells = _cells(page, FINE)
    assert cells[5] == cells[6] == "-"
