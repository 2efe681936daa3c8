"""Hostile hosts, real crawls (issue 10): hosts down for everyone, hosts that punish our pace,
and the answers that must cost nothing (slow, hanging, 300 MB, gzip bombs, bad Locations).
Every row ends with exactly one line, whatever the host does."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pytest
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.exceptions import DropItem, IgnoreRequest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import crawl, project_settings, write_csv
from tests.processes import crawl_argv, run
from tests.sitefixture import SiteServer
from urlcheck.commands.crawl import exit_code
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.spiders.check import CheckSpider

pytestmark = pytest.mark.crawl

# One request in flight per host (the back-off and the circuit are about a host's sequence),
# no delay or AutoThrottle so the tests take the back-off time and little else.
SEQUENTIAL = {
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "CONCURRENT_REQUESTS": 8,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
}


def by_row(results):
    rows = {r["row"]: r for r in results}
    assert len(rows) == len(results), "a row was written twice"
    return rows


def requests_to(site, host, tag):
    return [e for e in site.log() if e["host"] == host and tag in e["path"]]


# --- 1. a host down for everyone ----------------------------------------------------------------


@deferred_f_from_coro_f
async def test_a_host_answering_503_to_everything_is_given_up_after_two_ladders(
    site, tmp_path, caplog
):
    u = site.url
    down = [u("127.0.0.7", f"/always/503?retry_after=0&id=down503&i={i}") for i in range(60)]
    healthy = [u("127.0.0.8", f"/ok?id=down503&i={i}") for i in range(20)]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(down + healthy) + "\n")
    with caplog.at_level(logging.INFO):
        results, crawler = await crawl(
            csv, tmp_path / "out.jsonl", **SEQUENTIAL, URLCHECK_BACKOFF_BASE=0.1
        )
    rows = by_row(results)
    assert sorted(rows) == list(range(1, 81))
    given_up = [r for r in caplog.records if "127.0.0.7 unavailable" in r.message]
    assert [r.levelno for r in given_up] == [logging.WARNING]  # logged once
    [report] = [r.message for r in caplog.records if r.message.startswith("urlcheck hosts:")]
    assert "unavailable (rows recorded as host_unavailable): 127.0.0.7" in report
    answered = [r for n, r in rows.items() if n <= 60 and r["error"] is None]
    skipped = [r for n, r in rows.items() if n <= 60 and r["error"] == "host_unavailable"]
    # Two rows ran the whole ladder and are recorded as they answered; the rest were not sent.
    assert [(r["status"], r["retries"]) for r in answered] == [(503, 3), (503, 3)]
    assert len(skipped) == 58
    for row in skipped:
        assert row["status"] is None and row["final_url"] is None
        assert row["error_message"] == (
            "host 127.0.0.7 unavailable: 2 rows in a row answered 503 on all 4 tries, "
            "last Retry-After 0 s; not requested"
        )
        assert row["retry_after"] == 0
        assert [h["error"] for h in row["chain"]] == ["host_unavailable"]
    assert len(requests_to(site, "127.0.0.7", "id=down503")) == 2 * 4
    assert all(rows[n]["status"] == 200 for n in range(61, 81))
    stats = crawler.stats.get_stats()
    assert stats["urlcheck/hosts/unavailable"] == 1
    assert stats["urlcheck/error/host_unavailable"] == 58


@deferred_f_from_coro_f
async def test_a_host_that_times_out_on_every_try_is_given_up(site, tmp_path):
    rows = [site.url("127.0.0.6", f"/hang?id=downhang&i={i}") for i in range(6)]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    results, _ = await crawl(
        csv, tmp_path / "out.jsonl", **SEQUENTIAL, DOWNLOAD_TIMEOUT=1, RETRY_TIMES=1
    )
    kinds = Counter(r["error"] for r in results)
    assert kinds == {"timeout": 2, "host_unavailable": 4}
    [message] = {r["error_message"] for r in results if r["error"] == "host_unavailable"}
    assert message == (
        "host 127.0.0.6 unavailable: 2 rows in a row failed (timeout) on all 2 tries; not requested"
    )
    site.wait_log(4, timeout=10)
    assert len(requests_to(site, "127.0.0.6", "id=downhang")) == 2 * 2


@deferred_f_from_coro_f
async def test_any_other_answer_resets_the_count(site, tmp_path):
    u = site.url
    paths = ["/always/503", "/ok", "/always/503", "/always/503", "/always/503", "/ok"]
    rows = [u("127.0.0.5", f"{p}?id=reset&i={i}") for i, p in enumerate(paths)]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    results, _ = await crawl(
        csv,
        tmp_path / "out.jsonl",
        **SEQUENTIAL,
        URLCHECK_BACKOFF_BASE=0.05,
        URLCHECK_ROWS_AHEAD_PER_HOST=1,
    )
    rows = by_row(results)
    outcome = [rows[n]["error"] or rows[n]["status"] for n in range(1, 7)]
    assert outcome == [503, 200, 503, 503, "host_unavailable", "host_unavailable"]


# --- 3. a host that punishes our pace -----------------------------------------------------------


@pytest.fixture(scope="module")
def strict_site(tmp_path_factory):
    log = tmp_path_factory.mktemp("strict") / "requests.jsonl"
    # 429 to any arrival closer than 0.5 s to the previous one (no Retry-After).
    with SiteServer(("127.0.0.41", "127.0.0.42"), log_path=log, min_gap=0.5) as server:
        yield server


@pytest.mark.parametrize("learn", [True, False])
@deferred_f_from_coro_f
async def test_a_429_raises_the_hosts_delay_for_the_rest_of_the_run(strict_site, tmp_path, learn):
    host = "127.0.0.41" if learn else "127.0.0.42"
    urls = [strict_site.url(host, f"/ok?id=pace&i={i}") for i in range(8)]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(urls) + "\n")
    job = tmp_path / "job"
    results, crawler = await crawl(
        csv,
        tmp_path / "out.jsonl",
        **{**SEQUENTIAL, "DOWNLOAD_DELAY": 0.1},
        URLCHECK_BACKOFF_BASE=0.6,  # a pause the strict host's 0.5 s accepts
        URLCHECK_HOST_PACE_ENABLED=learn,
        JOBDIR=str(job),
    )
    assert len(results) == 8 and all(r["status"] == 200 for r in results)
    rejected = [e for e in strict_site.log() if e["host"] == host and e["rejected"]]
    if learn:
        # 0.1 s -> 429 -> 0.3 s -> 429 -> 0.6 s, then no more.
        assert len(rejected) == 2
        hosts = json.loads((job / "hosts.json").read_text())["hosts"]
        assert hosts[host].pop("backoff_seconds") == pytest.approx(1.2)  # two 0.6 s pauses
        assert hosts[host] == {
            "delay": 0.6,
            "too_fast": 2,
            "unavailable": None,
            "pace": {"bad": 0.3, "good": None, "patience": 0},
        }
        assert crawler.stats.get_value(f"urlcheck/pace/delay/{host}") == 0.6
    else:
        assert len(rejected) == 7  # every row after the first, once each
        hosts = json.loads((job / "hosts.json").read_text())["hosts"]
        # Nothing learned; the host is there for its pauses alone, one per 429.
        assert hosts[host].pop("backoff_seconds") == pytest.approx(4.2)
        assert hosts[host] == {"delay": 0.1, "too_fast": 0, "unavailable": None, "pace": None}


@deferred_f_from_coro_f
async def test_a_new_run_of_the_job_starts_at_the_pace_the_last_one_learned(
    strict_site, tmp_path, caplog
):
    host = "127.0.0.41"
    urls = [strict_site.url(host, f"/ok?id=carried&i={i}") for i in range(14)]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(urls) + "\n")
    job = tmp_path / "job"
    settings = {
        **SEQUENTIAL,
        "DOWNLOAD_DELAY": 0.1,
        "URLCHECK_BACKOFF_BASE": 0.5,
        "URLCHECK_HOST_DELAY_EASE_AFTER": 3,  # probe lower after 3 clean answers, not 20
        "JOBDIR": str(job),
    }

    def rejected() -> int:
        return sum(1 for e in requests_to(strict_site, host, "id=carried") if e["rejected"])

    first, _ = await crawl(csv, tmp_path / "out.jsonl", **settings)
    assert len(first) == 14 and all(r["status"] == 200 for r in first)
    learned = rejected()
    assert learned >= 2  # a fresh start pays 429s to learn the host's pace
    before = json.loads((job / "hosts.json").read_text())["hosts"][host]
    assert before["too_fast"] == learned and before["pace"]["bad"] is not None
    assert before["delay"] > 0.5  # the strict host's limit, found

    # A new run comes later than the host's limit after the last one's last request (a crawl
    # can open again within 0.5 s, and this host counts gaps across runs).
    time.sleep(0.6)
    with caplog.at_level(logging.INFO, logger="urlcheck.extensions.hostreport"):
        second, _ = await crawl(csv, tmp_path / "out.jsonl", **settings)  # the job again
    assert len(second) == 14 and all(r["status"] == 200 for r in second)
    assert rejected() == learned  # not one new 429: it started where the first run ended
    assert f"delays carried over from the job's last run: {host} " in caplog.text
    after = json.loads((job / "hosts.json").read_text())["hosts"][host]
    assert after["too_fast"] == learned  # the job's count
    assert after["delay"] == before["delay"] and after["pace"]["bad"] == before["pace"]["bad"]


# --- 6. answers that must cost nothing ----------------------------------------------------------


def _crawl_in_child(csv: Path, out: Path, *settings: str) -> int:
    """Peak RSS (MiB) of a ``scrapy crawl check`` process, measured by a parent of its own."""
    # (its own JOBDIR: the default job would be in the checkout, the child's directory)
    jobdir = out.with_name(f"{out.stem}-job")
    args = crawl_argv(
        "-a",
        f"csv={csv}",
        "-a",
        f"out={out}",
        settings=["LOG_LEVEL=WARNING", f"JOBDIR={jobdir}", *settings],
    )
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n"
    )
    done = run([sys.executable, "-c", probe, *args], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return int(done.stdout.strip().splitlines()[-1])


def test_slow_hanging_huge_bombs_and_bad_locations_each_get_their_line(site, tmp_path):
    u = site.url
    host = "127.0.0.9"
    long_target = u(host, "/ok?pad=" + "x" * 3000)
    cases = {
        # the two that take seconds have hosts of their own: they wait alongside the rest
        "slow": u("127.0.0.7", "/delay/1.5?id=h"),
        "hang": u("127.0.0.8", "/hang?id=h"),
        "big": u(host, "/big?mb=300&id=h"),
        "chunked": u(host, "/big-chunked?mb=300&id=h"),
        "bomb": u(host, "/gzip-bomb?mb=1024&id=h"),
        "no_location": u(host, "/redirect/301?id=h"),
        "empty_location": u(host, "/redirect/301?to=&id=h"),
        "script_location": u(host, "/redirect/301?to=javascript:alert(1)&id=h"),
        "latin1_location": u(host, "/raw-location/301?hex=2fe9&id=h"),
        "long_location": u(host, f"/redirect/301?to={quote(long_target, safe='')}&id=h"),
        "drop": u(host, "/drop?id=h"),
        "reset": u(host, "/reset?id=h"),
    }
    csv = write_csv(
        tmp_path / "in.csv", "url,id\n" + "".join(f"{url},{k}\n" for k, url in cases.items())
    )
    out = tmp_path / "out.jsonl"
    settings = ("DOWNLOAD_DELAY=0", "DOWNLOAD_TIMEOUT=3", "RETRY_TIMES=0")
    peak = _crawl_in_child(csv, out, *settings, "URLCHECK_HOST_DOWN_AFTER=0")
    rows = {r["input"]["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(rows) == sorted(cases)
    assert rows["slow"]["status"] == 200 and rows["slow"]["chain"][0]["ms"] >= 1500
    assert rows["hang"]["error"] == "timeout"
    for name in ("big", "chunked", "bomb"):
        assert (rows[name]["status"], rows[name]["error"]) == (200, None), rows[name]
    for name in ("no_location", "empty_location"):
        assert rows[name]["error"] == "bad_location" and rows[name]["status"] == 301
    assert rows["script_location"]["error"] == "unsupported_scheme"
    assert rows["latin1_location"]["status"] == 301 and rows["latin1_location"]["hops"] == 1
    # A 3,000-character Location is well within what browsers follow.
    assert rows["long_location"]["final_status"] == 200, rows["long_location"]
    assert rows["drop"]["error"] == "connection_lost" and rows["reset"]["error"] is not None
    # 300 MB bodies and a 1 GiB bomb are never held: measured 85 MB before issue 10.
    assert peak < 200, f"peak RSS {peak} MiB"


# --- 4. no row is ever dropped ------------------------------------------------------------------


class IgnoreSomeRequests:
    """A downloader middleware of someone's project that refuses some requests."""

    def process_request(self, request):
        if "ignore-me" in request.url:
            raise IgnoreRequest("refused by a project middleware")


