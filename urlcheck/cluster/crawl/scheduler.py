"""ClusterScheduler: Scrapy's scheduler for a distributed job, on scrapy-redis's Scheduler.

What it keeps from scrapy-redis: the ``Scheduler`` / ``queue.Base`` shape and the ``REDIS_URL`` /
``REDIS_PARAMS`` settings. What it replaces, and why (findings §5, docs/distributed.md): the
queue pops at most once per request and knows no hosts (two workers hit one host 23 ms apart,
and a request popped by a worker that dies is lost), so work is *leased* per host from the
frontier instead; pickle becomes JSON; ``SCHEDULER_IDLE_BEFORE_CLOSE``'s ``BRPOP`` blocks the
reactor, so there is no blocking call at all; and ``close()`` never flushes the shared queue.

Per request: one ``claim`` (for all free download places at once) and one ``complete`` (in
:meth:`enqueue_request` for a hop or retry, in the pipeline for a result). Redis slow or gone
makes :meth:`next_request` return nothing for a second and try again: dispatch pauses, nothing
blocks and nothing crashes; leases not renewed in time are not sent.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.dupefilters import BaseDupeFilter
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import CallLaterResult, call_later, create_looping_call
from scrapy.utils.defer import deferred_from_coro
from scrapy_redis.queue import Base as RedisQueueBase
from scrapy_redis.scheduler import Scheduler as RedisScheduler

from urlcheck.check.urls import host_key
from urlcheck.cluster.crawl.runtime import ClusterRuntime
from urlcheck.cluster.crawl.tasks import (
    request_from_task,
    row_of,
    task_from_request,
    worker_lost_result,
)
from urlcheck.cluster.errors import ClusterError, ClusterUnavailableError
from urlcheck.cluster.frontier import Then
from urlcheck.cluster.task import decode_entry, encode_entry
from urlcheck.crawl import internals
from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

    from urlcheck.cluster.frontier import Claim, Lease
    from urlcheck.spiders.check import CheckSpider

logger = logging.getLogger(__name__)

# While the job is missing (coordinator not started yet), paused, or Redis is unreachable.
_IDLE_POLL = 1.0
_WAITING_LOG_EVERY = 30.0


class _JsonTasks:
    """scrapy-redis's serializer hook, with the task codec instead of pickle."""

    loads = staticmethod(decode_entry)
    dumps = staticmethod(encode_entry)


class HostLeaseQueue(RedisQueueBase):  # type: ignore[misc]
    """scrapy-redis's queue interface over the per-host frontier. Nothing is pushed through it:
    the coordinator queues rows, and hops and retries go back with their lease's completion."""

    def __init__(self, runtime: ClusterRuntime, spider: Spider) -> None:
        super().__init__(
            runtime.client, spider, runtime.frontier.keys.prefix, serializer=_JsonTasks
        )
        self.runtime = runtime

    def __len__(self) -> int:
        return len(self.runtime.book)  # leases held here; the job's size is `scrapy job status`

    def claim(self, n: int) -> Claim:
        config = self.runtime.config
        return self.runtime.frontier.claim(n, ttl=config.lease_ttl, delay=config.delay)

    def clear(self) -> None:
        """Never flush: the queue is the whole job's (scrapy-redis#149)."""


