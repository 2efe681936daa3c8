"""Live status end to end: meta.json follows a real crawl within a couple of seconds, records
the effective settings, and ``scrapy job status`` is exact after a ``kill -9`` even when
meta.json was far behind (issue 16 point 2)."""

from __future__ import annotations

import io
import json
import signal
import time
from typing import TYPE_CHECKING

import pytest

from tests.jobs.crawls import (
    Crawl,
    assert_no_duplicates,
    make_csv,
    read_results,
)
from tests.processes import scrapy_job
from urlcheck.clock import boot_id
from urlcheck.jobs import steer
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import JobMeta

if TYPE_CHECKING:
    from pathlib import Path

    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl


def wait_meta(jobdir: Path, done: int, timeout: float) -> JobMeta:
    deadline = time.monotonic() + timeout
    while True:
        meta = JobMeta.load(jobdir)
        if meta is not None and meta.done_rows >= done:
            return meta
        assert time.monotonic() < deadline, f"meta.json still behind {done} rows: {meta}"
        time.sleep(0.05)


def test_meta_follows_the_crawl_and_records_effective_settings(
    tmp_path: Path, site: SiteServer
) -> None:
    rows = 80
    csv = make_csv(tmp_path / "in.csv", site, "live", rows)
    jobdir = tmp_path / "job"
    crawl = Crawl(csv, jobdir)
    crawl.wait_lines(8)
    # The old 30 s heartbeat would leave 0 done here; the 2 s rewrite catches up well before.
    meta = wait_meta(jobdir, 8, timeout=15.0)
    assert meta.rate is not None and meta.results_bytes > 0
    assert meta.settings["URLCHECK_MAX_HOPS"] == 10
    assert meta.settings["URLCHECK_BACKOFF_BASE"] == 30.0
    assert meta.settings["DOWNLOAD_DELAY"] == 0.05  # -s DOWNLOAD_DELAY=0.05
    assert None not in (meta.settings[name] for name in ("URLCHECK_METHOD", "ROBOTSTXT_OBEY"))
    assert meta.stuck_after == 180.0
    # The heartbeat's moment on this boot's monotonic clock goes with its wall time ...
    assert meta.boot_id == boot_id() and meta.last_activity_monotonic is not None
    assert 0 <= time.monotonic() - meta.last_activity_monotonic < 60
    # ... so a wall clock stepped 10 minutes forward (NTP, an administrator) in the process
    # that asks leaves the healthy crawl healthy (issue 22 point 11).
    out = io.StringIO()
    steer("status", jobdir, as_json=True, clock=lambda: time.time() + 600, out=out)
    status = json.loads(out.getvalue())
    assert status["state"] == "processing" and status["stuck"] is False, status
    assert status["seconds_since_activity"] < 60
    assert crawl.wait() == ExitCode.FINISHED, crawl.stderr()[-3000:]
    meta = JobMeta.load(jobdir)
    assert meta is not None and meta.done_rows == rows
    assert meta.results_bytes == (jobdir / "results.jsonl").stat().st_size
    # Every setting that shapes results or pace, as this run used it: exactly these.
    assert meta.settings == {
        "URLCHECK_METHOD": "GET",
        "URLCHECK_MAX_HOPS": 10,
        "URLCHECK_FOLLOW_META_REFRESH": False,
        "URLCHECK_VERDICT_IGNORE_TRAILING_SLASH": True,
        "URLCHECK_TEMPORARY_REDIRECT": "fail",
        "URLCHECK_MAX_CHAIN_HOPS": None,
        # the audit's checks (docs/urls-and-verdicts.md section 9), each at its default
        "URLCHECK_CHECK_REDIRECT_TO_HOME": "fail",
        "URLCHECK_CHECK_MANY_TO_ONE": "warn",
        "URLCHECK_CHECK_REDIRECT_CHAIN": "warn",
        "URLCHECK_CHECK_TEMPORARY_REDIRECT_IN_CHAIN": "warn",
        "URLCHECK_CHECK_HTTPS_DOWNGRADE": "fail",
        "URLCHECK_CHECK_HOST_ROUND_TRIP": "warn",
        "URLCHECK_CHECK_NOINDEX": "fail",
        "URLCHECK_CHECK_CANONICAL_MISMATCH": "fail",
        "URLCHECK_CHECK_NOFOLLOW": "warn",
        "URLCHECK_CHECK_TLS_CERTIFICATE_INVALID": "fail",
        "URLCHECK_MANY_TO_ONE_ROWS": 10,
        "URLCHECK_MANY_TO_ONE_SHARE": 50.0,
        "URLCHECK_TLS": "check",
        "URLCHECK_BACKOFF_BASE": 30.0,
        "URLCHECK_BACKOFF_MAX": 300.0,
        "URLCHECK_BACKOFF_RETRIES": 3,
        "URLCHECK_BACKOFF_HTTP_CODES": [429, 503],
        "COOKIES_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "CONCURRENT_REQUESTS": 5,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0.05,
        "DOWNLOAD_TIMEOUT": 20.0,
        "RETRY_TIMES": 2,
        "URLCHECK_JOB_STUCK_AFTER": 180.0,
        "URLCHECK_HEADERS": {},
        "URLCHECK_COOKIES": {},
        "URLCHECK_AUTH": [],
    }


def test_status_is_exact_after_kill_9_with_meta_behind(tmp_path: Path, site: SiteServer) -> None:
    rows = 80
    csv = make_csv(tmp_path / "in.csv", site, "kill9", rows)
    jobdir = tmp_path / "job"
    # meta.json is written once at the start and then never again before the kill.
    crawl = Crawl(
        csv,
        jobdir,
        "URLCHECK_JOB_STATUS_INTERVAL=3600",
        "URLCHECK_JOB_HEARTBEAT_INTERVAL=3000",
        "URLCHECK_JOB_STUCK_AFTER=3500",
    )
    crawl.wait_lines(25)
    crawl.signal(signal.SIGKILL)
    crawl.wait()
    on_disk = JobMeta.load(jobdir)
    assert on_disk is not None
    results = read_results(jobdir / "results.jsonl")
    assert_no_duplicates(results)
    assert on_disk.done_rows < len(results)  # meta.json really is behind

    status = scrapy_job("status", str(jobdir), "--json")
    assert status.returncode == ExitCode.FINISHED, status.stderr
    report = json.loads(status.stdout)
    assert report["done_rows"] == len(results)
    by_class: dict[str, int] = {}
    for result in results:
        key = "error" if result["final_status"] is None else f"{result['final_status'] // 100}xx"
        by_class[key] = by_class.get(key, 0) + 1
    assert {k: v for k, v in report["counts"]["status"].items() if v} == by_class
    assert report["running"] is False and report["state"] == "processing"
    assert report["stuck"] is False  # its threshold, 3500 s, recorded in meta.json

    text = scrapy_job("status", str(jobdir))
    assert f"{len(results)} / {rows}" in text.stdout, text.stdout
