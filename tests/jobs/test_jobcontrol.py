"""JobControl in real crawls against a local HTTP server (127.0.0.2, port 0, in a thread)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request, Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from urlcheck.check.result import Result
from urlcheck.clock import parse_utc_iso
from urlcheck.config.crawlconfig import ConfigError, JobControlConfig
from urlcheck.crawl.runtime import runtime
from urlcheck.extensions.jobcontrol import JobControl
from urlcheck.jobs.context import JobContext
from urlcheck.jobs.done import DoneRows
from urlcheck.jobs.exitcodes import ExitCode, exit_code_for
from urlcheck.jobs.files import ControlAction, JobMeta, JobState, write_control
from urlcheck.jobs.lock import JobLock, lock_holder
from urlcheck.jobs.resultsfile import ResultsPlan
from urlcheck.jobs.steer import steer
from urlcheck.signals import wait_while_paused

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

EXTENSION = "urlcheck.extensions.jobcontrol.JobControl"


class Site:
    """Answers every GET with 200 after ``delay`` seconds and remembers when each arrived."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.arrivals: list[float] = []
        self._lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with site._lock:
                    site.arrivals.append(time.monotonic())
                time.sleep(site.delay)
                body = b"ok"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.2:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def hits(self) -> int:
        with self._lock:
            return len(self.arrivals)


@pytest.fixture
def site() -> Iterator[Site]:
    server = Site(delay=0.05)
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()
        server.thread.join(timeout=10)


class JobSpider(Spider):
    name = "jobtest"

    def __init__(
        self,
        base: str,
        rows: int,
        jobdir: Path,
        lazy: bool = False,
        paused_hosts: Callable[[], list[tuple[str, int, float]]] | None = None,
        lock: JobLock | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.base, self.rows, self.jobdir, self.lazy = base, rows, jobdir, lazy
        self.paused_hosts = paused_hosts or list
        self.lock = lock
        self.yielded = 0

    async def start(self) -> AsyncIterator[Any]:
        # Where the real ResultsPipeline writes; JobControl counts what it wrote.
        runtime(self.crawler).results = ResultsPlan(self.jobdir / "results.jsonl", DoneRows())
        runtime(self.crawler).job_context = JobContext(
            jobdir=self.jobdir,
            results_path=self.jobdir / "results.jsonl",
            input_path=self.jobdir / "in.csv",
            input_checksum="c" * 64,
            total_rows=self.rows,
            done_rows=0,
            user_agent="jobtest",
            paused_hosts=self.paused_hosts,
            lock=self.lock,
        )
        for row in range(1, self.rows + 1):
            if self.lazy:
                # Lazy by polling needs_backout(), which a paused engine does not set: without
                # wait_while_paused this loop would feed every row into the scheduler.
                await wait_while_paused(self.crawler)
                while self.crawler.engine.needs_backout():
                    await asyncio.sleep(0.01)
            self.yielded += 1
            yield Request(f"{self.base}/row/{row}", cb_kwargs={"row": row}, dont_filter=True)

    def parse(self, response: Response, row: int) -> Iterator[Result]:
        yield Result.from_dict(
            {
                "row": row,
                "url": response.url,
                "status": response.status,
                "final_status": response.status,
                "verdict": "pass" if row % 2 else None,
            }
        )


def make_crawler(jobdir: Path, **settings: Any) -> Crawler:
    return get_crawler(
        JobSpider,
        {
            "JOBDIR": str(jobdir),
            "EXTENSIONS": {EXTENSION: 0},
            "ITEM_PIPELINES": {"urlcheck.pipelines.ResultsPipeline": 300},
            "CONCURRENT_REQUESTS": 2,
            "DOWNLOAD_DELAY": 0,
            "LOG_LEVEL": "INFO",
            **settings,
        },
    )


class Items:
    def __init__(self, crawler: Crawler) -> None:
        self.rows: list[int] = []
        crawler.signals.connect(self.scraped, signal=signals.item_scraped)

    def scraped(self, item: Result) -> None:
        self.rows.append(item.row)


async def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> float:
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)
    return time.monotonic() - started


def load(jobdir: Path) -> JobMeta:
    meta = JobMeta.load(jobdir)
    assert meta is not None
    return meta