class ClusterScheduler(RedisScheduler):  # type: ignore[misc]
    def __init__(self, crawler: Crawler, runtime: ClusterRuntime) -> None:
        # persist: never flush on close; idle_before_close=0: never BRPOP on the reactor.
        super().__init__(runtime.client, persist=True, idle_before_close=0)
        self.crawler = crawler
        self.runtime = runtime
        self.stats = crawler.stats
        self.spider: CheckSpider | None = None
        self.queue: HostLeaseQueue | None = None
        self._ready: deque[Request] = deque()
        self._next_claim = 0.0
        self._wakeup: CallLaterResult | None = None
        self._wakeup_at = math.inf
        self._backoff: dict[str, float] = {}  # host -> pause the middleware just decided
        self._renewer: AsyncioLoopingCall | LoopingCall | None = None
        self._down_since: float | None = None
        self._waiting_logged = 0.0
        self._closing = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = ClusterRuntime.for_crawler(crawler)
        if runtime is None:
            raise NotConfigured("ClusterScheduler needs REDIS_URL")
        return cls(crawler, runtime)

    def __len__(self) -> int:
        return len(self._ready)

    # --- Scrapy's scheduler interface -----------------------------------------------------------

    def open(self, spider: Spider) -> None:
        self.spider = spider  # type: ignore[assignment]
        self.queue = HostLeaseQueue(self.runtime, spider)
        self.runtime.scheduler = self
        self.df = BaseDupeFilter()  # chains detect their own loops
        runtime(self.crawler).backoff.on_pause(self._host_paused)
        self.crawler.signals.connect(self._left_downloader, signal=signals.request_left_downloader)
        self._renewer = create_looping_call(self._renew)
        self._renewer.start(self.runtime.config.renew_interval, now=True)

    def close(self, reason: str) -> None:
        self._closing = True
        if self._renewer is not None and self._renewer.running:
            self._renewer.stop()
        if self._wakeup is not None:
            self._wakeup.cancel()
            self._wakeup = None
        try:
            self._release_unsent()
            info = self.runtime.info(state=reason)
            self.runtime.frontier.renew([], ttl=self.runtime.config.lease_ttl, info=info)
        except ClusterError as exc:
            logger.warning("Could not hand back unsent leases (they expire on their own): %s", exc)
        logger.info(
            "This %s (%s) committed %d rows of job %r (%s)",
            self.runtime.role,
            self.runtime.owner,
            self.runtime.rows_done,
            self.runtime.job.job,
            reason,
        )
        if self.stats is not None:
            self.stats.set_value(
                "urlcheck/cluster/round_trips",
                self.runtime.frontier.round_trips + self.runtime.job.round_trips,
            )

    def has_pending_requests(self) -> bool:
        return not self.runtime.finished

    def enqueue_request(self, request: Request) -> bool:
        """A hop or a retry of a leased row: hand it back to Redis with the lease's release."""
        row = row_of(request)
        lease = None if row is None else self.runtime.book.pop(row)
        if row is not None:
            self._handed_on(row)
        if lease is None:
            # Its lease was lost (reaped after a stall): the re-queued copy redoes this step.
            self._inc("urlcheck/cluster/stale_dropped")
            return False
        task = task_from_request(request)
        host = host_key(request.url)
        delay = self.runtime.delay_for(lease.host)
        pace = self.runtime.pace_event(lease.host)
        frontier = self.runtime.frontier
        then, asked = self.then(), self.runtime.book.clock()
        try:
            if host != lease.host or len(task.chain) > len(lease.task.chain):
                done = frontier.complete_hop(lease, host, task, delay=delay, then=then, pace=pace)
                self._inc("urlcheck/cluster/hops")
            else:
                backoff = self._backoff.pop(lease.host, 0.0)
                done = frontier.complete_retry(
                    lease,
                    task,
                    delay=delay,
                    backoff=backoff,
                    strikes=task.retry_times,
                    then=then,
                    pace=pace,
                )
                self._inc("urlcheck/cluster/retries")
        except ClusterError as exc:
            logger.warning(
                "Redis: could not hand back row %d (%s): its lease expires and it is redone: %s",
                lease.task.row,
                request.url,
                exc,
            )
            self._inc("urlcheck/cluster/unavailable")
            return False
        if done.claim is not None:
            self.accept(done.claim, asked)
        return True

    def next_request(self) -> Request | None:
        request = self._pop_ready()
        if request is not None or self.runtime.finished or self._closing:
            return request
        now = time.monotonic()
        if now < self._next_claim:
            self._wake_engine_at(self._next_claim)
            return None
        assert self.queue is not None
        # Downloads that just ended claim their successor with their completion.
        free = self._free_places() - self.runtime.book.awaiting_outcome()
        if free <= 0:
            return None
        asked = self.runtime.book.clock()
        try:
            claim = self.queue.claim(free)
        except ClusterError as exc:
            self._unavailable(exc)
            self._next_claim = now + _IDLE_POLL
            self._wake_engine_at(self._next_claim)
            return None
        self._available()
        self._inc("urlcheck/cluster/claims")
        self.accept(claim, asked)
        return self._pop_ready()

    def then(self) -> Then | None:
        """What a completion should claim in its round trip: the free download places."""
        engine = self.crawler.engine
        if self.runtime.finished or self._closing or (engine is not None and engine.paused):
            return None
        free = self._free_places() - self.runtime.book.awaiting_outcome()
        return Then(free, self.runtime.config.lease_ttl) if free > 0 else None

    def _free_places(self) -> int:
        engine = self.crawler.engine
        if engine is None:
            return 0
        downloader = engine.downloader
        active = sum(1 for _ in internals.requests_in_downloader(downloader))
        return downloader.total_concurrency - active - len(self._ready)

    def accept(self, claim: Claim, asked: float) -> None:
        """Take the leases of a claim (made here or with a completion) sent at ``asked``."""
        self._follow_control(claim.control, claim.status)
        self.runtime.book.add(claim.leases, asked)
        for lease in claim.leases:
            self._inc("urlcheck/cluster/leases")
            self.runtime.circuit.leased(lease)
            self.runtime.pace_event(lease.host)  # left over from a lease lost meanwhile
            if lease.lost_too_often:
                self._give_up(lease)
                continue
            assert self.spider is not None
            self._ready.append(request_from_task(self.spider, lease.task))
        if claim.reaped:
            self._inc("urlcheck/cluster/reaped", claim.reaped)
        now = time.monotonic()
        if self._ready:
            self._next_claim = now
            self._wake_engine_at(now)
            return
        if claim.control != "run":
            wait = _IDLE_POLL
        elif claim.wait is None:  # nothing queued anywhere: new work comes with pushes
            wait = self.runtime.config.poll_interval
        else:
            wait = min(claim.wait, _IDLE_POLL)
        self._next_claim = now + wait
        self._wake_engine_at(self._next_claim)

    # --- helpers --------------------------------------------------------------------------------

    def _pop_ready(self) -> Request | None:
        book = self.runtime.book
        while self._ready:
            request = self._ready.popleft()
            row = row_of(request)
            if row is not None and book.safe_to_send(row):
                book.sent(row)
                return request
            # Renewals failed for too long: another process may get this lease soon.
            if row is not None:
                book.pop(row)
                self._handed_on(row)
            self._inc("urlcheck/cluster/expired_before_send")
        return None

    def _give_up(self, lease: Lease) -> None:
        assert self.spider is not None
        result = worker_lost_result(self.spider, lease.task, lease.reaps)
        self.runtime.book.pop(lease.task.row)
        try:
            line = result.to_json_line().decode("utf-8").rstrip("\n")
            done = self.runtime.frontier.complete_result(
                lease, line, delay=self.runtime.config.delay
            )
        except ClusterError as exc:
            logger.warning("Redis: could not record row %d as worker_lost: %s", lease.task.row, exc)
            return
        if done.committed:
            self.runtime.rows_done += 1
        logger.warning(
            "Row %d: %d processes lost its request to %s; recorded as worker_lost",
            lease.task.row,
            lease.reaps,
            lease.task.target,
        )
        self._inc("urlcheck/cluster/worker_lost")

    def _release_unsent(self) -> None:
        """Give back leases claimed and not sent (closing, or the job paused)."""
        self._ready.clear()
        book = self.runtime.book
        for lease in book.unsent():
            book.pop(lease.task.row)
            self._handed_on(lease.task.row)
            self.runtime.frontier.release(lease, delay=self.runtime.config.delay)

    def _handed_on(self, row: int) -> None:
        """The row's request leaves this process without its line (its next step is in Redis,
        or back there): the spider's ledger stops holding it open."""
        if self.spider is not None:
            self.spider.ledger.finished(row)

    def _follow_control(self, control: str, status: str) -> None:
        self.runtime.control = control
        if control == "paused" and self._ready:
            try:
                self._release_unsent()  # other hosts' work must not wait for this pause
            except ClusterError as exc:
                logger.warning("Could not hand back unsent leases: %s", exc)
        if control == "cancelled" or status == "cancelled":
            self._finish("cancelled")
        elif status == "done":
            self._finish("finished")
        elif not control and not self.runtime.is_coordinator:
            now = time.monotonic()
            if now - self._waiting_logged >= _WAITING_LOG_EVERY:
                self._waiting_logged = now
                logger.info("Waiting for the coordinator of job %r to start", self.runtime.job.job)

    def _finish(self, reason: str) -> None:
        if self.runtime.finished:
            return
        self.runtime.finished = True
        self._ready.clear()
        logger.info("Job %r is %s: this process stops", self.runtime.job.job, reason)
        engine = self.crawler.engine
        if engine is None:
            return
        if reason == "cancelled":
            deferred_from_coro(engine.close_spider_async(reason="cancelled"))
        else:
            self._wake_engine_at(0.0)  # idle now: the engine closes the spider as finished

    def _renew(self) -> None:
        runtime = self.runtime
        book = runtime.book
        asked = book.clock()
        leases = book.renewable()
        try:
            renewal = runtime.frontier.renew(
                leases, ttl=runtime.config.lease_ttl, info=runtime.info()
            )
        except ClusterError as exc:
            self._unavailable(exc)
            return
        self._available()
        for lease in book.renewed(leases, asked, renewal.lost):
            self._inc("urlcheck/cluster/lost")
            logger.warning(
                "Lease on %s for row %d was lost (this process stalled past its TTL); "
                "its outcome will be ignored",
                lease.host,
                lease.task.row,
            )
        self._follow_control(renewal.control, renewal.status)

    def _host_paused(self, host: str, seconds: float) -> None:
        self._backoff[host] = seconds

    def _left_downloader(self, request: Request) -> None:
        row = row_of(request)
        if row is not None:
            self.runtime.book.finished(row)

    def _unavailable(self, exc: ClusterError) -> None:
        self._inc("urlcheck/cluster/unavailable")
        if self._down_since is None:
            self._down_since = time.monotonic()
            level = logging.WARNING if isinstance(exc, ClusterUnavailableError) else logging.ERROR
            logger.log(level, "%s; dispatch paused until it answers", exc)

    def _available(self) -> None:
        if self._down_since is not None:
            logger.info(
                "Redis answers again after %.1f s; dispatch resumes",
                time.monotonic() - self._down_since,
            )
            self._down_since = None

    def _wake_engine_at(self, when: float) -> None:
        if self._wakeup is not None and self._wakeup_at <= when:
            return
        if self._wakeup is not None:
            self._wakeup.cancel()
        self._wakeup_at = when
        self._wakeup = call_later(max(when - time.monotonic(), 0.0) + 0.0005, self._wake_engine)

    def _wake_engine(self) -> None:
        self._wakeup = None
        self._wakeup_at = math.inf
        internals.wake_engine(self.crawler.engine)

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)
