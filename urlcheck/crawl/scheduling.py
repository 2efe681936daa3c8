"""Scheduler pieces that keep every host polite without letting one host hold up the others.

Scrapy's downloader enforces the per-host delay by *holding* a request in the host's slot
queue, where it occupies one of the CONCURRENT_REQUESTS places (``Downloader.active``). With
5 places and a 0.3 s delay that caps a crawl at ~17 requests/s whatever the number of hosts,
and a host in back-off would hold places for minutes. So this queue hands out a request only
when its host is ready: nothing of that host in the downloader, its delay elapsed, and not
backing off. Requests that are not ready stay here, costing no place. A host's delay is the
larger of its Scrapy slot delay and the pace learned from its 429s
(:mod:`urlcheck.politeness.pace`).

Two gaps are kept per host. Scrapy counts its slot delay between *dispatches* (AutoThrottle
raises it toward the host's latency), but a request can reach the server later than its
dispatch: the first one to a host also opens the connection, and an event-loop stall can hold
bytes back (measured: the next request then arrived 236-272 ms after it, for a 300 ms delay).
The one time known to be after the previous request's arrival is the end of its download, so
the floor (``DOWNLOAD_DELAY``) and the learned pace are counted from there as well: every gap at
the server is at least the floor. AutoThrottle's delay is counted from the dispatch only, as
Scrapy means it: counted from the end too, a host that answers in 1 s would wait 1 s more after
each answer (2 s per URL where the design's pace is the answer plus 300 ms).
"""

from __future__ import annotations

from collections.abc import Iterable
from time import monotonic
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.core.scheduler import Scheduler
from scrapy.pqueues import DownloaderAwarePriorityQueue, QueueProtocol
from scrapy.utils.asyncio import CallLaterResult, call_later

from urlcheck.crawl import internals
from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler


_DONE_AT_PRUNE = 10_000


class PoliteHostQueue(DownloaderAwarePriorityQueue):
    def __init__(
        self,
        crawler: Crawler,
        downstream_queue_cls: type[QueueProtocol],
        key: str,
        slot_startprios: dict[str, Iterable[int]] | None = None,
        *,
        start_queue_cls: type[QueueProtocol] | None = None,
    ) -> None:
        super().__init__(
            crawler, downstream_queue_cls, key, slot_startprios, start_queue_cls=start_queue_cls
        )
        internals.check(crawler.engine, self)
        self._backoff = runtime(crawler).backoff
        self._floor = self._backoff.config.delay_floor  # DOWNLOAD_DELAY
        self._downloader = internals.queue_downloader(self)
        self._wakeup: CallLaterResult | None = None
        self._wakeup_at = 0.0
        self._done_at: dict[str, float] = {}  # slot -> when its last download ended
        crawler.signals.connect(self._download_ended, signal=signals.request_left_downloader)

    def _ready_slot(self) -> str | None:
        downloader = self._downloader
        # Downloader.active is updated the moment a request is handed out (Slot.active one
        # event-loop turn later, which lets bursts through), and is never larger than
        # CONCURRENT_REQUESTS, so counting it is cheap.
        busy: dict[str, int] = {}
        for request in internals.requests_in_downloader(downloader):
            key = internals.slot_key(downloader, request)
            busy[key] = busy.get(key, 0) + 1
        default_concurrency = internals.default_concurrency(downloader)
        now = monotonic()
        best: str | None = None
        best_lastseen = 0.0
        wake = float("inf")
        for key in self.pqueues:
            slot = internals.slot_times(downloader, key)
            if busy.get(key, 0) >= (slot.concurrency if slot else default_concurrency):
                continue  # its download finishing schedules the engine again
            # The learned pace outlives Scrapy's slot (collected after 60 s idle).
            pace = self._backoff.pace.delay(key)
            ready_at = max(
                self._backoff.paused_until(key),
                (slot.lastseen if slot else 0.0) + max(slot.delay if slot else 0.0, pace),
                self._done_at.get(key, 0.0) + max(self._floor, pace),
            )
            if ready_at > now:
                wake = min(wake, ready_at)
                continue
            lastseen = slot.lastseen if slot else 0.0
            if best is None or lastseen < best_lastseen:
                best, best_lastseen = key, lastseen
        if best is None and wake != float("inf"):
            self._wake_engine_at(wake, now)
        return best

    def _wake_engine_at(self, when: float, now: float) -> None:
        if self._wakeup is not None and self._wakeup_at <= when:
            return
        if self._wakeup is not None:
            self._wakeup.cancel()
        self._wakeup_at = when
        self._wakeup = call_later(max(when - now, 0.0) + 0.0005, self._wake_engine)

    def _wake_engine(self) -> None:
        self._wakeup = None
        # The engine otherwise re-polls the scheduler only when a download ends, a request is
        # scheduled, or every 5 s (its heartbeat): too late for a 0.3 s delay.
        internals.wake_engine(self.crawler.engine)

    def pop(self) -> Request | None:
        key = self._ready_slot()
        if key is None:
            return None
        queue = self.pqueues[key]
        request = queue.pop()
        if len(queue) == 0:
            del self.pqueues[key]
            queue.close()
        return request

    def _download_ended(self, request: Request) -> None:
        now = monotonic()
        if len(self._done_at) >= _DONE_AT_PRUNE:  # one-row hosts: forget what no delay needs
            self._done_at = {k: t for k, t in self._done_at.items() if t > now - 120}
        self._done_at[internals.slot_key(self._downloader, request)] = now

    def peek(self) -> Request | None:
        key = self._ready_slot()
        return None if key is None else self.pqueues[key].peek()

    def close(self) -> dict[str, list[int]]:
        if self._wakeup is not None:
            self._wakeup.cancel()
            self._wakeup = None
        return super().close()


class MemoryScheduler(Scheduler):
    """Scrapy's scheduler with its queue always in memory, even when JOBDIR is set.

    Measured on 2.19: after a SIGKILL or a double Ctrl-C the pickled disk queue and
    requests.seen resume wrongly (URLs lost and re-sent). urlcheck derives what is left from
    results.jsonl instead, and feeds rows lazily, so the queue is small and need not persist.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["jobdir"] = None
        super().__init__(*args, **kwargs)