def command(action: str, jobdir: Path, **kwargs: Any) -> tuple[ExitCode, str]:
    out, err = io.StringIO(), io.StringIO()
    code = steer(action, jobdir, out=out, err=err, **kwargs)
    return code, out.getvalue() + err.getvalue()


# --- configuration ---------------------------------------------------------------------------


def test_config_defaults_and_validation() -> None:
    assert JobControlConfig.from_settings(Settings()) == JobControlConfig(
        0.5, 2.0, 30.0, 180.0, 5.0
    )
    config = JobControlConfig.from_settings(Settings({"URLCHECK_JOB_POLL_INTERVAL": "0.25"}))
    assert config.poll_interval == 0.25
    for name, value, message in (
        (
            "URLCHECK_JOB_POLL_INTERVAL",
            "fast",
            "setting URLCHECK_JOB_POLL_INTERVAL: expected a number, got 'fast'",
        ),
        (
            "URLCHECK_JOB_POLL_INTERVAL",
            0,
            "setting URLCHECK_JOB_POLL_INTERVAL: expected a number of seconds > 0, got 0.0",
        ),
        (
            "URLCHECK_JOB_HEARTBEAT_INTERVAL",
            "inf",
            "setting URLCHECK_JOB_HEARTBEAT_INTERVAL: expected a number of seconds > 0, got inf",
        ),
        (
            "URLCHECK_JOB_HEARTBEAT_INTERVAL",
            180,
            "setting URLCHECK_JOB_HEARTBEAT_INTERVAL: must be below URLCHECK_JOB_STUCK_AFTER "
            "(180 s)",
        ),
    ):
        with pytest.raises(ConfigError) as caught:
            JobControlConfig.from_settings(Settings({name: value}))
        assert str(caught.value).startswith(message)


def test_off_without_jobdir() -> None:
    # Without a message: a crawl without a job is not a mistake worth a warning.
    with pytest.raises(NotConfigured) as caught:
        JobControl.from_crawler(get_crawler(JobSpider))
    assert caught.value.args == ()


# --- crawls ----------------------------------------------------------------------------------


@deferred_f_from_coro_f
async def test_a_finished_run(site: Site, tmp_path: Path) -> None:
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    JobMeta(state=JobState.PAUSED, created_at="2020-01-01T00:00:00.000Z").save(jobdir)
    lock = JobLock(jobdir)
    lock.acquire()
    crawler = make_crawler(jobdir)
    await crawler.crawl_async(base=site.base, rows=10, jobdir=jobdir, lock=lock)
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    meta = load(jobdir)
    assert meta.state is JobState.DONE
    assert (meta.done_rows, meta.total_rows) == (10, 10)
    assert meta.counts.by_status["2xx"] == 10
    assert meta.counts.by_verdict == {"pass": 5, "fail": 0, "none": 5}
    assert meta.created_at == "2020-01-01T00:00:00.000Z"  # kept from the job's first run
    assert meta.started_at and meta.finished_at and meta.last_activity_at
    assert parse_utc_iso(meta.started_at) <= parse_utc_iso(meta.finished_at)
    assert meta.finish_reason == "finished"
    assert meta.user_agent == "jobtest"
    # Effective values, defaults included: never null for a default.
    assert meta.settings["URLCHECK_METHOD"] == "GET" and meta.settings["URLCHECK_MAX_HOPS"] == 10
    assert meta.settings["URLCHECK_BACKOFF_BASE"] == 30.0
    assert meta.settings["DOWNLOAD_DELAY"] == 0.0 and meta.settings["COOKIES_ENABLED"] is True
    assert meta.results_bytes == (jobdir / "results.jsonl").stat().st_size
    assert meta.input_sha256 == "c" * 64
    assert meta.backoff_hosts == []
    assert exit_code_for(meta) is ExitCode.FINISHED
    assert crawler.stats.get_value("urlcheck/job/state") == "done"
    assert not lock.held and lock_holder(jobdir) is None  # released after the last write


