"""The coordinator: the one process of a distributed job that reads the CSV and writes
results.jsonl (it also checks URLs, like any worker).

* Feeding: the spider's Source and HostFeeder, as in one process (a few rows ahead per host,
  bounded overall), through the crawl runtime's ``feed_rows`` hook; a row counts as open until
  its result is on disk here.
* Collecting: committed results come from the Redis stream; each line is appended unless its
  row is already in results.jsonl, synced, then acknowledged (:mod:`urlcheck.cluster.collector`).
  Each line is then reported as ``item_scraped``, so meta.json, the summary and the exit code
  count every row once, whichever process checked it.
* Writing: results.jsonl is held and written as in one process
  (:class:`~urlcheck.jobs.resultswriter.ResultsWriter`: another job pointed at it is refused).
  A write or sync that fails (a full disk) stops the crawl as it stops one process
  (:mod:`urlcheck.crawl.writefailure`): the lines not synced are cut off and their entries are
  not acknowledged, so Redis hands them out again on the next run; nothing more is written.
* Repair: when Redis has lost the job (restarted empty) it is opened again and every open row is
  queued again; a periodic audit re-queues open rows that are nowhere in Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from urlcheck.check.result import Result
from urlcheck.check.urls import host_key, redacted
from urlcheck.cluster.admin import coordinator_place
from urlcheck.cluster.collector import ResultCollector
from urlcheck.cluster.crawl.runtime import ClusterRuntime
from urlcheck.cluster.crawl.tasks import task_from_row
from urlcheck.cluster.errors import ClusterError
from urlcheck.crawl import internals
from urlcheck.crawl.runtime import runtime
from urlcheck.crawl.writefailure import write_failed
from urlcheck.jobs.files import CLUSTER_FILE, atomic_write_json
from urlcheck.jobs.resultswriter import ResultsWriter
from urlcheck.signals import job_paused, job_resumed

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

    from urlcheck.cluster.task import Task
    from urlcheck.input.feeder import HostFeeder, RowRef
    from urlcheck.input.kind import Source

logger = logging.getLogger(__name__)

T = TypeVar("T")

_PUSH_BATCH = 100
_AUDIT_EVERY = 5.0


def has_bit(bitmap: bytes, row: int) -> bool:
    index = row >> 3
    return index < len(bitmap) and bool(bitmap[index] & (0x80 >> (row & 7)))


class Coordinator:
    def __init__(self, crawler: Crawler, runtime: ClusterRuntime) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.source: Source | None = None
        self.feeder: HostFeeder | None = None
        self.collector: ResultCollector | None = None
        self.outstanding: dict[int, RowRef] = {}  # rows queued in Redis, result not on disk
        self.fed_all = False
        self.place = coordinator_place(crawler.settings.get("JOBDIR"))
        self._writer: ResultsWriter | None = None
        self._unsynced: list[tuple[int, dict[str, Any]]] = []  # written, reported once synced
        self._room: asyncio.Event | None = None
        self._last_written = time.monotonic()
        self._last_audit = time.monotonic()
        self._error_logged = False
        self._next_collect = 0.0
        self._idle_ticks = 0

    # --- opening ---------------------------------------------------------------------------------

    def open(self) -> None:
        job = self.runtime.job
        try:
            status = job.status()
            if status.status in ("done", "cancelled") or status.control == "cancelled":
                # A new run of a finished or cancelled job: results.jsonl says what is left.
                job.clean()
            if job.open(self.runtime.owner, place=self.place):
                logger.info("Job %r opened in Redis", job.job)
        except ClusterError as exc:
            logger.warning(
                "Redis: cannot open job %r yet (%s); retrying while feeding", job.job, exc
            )
        jobdir = self.crawler.settings.get("JOBDIR")
        if jobdir:
            path = Path(jobdir)
            path.mkdir(parents=True, exist_ok=True)
            atomic_write_json(
                path / CLUSTER_FILE,
                {"job": job.job, "redis_url": redacted(self.runtime.config.redis_url)},
            )

    # --- feeding ---------------------------------------------------------------------------------

    async def feed(self, source: Source, feeder: HostFeeder) -> None:
        """Queue every open row in Redis, a few ahead per host; returns when all are queued."""
        self.source, self.feeder = source, feeder
        results = runtime(self.crawler).results
        assert results is not None
        try:
            self._writer = ResultsWriter.open(results.path)
        except OSError as exc:  # another job's crawl holds it, or no room
            write_failed(self.crawler, results.path, exc)
            return
        self.collector = ResultCollector(self.runtime.job, results.done, self._write, self._sync)
        self._room = asyncio.Event()
        job = self.runtime.job
        await self._retrying(lambda: job.open(self.runtime.owner, place=self.place))
        fed = await self._retrying(job.fed_rows)
        while not feeder.exhausted:
            if self._stopping():  # a write failed: the rows left are the next run's
                return
            refs: list[RowRef] = []
            while len(refs) < _PUSH_BATCH and (ref := feeder.take()) is not None:
                if has_bit(fed, ref.row):  # queued by an earlier coordinator run
                    self.outstanding[ref.row] = ref
                else:
                    refs.append(ref)
            if refs:
                await self._retrying(
                    partial(self.runtime.frontier.push, list(map(self._task, refs)))
                )
                for ref in refs:
                    self.outstanding[ref.row] = ref
            elif not feeder.exhausted:
                self._room.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._room.wait(), timeout=0.5)
        self.fed_all = True
        logger.info("Coordinator: every row is queued; %d open", len(self.outstanding))
        self._check_done()

    def _task(self, ref: RowRef) -> tuple[str, Task]:
        assert self.source is not None
        row_task = self.runtime.requests.task(self.source.read_at(ref.offset, ref.row), ref.host_id)
        from_site = runtime(self.crawler).row_after_public
        task = task_from_row(
            row_task,
            self.runtime.requests.method,
            after_public=from_site is not None and from_site(ref.row),
        )
        return host_key(task.target), task

    async def _retrying(self, call: Callable[[], T]) -> T:
        while True:
            try:
                result = call()
            except ClusterError as exc:
                self._log_error(exc)
                await asyncio.sleep(1.0)
                continue
            self._error_logged = False
            return result

    # --- collecting ------------------------------------------------------------------------------

    def collect(self, *, force: bool = False) -> None:
        if self.collector is None or self._stopping():
            return
        now = time.monotonic()
        if now < self._next_collect and not force:
            return
        try:
            for _ in range(20):
                step = self.collector.step()
                if step.gone:
                    self._reopen()
                    return
                if len(step.written) + step.duplicates < self.collector.batch:
                    break
            # Nothing came in: look again less often (up to 1 s), to save round trips.
            idle = not step.written and not step.duplicates
            self._idle_ticks = self._idle_ticks + 1 if idle else 0
            self._next_collect = now + min(
                self._idle_ticks * self.runtime.config.collect_interval, 2.0
            )
            self._audit()
        except ClusterError as exc:
            self._log_error(exc)
            return
        except OSError as exc:
            self._write_failed(exc)
            return
        self._error_logged = False
        self._check_done()

    def _stopping(self) -> bool:
        """A write failed (here, or of a job file): nothing more is written."""
        return runtime(self.crawler).write_failure is not None

    def _write_failed(self, exc: OSError) -> None:
        """Undo what was not synced (the step's entries stay unacknowledged, so they are handed
        out again on the next run) and stop the crawl."""
        assert self._writer is not None
        self._writer.drop_unsynced()
        self._unsynced = []
        write_failed(self.crawler, self._writer.path, exc)
        if self._room is not None:
            self._room.set()  # the feeding loop sees the stop at once

    def _write(self, row: int, line: str) -> None:
        assert self._writer is not None
        try:
            data: Any = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict) or data.get("row") != row:
            logger.error("Results stream: entry for row %d is not a result line: %.200r", row, line)
            return
        self._writer.write(line.encode("utf-8") + b"\n")
        self._unsynced.append((row, data))

    def _sync(self) -> None:
        """Make the step's lines durable, then count their rows done (raises OSError)."""
        assert self._writer is not None
        self._writer.sync()
        written, self._unsynced = self._unsynced, []
        self._last_written = time.monotonic()
        for row, data in written:
            ref = self.outstanding.pop(row, None)
            if ref is not None and self.feeder is not None:
                self.feeder.done(ref.host_id)
            self.crawler.signals.send_catch_log(
                signal=signals.item_scraped,
                item=Result.from_dict(data),
                response=None,
                spider=self.crawler.spider,
            )
        if written and self._room is not None:
            self._room.set()

    def _reopen(self) -> None:
        assert self.collector is not None
        job = self.runtime.job
        job.open(self.runtime.owner, hold=self.runtime.config.lease_ttl, place=self.place)
        self.collector.restart()
        count = self._requeue()
        logger.warning(
            "Redis had lost job %r (restarted empty?): opened it again and queued its %d open "
            "rows again; results.jsonl keeps every row written so far. Nothing is sent for "
            "%.0f s, until requests sent before the loss have ended",
            job.job,
            count,
            self.runtime.config.lease_ttl,
        )

    def _requeue(self) -> int:
        batch = [self._task(ref) for ref in self.outstanding.values()]
        if batch:
            self.runtime.frontier.push(batch)
        return len(batch)

    def _audit(self) -> None:
        now = time.monotonic()
        if (
            not self.outstanding
            or now - self._last_audit < _AUDIT_EVERY
            or now - self._last_written < _AUDIT_EVERY
        ):
            return
        self._last_audit = now
        status = self.runtime.job.status()
        if status.ready_hosts or status.in_flight or status.control != "run":
            return
        count = self._requeue()
        logger.warning(
            "%d open rows were nowhere in Redis (lost in a Redis failure?): queued again", count
        )

    def _check_done(self) -> None:
        rt = runtime(self.crawler)
        if (
            self.runtime.finished
            or self._stopping()
            or not self.fed_all
            or rt.results is None
            or len(rt.results.done) < rt.total_rows
        ):
            return
        try:
            self.runtime.job.finish("done", ttl=self.runtime.config.finished_ttl)
        except ClusterError as exc:
            self._log_error(exc)
            return
        logger.info("Job %r: every row has its result", self.runtime.job.job)
        self.runtime.finished = True
        internals.wake_engine(self.crawler.engine)

    def _log_error(self, exc: ClusterError) -> None:
        if not self._error_logged:
            self._error_logged = True
            logger.warning("%s; the coordinator keeps trying", exc)

    # --- closing ---------------------------------------------------------------------------------

    def close(self, reason: str) -> None:
        try:
            if self.collector is not None:
                self.collect(force=True)  # nothing after a failed write
                self.collector.flush()  # acknowledges only entries whose lines were synced
            if reason == "cancelled":
                self.runtime.job.control("cancel")
                self.runtime.job.finish("cancelled", ttl=self.runtime.config.finished_ttl)
        except ClusterError as exc:
            logger.warning("Redis: could not record the job's end (%s)", exc)
        finally:
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.drop_unsynced()  # none: each step syncs what it wrote, or cuts it off
                writer.close()


