"""The politeness rules, checked from the servers' side in real crawls (no wall-time asserts)."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from email.utils import format_datetime
from itertools import pairwise

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import crawl, write_csv
from tests.sitefixture import SiteServer, host_stats

pytestmark = pytest.mark.crawl

HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")


@pytest.fixture(scope="module")
def strict_site(tmp_path_factory):
    """Rejects (429) any request to a host < 250 ms after the previous one or overlapping it."""
    log = tmp_path_factory.mktemp("strict") / "requests.jsonl"
    with SiteServer((*HOSTS, "127.0.0.5"), log_path=log, min_gap=0.25) as server:
        yield server


def run_entries(site, tag):
    return sorted(
        (e for e in site.log() if f"run={tag}" in e["path"]), key=lambda e: e["t_arrival"]
    )


@deferred_f_from_coro_f
async def test_one_in_flight_and_300ms_per_host_on_every_hop(strict_site, tmp_path):
    u = strict_site.url
    rows = []
    for i in range(8):
        for host in HOSTS:  # grouped input would be fed interleaved anyway
            other = HOSTS[(HOSTS.index(host) + 1) % len(HOSTS)]
            if i % 3 == 0:  # a cross-host hop into the next host
                target = u(other, f"/ok?run=rules%26i={i}%26from={host}")
                rows.append(u(host, f"/redirect/301?to={target}&run=rules&i={i}"))
            elif i % 3 == 1:
                rows.append(u(host, f"/chain/2?run=rules&i={i}"))
            else:
                rows.append(u(host, f"/ok?run=rules&i={i}"))
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(sorted(rows)) + "\n")
    results, _ = await crawl(csv, tmp_path / "out.jsonl")
    assert len(results) == len(rows)
    assert all(r["final_status"] == 200 for r in results), [
        r for r in results if r["final_status"] != 200
    ]
    log = [e for e in strict_site.log() if "run=rules" in e["path"] or "/chain/" in e["path"]]
    stats = host_stats(log)
    assert set(stats) == set(HOSTS)
    for host, s in stats.items():
        assert s.rejected == 0, host
        assert s.max_in_flight == 1, host
        assert s.min_gap is not None and s.min_gap >= 0.29, (host, s.min_gap)


@deferred_f_from_coro_f
async def test_a_rate_limited_host_backs_off_alone_then_gives_up(site, tmp_path):
    u = site.url
    slow = [u("127.0.0.6", f"/always/429?run=giveup&i={i}") for i in range(2)]
    healthy = [u("127.0.0.7", f"/ok?run=giveup&i={i}") for i in range(12)]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(slow + healthy) + "\n")
    # Each 429 also doubles the host's pace (tested on its own in test_hostile.py): capped at
    # 1 s, it stays below the pauses measured here instead of climbing to 10 s a request.
    results, crawler = await crawl(
        csv, tmp_path / "out.jsonl", URLCHECK_BACKOFF_BASE=0.5, URLCHECK_HOST_DELAY_MAX=1
    )
    rows = {r["url"]: r for r in results}
    for url in slow:
        assert (rows[url]["status"], rows[url]["final_status"], rows[url]["retries"]) == (
            429,
            429,
            3,
        )
    assert all(rows[url]["final_status"] == 200 for url in healthy)

    log = run_entries(site, "giveup")
    bad = [e for e in log if e["host"] == "127.0.0.6"]
    good = [e for e in log if e["host"] == "127.0.0.7"]
    assert len(bad) == 8  # 2 URLs x 4 attempts
    # While the slow host waited out its first pause (0.5 s), the healthy host kept going.
    first, second = bad[0]["t_arrival"], bad[1]["t_arrival"]
    assert second - first >= 0.5
    assert sum(first < e["t_arrival"] < second for e in good) >= 1
    # The schedule doubles: waits of at least 0.5, 1 and 2 s between one URL's attempts.
    one_url = [e["t_arrival"] for e in bad if e["path"].endswith("i=0")]
    waits = [b - a for a, b in pairwise(one_url)]
    assert [w >= m for w, m in zip(waits, (0.5, 1.0, 2.0), strict=True)] == [True] * 3, waits
    assert crawler.stats.get_value("urlcheck/backoff/pauses") == 6


@pytest.mark.parametrize("form", ["seconds", "http-date"])
@deferred_f_from_coro_f
async def test_retry_after_is_honoured_in_both_forms(site, tmp_path, form):
    # The back-off alone would wait 0.2 s: a retry later than that is the header's doing.
    if form == "seconds":
        value = "1"
    else:
        # An HTTP-date has whole seconds: 2 to 3 s from now, so still ahead when it is read.
        when = math.ceil(time.time() + 2)
        value = format_datetime(datetime.fromtimestamp(when, UTC), usegmt=True)
    tag = f"ra-{form}"
    url = site.url("127.0.0.8", f"/ratelimit/1?retry_after={value}&run={tag}")
    csv = write_csv(tmp_path / "in.csv", f'url\n"{url}"\n')
    results, _ = await crawl(csv, tmp_path / "out.jsonl", URLCHECK_BACKOFF_BASE=0.2)
    [row] = results
    assert (row["status"], row["retries"]) == (200, 1)
    first, retry = (e["t_arrival"] for e in run_entries(site, tag))
    # The site stamps arrivals by time.time(); the crawl waits by time.monotonic() (2 ms: slew).
    if form == "seconds":
        assert row["retry_after"] == 1.0
        assert retry - first >= 1.0 - 0.002
    else:
        assert when - first >= 1.0, "the date had passed before the crawl asked"
        assert row["retry_after"] == pytest.approx(when - first, abs=0.3)
        assert retry >= when - 0.002  # not before the date


@deferred_f_from_coro_f
async def test_robots_txt_crawl_delay_is_kept_from_the_first_request(tmp_path_factory, tmp_path):
    """With ROBOTSTXT_OBEY on, a host whose robots.txt asks for Crawl-delay: 1 gets its requests
    at least 1 s apart, robots.txt itself included; a strict site that 429s anything closer
    than 0.95 s never has to."""
    log = tmp_path_factory.mktemp("crawl-delay") / "requests.jsonl"
    with SiteServer(("127.0.0.2",), log_path=log, min_gap=0.95, crawl_delay=1.0) as slow:
        rows = [slow.url("127.0.0.2", f"/ok?run=delay&i={i}") for i in range(4)]
        csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
        results, crawler = await crawl(csv, tmp_path / "out.jsonl", ROBOTSTXT_OBEY=True)
        entries = slow.log()
    assert [r["final_status"] for r in results] == [200] * 4
    assert entries[0]["path"] == "/robots.txt"
    stats = host_stats(entries)["127.0.0.2"]
    assert stats.rejected == 0
    # The site stamps arrivals by time.time(), the crawl counts by time.monotonic(): NTP may slew
    # one against the other by up to 0.5 ms a second.
    assert stats.min_gap is not None and stats.min_gap >= 1.0 - 0.002, stats.min_gap
    assert crawler.stats.get_value("urlcheck/robots/crawl_delay/127.0.0.2") == 1.0