@deferred_f_from_coro_f
async def test_pause_and_resume_with_the_job_command(site: Site, tmp_path: Path) -> None:
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    lock = JobLock(jobdir)
    lock.acquire()  # the job command only talks to a job some process is running
    crawler = make_crawler(jobdir)
    items = Items(crawler)
    crawl = asyncio.ensure_future(
        crawler.crawl_async(base=site.base, rows=40, jobdir=jobdir, lock=lock)
    )
    await wait_until(lambda: len(items.rows) >= 5)

    code, said = await asyncio.to_thread(command, "pause", jobdir)
    assert code is ExitCode.FINISHED, said
    assert "paused" in said  # confirmed by the crawl, not just requested
    assert crawler.engine.paused
    assert load(jobdir).state is JobState.PAUSED
    await asyncio.sleep(0.4)  # requests in flight finish...
    hits, done = site.hits, len(items.rows)
    await asyncio.sleep(1.2)  # ...and nothing new starts
    assert (site.hits, len(items.rows)) == (hits, done)
    assert done < 40
    _, status = await asyncio.to_thread(command, "status", jobdir, as_json=True)
    data = json.loads(status)
    assert (data["state"], data["stuck"], data["running"]) == ("paused", False, True)

    code, said = await asyncio.to_thread(command, "resume", jobdir)
    assert code is ExitCode.FINISHED and "processing" in said, said
    await wait_until(lambda: site.hits > hits, timeout=5.0)
    await crawl
    assert sorted(items.rows) == list(range(1, 41))
    meta = load(jobdir)
    assert (meta.state, meta.done_rows) == (JobState.DONE, 40)
    assert crawler.stats is not None
    assert crawler.stats.get_value("urlcheck/job/control/pause") == 1
    assert crawler.stats.get_value("urlcheck/job/control/resume") == 1


@deferred_f_from_coro_f
async def test_cancel(site: Site, tmp_path: Path) -> None:
    jobdir = tmp_path / "job"
    crawler = make_crawler(jobdir)
    items = Items(crawler)
    crawl = asyncio.ensure_future(crawler.crawl_async(base=site.base, rows=40, jobdir=jobdir))
    await wait_until(lambda: len(items.rows) >= 5)
    write_control(jobdir, ControlAction.CANCEL)
    await wait_until(crawl.done, timeout=5.0)
    await crawl
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "cancelled"
    meta = load(jobdir)
    assert meta.state is JobState.CANCELLED
    assert meta.finish_reason == "cancelled" and meta.finished_at is not None
    assert meta.done_rows == len(items.rows) < 40
    assert exit_code_for(meta) is ExitCode.CANCELLED


@deferred_f_from_coro_f
async def test_a_control_file_from_before_the_run_is_ignored(site: Site, tmp_path: Path) -> None:
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    write_control(jobdir, ControlAction.CANCEL)  # what ended the previous run
    crawler = make_crawler(jobdir)
    await crawler.crawl_async(base=site.base, rows=5, jobdir=jobdir)
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert load(jobdir).state is JobState.DONE


@deferred_f_from_coro_f
async def test_a_control_sent_once_the_run_holds_the_job_is_obeyed(
    site: Site, tmp_path: Path
) -> None:
    """`scrapy job pause` sees the lock held from the moment a crawl takes it: a request sent
    before that crawl's spider opens (its start-up, 1-2 s) is for it, not history. A cancel
    written before the lock was taken stays history (the test above)."""
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    write_control(jobdir, ControlAction.PAUSE, clock=lambda: time.time() - 60)  # last run's
    with JobLock(jobdir):  # what preflight takes before the crawl starts
        write_control(jobdir, ControlAction.CANCEL)
        crawler = make_crawler(jobdir)
        await crawler.crawl_async(base=site.base, rows=40, jobdir=jobdir)
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "cancelled"


@deferred_f_from_coro_f
async def test_a_lazy_start_waits_while_paused(site: Site, tmp_path: Path) -> None:
    site.delay = 0.005
    jobdir = tmp_path / "job"
    crawler = make_crawler(jobdir)
    items = Items(crawler)
    crawl = asyncio.ensure_future(
        crawler.crawl_async(base=site.base, rows=300, jobdir=jobdir, lazy=True)
    )
    await wait_until(lambda: len(items.rows) >= 3)
    write_control(jobdir, ControlAction.PAUSE)
    await wait_until(lambda: crawler.engine.paused, timeout=5.0)
    await asyncio.sleep(0.4)
    spider = crawler.spider
    assert isinstance(spider, JobSpider)
    yielded = spider.yielded
    assert yielded < 100
    await asyncio.sleep(1.0)
    assert spider.yielded == yielded  # start() is not drained into the scheduler while paused
    write_control(jobdir, ControlAction.RESUME)
    await crawl
    assert sorted(items.rows) == list(range(1, 301))