class ClusterCoordinator:
    """Extension driving the :class:`Coordinator` of a distributed job."""

    def __init__(self, crawler: Crawler, runtime: ClusterRuntime) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.coordinator = Coordinator(crawler, runtime)
        self._loop: AsyncioLoopingCall | LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        cluster = ClusterRuntime.for_crawler(crawler)
        if cluster is None or not cluster.is_coordinator:
            raise NotConfigured
        extension = cls(crawler, cluster)
        # The spider's rows go to Redis; the host report is the whole job's.
        rt = runtime(crawler)
        rt.feed_rows = extension.coordinator.feed
        rt.job_hosts = cluster.job_hosts
        connect = crawler.signals.connect
        connect(extension.spider_opened, signal=signals.spider_opened)
        connect(extension.spider_closed, signal=signals.spider_closed)
        connect(extension.paused, signal=job_paused)
        connect(extension.resumed, signal=job_resumed)
        return extension

    def spider_opened(self) -> None:
        self.coordinator.open()
        self._loop = create_looping_call(self.coordinator.collect)
        self._loop.start(self.runtime.config.collect_interval, now=False)

    def spider_closed(self, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.coordinator.close(reason)

    def paused(self) -> None:
        self._control("pause")

    def resumed(self) -> None:
        self._control("resume")

    def _control(self, action: str) -> None:
        try:
            self.runtime.job.control(action)
        except ClusterError as exc:
            logger.warning("Redis: could not %s the workers: %s", action, exc)
