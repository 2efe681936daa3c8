"""ClusterScheduler: Scrapy's scheduler for a process of a distributed job, an adapter over
:class:`urlcheck.cluster.dispatch.LeaseDispatch`, which decides what is sent and when.

No row's request is queued here: the coordinator queues rows in Redis, each process leases work
per host from the frontier, and hops and retries go back with their lease's completion. Only
the proxy pool's health probes this process was given wait here, sent before leased work. So it is a
Scrapy ``BaseScheduler``, not scrapy-redis's ``Scheduler`` (docs/distributed.md says what is kept
of scrapy-redis and what is replaced, and why). The engine asks :meth:`next_request` whenever it
has room; this scheduler wakes it when leased work is ready or a claim is due, and never blocks.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import CallLaterResult, call_later, create_looping_call
from scrapy.utils.defer import deferred_from_coro

from urlcheck.cluster.crawl.runtime import ClusterRuntime
from urlcheck.cluster.crawl.tasks import (
    request_from_task,
    row_of,
    task_from_request,
    worker_lost_result,
)
from urlcheck.cluster.dispatch import LeaseDispatch
from urlcheck.cluster.frontier import Then
from urlcheck.crawl import internals
from urlcheck.crawl import meta as m
from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

    from urlcheck.cluster.frontier import Claim, Lease


class ClusterScheduler(BaseScheduler):
    def __init__(self, crawler: Crawler, runtime: ClusterRuntime) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.requests = runtime.requests
        self.stats = crawler.stats
        self.dispatch: LeaseDispatch[Request] = LeaseDispatch(runtime, self)
        self._wakeup: CallLaterResult | None = None
        self._wakeup_at = math.inf
        self._renewer: AsyncioLoopingCall | LoopingCall | None = None
        # This process's own requests that no row owns: the proxy pool's health probes (the
        # pool gave them to this process: urlcheck.extensions.proxyprobes). Sent first.
        self._own: deque[Request] = deque()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        cluster = ClusterRuntime.for_crawler(crawler)
        if cluster is None:
            raise NotConfigured("ClusterScheduler needs REDIS_URL")
        return cls(crawler, cluster)

    def __len__(self) -> int:
        return len(self.dispatch) + len(self._own)

    # --- Scrapy's scheduler interface -----------------------------------------------------------

    def open(self, spider: Spider) -> None:
        self.runtime.scheduler = self
        runtime(self.crawler).backoff.on_pause(self.dispatch.host_paused)
        self.crawler.signals.connect(self._left_downloader, signal=signals.request_left_downloader)
        self._renewer = create_looping_call(self.dispatch.renew)
        self._renewer.start(self.runtime.config.renew_interval, now=True)

    def close(self, reason: str) -> None:
        if self._renewer is not None and self._renewer.running:
            self._renewer.stop()
        if self._wakeup is not None:
            self._wakeup.cancel()
            self._wakeup = None
        self.dispatch.close(reason)
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
        if row is None:
            if m.PROBE_PROXY in request.meta:
                self._own.append(request)
                return True
            # not a row's request: nothing in Redis to hand it back to
            self.inc("urlcheck/cluster/stale_dropped")
            return False
        return self.dispatch.hand_back(row, task_from_request(request), then=self.then)

    def next_request(self) -> Request | None:
        if self._own:
            return self._own.popleft()
        request = self.dispatch.pop_ready()
        if request is not None or self.runtime.finished or self.dispatch.closing:
            return request
        # Downloads that just ended claim their successor with their completion.
        return self.dispatch.claim(self._free_places() - self.runtime.book.awaiting_outcome())

    # --- what a completion claims (Dispatcher, for the pipeline) --------------------------------

    def then(self) -> Then | None:
        """What a completion should claim in its round trip: the free download places."""
        engine = self.crawler.engine
        if self.runtime.finished or self.dispatch.closing or (engine is not None and engine.paused):
            return None
        free = self._free_places() - self.runtime.book.awaiting_outcome()
        return Then(free, self.runtime.config.lease_ttl) if free > 0 else None

    def accept(self, claim: Claim, asked: float) -> None:
        self.dispatch.accept(claim, asked)

    def _free_places(self) -> int:
        engine = self.crawler.engine
        if engine is None:
            return 0
        downloader = engine.downloader
        active = sum(1 for _ in internals.requests_in_downloader(downloader))
        return downloader.total_concurrency - active - len(self.dispatch)

    # --- the dispatch's hooks (urlcheck.cluster.dispatch.Hooks) ---------------------------------

    def prepare(self, lease: Lease) -> Request:
        return request_from_task(self.requests, lease.task)

    def handed_on(self, row: int) -> None:
        self.requests.handed_on(row)

    def lost_line(self, lease: Lease) -> str:
        result = worker_lost_result(self.requests, lease.task, lease.reaps)
        return result.to_json_line().decode("utf-8").rstrip("\n")

    def job_ended(self, reason: str) -> None:
        engine = self.crawler.engine
        if engine is None:
            return
        if reason == "cancelled":
            deferred_from_coro(engine.close_spider_async(reason="cancelled"))
        else:
            self.wake_at(0.0)  # idle now: the engine closes the spider as finished

    def wake_at(self, when: float) -> None:
        if self._wakeup is not None and self._wakeup_at <= when:
            return
        if self._wakeup is not None:
            self._wakeup.cancel()
        self._wakeup_at = when
        self._wakeup = call_later(max(when - time.monotonic(), 0.0) + 0.0005, self._wake_engine)

    def inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)

    # --- helpers --------------------------------------------------------------------------------

    def _left_downloader(self, request: Request) -> None:
        row = row_of(request)
        if row is not None:
            self.runtime.book.finished(row)

    def _wake_engine(self) -> None:
        self._wakeup = None
        self._wakeup_at = math.inf
        internals.wake_engine(self.crawler.engine)