@deferred_f_from_coro_f
async def test_heartbeat_progress_and_back_off(
    site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    jobdir = tmp_path / "job"
    backoff: list[tuple[str, int, float]] = []
    crawler = make_crawler(
        jobdir,
        URLCHECK_JOB_HEARTBEAT_INTERVAL=0.2,
        URLCHECK_PROGRESS_INTERVAL=0.2,
        URLCHECK_JOB_POLL_INTERVAL=0.1,
        EXTENSIONS={EXTENSION: 0, "urlcheck.extensions.progress.Progress": 0},
        URLCHECK_JOB_STATUS_INTERVAL=0.1,
    )
    items = Items(crawler)
    caplog.set_level(logging.INFO, logger="urlcheck.extensions.jobcontrol")
    caplog.set_level(logging.INFO, logger="urlcheck.extensions.progress")
    crawl = asyncio.ensure_future(
        crawler.crawl_async(
            base=site.base, rows=30, jobdir=jobdir, paused_hosts=lambda: list(backoff)
        )
    )
    await wait_until(lambda: len(items.rows) >= 3)

    # while responses arrive, last_activity_at keeps moving
    first = load(jobdir).last_activity_at
    await wait_until(lambda: load(jobdir).last_activity_at != first, timeout=5.0)

    # paused and nothing in back-off: silence, last_activity_at stays put
    write_control(jobdir, ControlAction.PAUSE)
    await wait_until(lambda: load(jobdir).state is JobState.PAUSED, timeout=5.0)
    await asyncio.sleep(0.4)
    quiet = load(jobdir).last_activity_at
    await asyncio.sleep(0.6)
    assert load(jobdir).last_activity_at == quiet

    # a host in back-off keeps the heartbeat going and is reported
    backoff.append(("slow.example", 2, 42.04))
    await wait_until(lambda: load(jobdir).last_activity_at != quiet, timeout=5.0)
    hosts = [h.to_dict() for h in load(jobdir).backoff_hosts]
    assert hosts == [{"host": "slow.example", "attempt": 2, "seconds_left": 42.0}]
    await wait_until(
        lambda: any("0 active, 1 in back-off; paused" in m for m in caplog.messages), timeout=5.0
    )
    backoff.clear()

    write_control(jobdir, ControlAction.RESUME)
    await crawl
    meta = load(jobdir)
    assert meta.state is JobState.DONE and meta.backoff_hosts == []
    progress = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Progress:")]
    assert progress, "no progress line was logged"
    assert any("/30 rows" in line and "rows/min" in line and "ETA" in line for line in progress)
    assert crawler.stats is not None
    assert crawler.stats.get_value("urlcheck/job/meta_writes") > 5


@deferred_f_from_coro_f
async def test_cancel_while_paused(site: Site, tmp_path: Path) -> None:
    jobdir = tmp_path / "job"
    crawler = make_crawler(jobdir)
    items = Items(crawler)
    crawl = asyncio.ensure_future(
        crawler.crawl_async(base=site.base, rows=100, jobdir=jobdir, lazy=True)
    )
    await wait_until(lambda: len(items.rows) >= 3)
    write_control(jobdir, ControlAction.PAUSE)
    await wait_until(lambda: load(jobdir).state is JobState.PAUSED, timeout=5.0)
    write_control(jobdir, ControlAction.CANCEL)
    await wait_until(crawl.done, timeout=5.0)  # start() waiting in wait_while_paused: no hang
    await crawl
    assert crawler.stats is not None
    assert crawler.stats.get_value("finish_reason") == "cancelled"
    meta = load(jobdir)
    assert (meta.state, meta.done_rows) == (JobState.CANCELLED, len(items.rows))
    assert meta.done_rows < 100