class DropSomeLines:
    """An item pipeline that loses a row's line: the end-of-run check must say so."""

    def process_item(self, item):
        if item.row == 2:
            raise DropItem("lost on purpose")
        return item


class CheckSpiderWithABug(CheckSpider):
    name = "check_with_a_bug"

    def parse_hop(self, response):
        if "/ok?bug" in response.url:
            raise ValueError("a bug in the callback")
        return super().parse_hop(response)


def _growing_location(site, tag: str) -> tuple[str, str]:
    """A row of about 2,070 characters whose Location resolves to about 3,030: 1,000 latin-1
    bytes, sent as hex (2 characters each), become %E9 (3 each) in the resolved URL."""
    location = b"/ok?pad=" + b"\xe9" * 1000
    row = site.url("127.0.0.4", f"/raw-location/301?id={tag}&hex={location.hex()}")
    target = site.url("127.0.0.4", "/ok?pad=" + "%E9" * 1000)
    return row, target


@deferred_f_from_coro_f
async def test_an_over_long_location_ends_its_row_with_url_too_long(site, tmp_path):
    long_row, long_target = _growing_location(site, "long")
    rows = [
        long_row,
        site.url("127.0.0.4", "/ok?id=long"),
        site.url("127.0.0.4", "/ok?id=long&pad=" + "y" * 2600),
    ]
    assert len(long_row) < 2500 < len(long_target)
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    results, crawler = await crawl(
        csv, tmp_path / "out.jsonl", **SEQUENTIAL, URLCHECK_MAX_URL_LENGTH=2500
    )
    rows = by_row(results)
    assert sorted(rows) == [1, 2, 3]
    assert rows[1]["error"] == "url_too_long" and rows[1]["status"] == 301
    assert rows[1]["chain"][0]["location"] == long_target  # the Location is kept
    assert rows[1]["error_message"] == (
        f"URL of {len(long_target):,} characters, over 2,500 (URLCHECK_MAX_URL_LENGTH): "
        "not requested"
    )
    assert rows[2]["status"] == 200
    # An input row over the limit gets its line without a request.
    assert rows[3]["error"] == "url_too_long" and rows[3]["status"] is None
    assert not [e for e in site.log() if "pad=yyy" in e["path"]]
    assert crawler.stats.get_value("urlcheck/rows_missing") is None


@deferred_f_from_coro_f
async def test_a_request_dropped_by_a_component_still_ends_its_row(site, tmp_path):
    # Scrapy's own UrlLengthMiddleware, switched back on by a user, drops the over-long hop
    # without an answer or an error: the row is found open when nothing is in flight.
    long_row, long_target = _growing_location(site, "drop")
    rows = [long_row, site.url("127.0.0.4", "/ok?id=drop")]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    results, crawler = await crawl(csv, tmp_path / "out.jsonl", **SEQUENTIAL, URLLENGTH_LIMIT=2083)
    rows = by_row(results)
    assert sorted(rows) == [1, 2]
    assert rows[1]["error"] == "ignored" and rows[1]["status"] == 301
    assert [h.get("error") for h in rows[1]["chain"]] == [None, "ignored"]
    assert rows[1]["chain"][1]["url"] == long_target
    assert rows[2]["status"] == 200
    assert crawler.stats.get_value("urlcheck/rows_missing") is None


@deferred_f_from_coro_f
async def test_ignored_robots_and_callback_errors_get_their_lines(site, tmp_path, caplog):
    u = site.url
    rows = [
        u("127.0.0.3", "/ok?id=ignore-me"),
        u("127.0.0.3", "/robots-disallowed/page?id=robots"),
        u("127.0.0.3", "/redirect/301?to=/ok%3Fbug%3D1&id=bug"),
        u("127.0.0.3", "/ok?id=fine"),
    ]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    out = tmp_path / "out.jsonl"
    runner = AsyncCrawlerRunner(
        project_settings(
            **SEQUENTIAL,
            ROBOTSTXT_OBEY=True,
            DOWNLOADER_MIDDLEWARES={"tests.politeness.test_hostile.IgnoreSomeRequests": 500},
        )
    )
    crawler = runner.create_crawler(CheckSpiderWithABug)
    with caplog.at_level(logging.ERROR):
        await runner.crawl(crawler, csv=str(csv), out=str(out))
    rows = by_row([json.loads(line) for line in out.read_text().splitlines()])
    assert sorted(rows) == [1, 2, 3, 4]
    assert rows[1]["error"] == "ignored"
    assert rows[1]["error_message"] == "refused by a project middleware"
    assert rows[2]["error"] == "robots_disallowed" and rows[2]["status"] is None
    assert rows[3]["error"] == "internal_error" and rows[3]["hops"] == 1
    assert rows[3]["chain"][-1]["status"] == 200
    assert "ValueError: a bug in the callback" in rows[3]["error_message"]
    assert rows[4]["status"] == 200 and rows[4]["error"] is None
    assert any("Internal error while handling" in r.message for r in caplog.records)
    assert crawler.stats.get_value("urlcheck/internal_errors") == 1


@deferred_f_from_coro_f
async def test_a_row_without_its_line_is_an_error_and_a_non_zero_exit(site, tmp_path, caplog):
    rows = [site.url("127.0.0.3", f"/ok?id=gap&i={i}") for i in range(3)]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    with caplog.at_level(logging.ERROR):
        results, crawler = await crawl(
            csv,
            tmp_path / "out.jsonl",
            **SEQUENTIAL,
            ITEM_PIPELINES={
                "tests.politeness.test_hostile.DropSomeLines": 100,
                "urlcheck.pipelines.ResultsPipeline": 300,
            },
        )
    assert sorted(r["row"] for r in results) == [1, 3]
    assert crawler.stats.get_value("urlcheck/rows_missing") == 1
    [record] = [r for r in caplog.records if "have no result line" in r.message]
    assert record.levelno == logging.ERROR and "(rows 2)" in record.message
    assert exit_code(crawler) == ExitCode.ROWS_MISSING
