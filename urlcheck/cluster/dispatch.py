"""Lease dispatch: which of the tasks leased to this process it sends, when it asks Redis for
more, what goes back with a lease, and what the job's control asks of it (docs/distributed.md).

Per request: one ``claim`` (for all free download places at once) and one ``complete`` (a hop or
retry here, a result in the pipeline). Redis slow or gone makes :meth:`LeaseDispatch.claim`
return nothing for a second and try again: dispatch pauses, nothing blocks and nothing crashes;
leases not renewed in time are not sent.

The scheduler (:mod:`urlcheck.cluster.crawl.scheduler`) adapts it to Scrapy through the
:class:`Hooks` it passes: it makes each leased task a request, counts stats and wakes the engine.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from urlcheck.check.urls import host_key
from urlcheck.cluster.errors import ClusterError, ClusterUnavailableError

if TYPE_CHECKING:
    from collections.abc import Callable

    from urlcheck.clock import Clock
    from urlcheck.cluster.frontier import Claim, Lease, Then
    from urlcheck.cluster.process import JobProcess
    from urlcheck.cluster.task import Task

logger = logging.getLogger(__name__)

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# While the job is missing (coordinator not started yet), paused, or Redis is unreachable.
IDLE_POLL = 1.0
_WAITING_LOG_EVERY = 30.0


class Hooks(Protocol[T_co]):
    """What dispatch asks of the crawl it serves."""

    def prepare(self, lease: Lease) -> T_co:
        """What to send for a leased task (a request)."""

    def handed_on(self, row: int) -> None:
        """The row leaves this process without its line (its next step is back in Redis)."""

    def lost_line(self, lease: Lease) -> str:
        """The result line of a row whose holders were lost too often (``worker_lost``)."""

    def job_ended(self, reason: str) -> None:
        """The job is ``finished`` or ``cancelled``: this process stops."""

    def wake_at(self, when: float) -> None:
        """Look for work again at ``when`` (on the dispatch's clock)."""

    def inc(self, key: str, count: int = 1) -> None:
        """Add to a stat."""


class LeaseDispatch(Generic[T]):
    def __init__(
        self, process: JobProcess, hooks: Hooks[T], *, clock: Clock = time.monotonic
    ) -> None:
        self.process = process
        self.hooks = hooks
        self.clock = clock
        self.closing = False
        self._ready: deque[tuple[int, T]] = deque()  # (row, what to send), leased, not sent
        self._next_claim = 0.0
        self._backoff: dict[str, float] = {}  # host -> pause the back-off just decided
        self._down_since: float | None = None
        self._waiting_logged = -math.inf

    def __len__(self) -> int:
        return len(self._ready)

    # --- asking for work ------------------------------------------------------------------------

    def claim(self, free: int) -> T | None:
        """Ask Redis for up to ``free`` tasks, unless it is too early; the first one to send."""
        now = self.clock()
        if now < self._next_claim:
            self.hooks.wake_at(self._next_claim)
            return None
        if free <= 0:
            return None
        process = self.process
        asked = process.book.clock()
        try:
            claim = process.frontier.claim(
                free, ttl=process.config.lease_ttl, delay=process.config.delay
            )
        except ClusterError as exc:
            self.unavailable(exc)
            self._next_claim = now + IDLE_POLL
            self.hooks.wake_at(self._next_claim)
            return None
        self.available()
        self.hooks.inc("urlcheck/cluster/claims")
        self.accept(claim, asked)
        return self.pop_ready()

    def accept(self, claim: Claim, asked: float) -> None:
        """Take the leases of a claim (made here or with a completion) sent at ``asked``."""
        process = self.process
        self.follow_control(claim.control, claim.status)
        process.book.add(claim.leases, asked)
        for lease in claim.leases:
            self.hooks.inc("urlcheck/cluster/leases")
            process.circuit.leased(lease)
            process.pace_event(lease.host)  # left over from a lease lost meanwhile
            if lease.lost_too_often:
                self._give_up(lease)
                continue
            self._ready.append((lease.task.row, self.hooks.prepare(lease)))
        if claim.reaped:
            self.hooks.inc("urlcheck/cluster/reaped", claim.reaped)
        now = self.clock()
        if self._ready:
            self._next_claim = now
            self.hooks.wake_at(now)
            return
        if claim.control != "run":
            wait = IDLE_POLL
        elif claim.wait is None:  # nothing queued anywhere: new work comes with pushes
            wait = process.config.poll_interval
        else:
            wait = min(claim.wait, IDLE_POLL)
        self._next_claim = now + wait
        self.hooks.wake_at(self._next_claim)

    def pop_ready(self) -> T | None:
        """The next leased task still safe to send, marked sent."""
        book = self.process.book
        while self._ready:
            row, item = self._ready.popleft()
            if book.safe_to_send(row):
                book.sent(row)
                return item
            # Renewals failed for too long: another process may get this lease soon.
            book.pop(row)
            self.hooks.handed_on(row)
            self.hooks.inc("urlcheck/cluster/expired_before_send")
        return None

    # --- outcomes -------------------------------------------------------------------------------

    def hand_back(self, row: int, task: Task, *, then: Callable[[], Then | None]) -> bool:
        """A hop or a retry of a leased row goes back to Redis with the lease's release (``then``:
        what to claim in the same round trip). False when its lease was lost (reaped after a
        stall: the re-queued copy redoes this step) or Redis did not take it."""
        process = self.process
        lease = process.book.pop(row)
        self.hooks.handed_on(row)
        if lease is None:
            self.hooks.inc("urlcheck/cluster/stale_dropped")
            return False
        host = host_key(task.target)
        delay, gap = process.delay_for(lease.host), process.gap_for(lease.host)
        pace = process.pace_event(lease.host)
        frontier = process.frontier
        after, asked = then(), process.book.clock()
        try:
            if host != lease.host or len(task.chain) > len(lease.task.chain):
                done = frontier.complete_hop(
                    lease, host, task, delay=delay, gap=gap, then=after, pace=pace
                )
                self.hooks.inc("urlcheck/cluster/hops")
            else:
                done = frontier.complete_retry(
                    lease,
                    task,
                    delay=delay,
                    gap=gap,
                    backoff=self._backoff.pop(lease.host, 0.0),
                    strikes=task.retry_times,
                    then=after,
                    pace=pace,
                )
                self.hooks.inc("urlcheck/cluster/retries")
        except ClusterError as exc:
            logger.warning(
                "Redis: could not hand back row %d (%s): its lease expires and it is redone: %s",
                lease.task.row,
                task.target,
                exc,
            )
            self.hooks.inc("urlcheck/cluster/unavailable")
            return False
        if done.claim is not None:
            self.accept(done.claim, asked)
        return True

    def host_paused(self, host: str, seconds: float) -> None:
        """The back-off paused ``host``: its retry goes back to Redis with that pause."""
        self._backoff[host] = seconds

    def _give_up(self, lease: Lease) -> None:
        process = self.process
        line = self.hooks.lost_line(lease)
        process.book.pop(lease.task.row)
        try:
            done = process.frontier.complete_result(lease, line, delay=process.config.delay)
        except ClusterError as exc:
            logger.warning("Redis: could not record row %d as worker_lost: %s", lease.task.row, exc)
            return
        if done.committed:
            process.rows_done += 1
        logger.warning(
            "Row %d: %d processes lost its request to %s; recorded as worker_lost",
            lease.task.row,
            lease.reaps,
            lease.task.target,
        )
        self.hooks.inc("urlcheck/cluster/worker_lost")

    # --- keeping the leases and following the job ----------------------------------------------

    def renew(self) -> None:
        """Extend every lease held (and this process's heartbeat); follow the job's control."""
        process = self.process
        book = process.book
        asked = book.clock()
        leases = book.renewable()
        try:
            renewal = process.frontier.renew(
                leases, ttl=process.config.lease_ttl, info=process.info()
            )
        except ClusterError as exc:
            self.unavailable(exc)
            return
        self.available()
        for lease in book.renewed(leases, asked, renewal.lost):
            self.hooks.inc("urlcheck/cluster/lost")
            logger.warning(
                "Lease on %s for row %d was lost (this process stalled past its TTL); "
                "its outcome will be ignored",
                lease.host,
                lease.task.row,
            )
        self.follow_control(renewal.control, renewal.status)

    def follow_control(self, control: str, status: str) -> None:
        """What Redis says of the job with each claim and renewal."""
        if control == "paused" and self._ready:
            try:
                self.release_unsent()  # other hosts' work must not wait for this pause
            except ClusterError as exc:
                logger.warning("Could not hand back unsent leases: %s", exc)
        if control == "cancelled" or status == "cancelled":
            self._end("cancelled")
        elif status == "done":
            self._end("finished")
        elif not control and not self.process.is_coordinator:
            now = self.clock()
            if now - self._waiting_logged >= _WAITING_LOG_EVERY:
                self._waiting_logged = now
                logger.info("Waiting for the coordinator of job %r to start", self.process.job.job)

    def release_unsent(self) -> None:
        """Give back leases claimed and not sent (closing, or the job paused)."""
        self._ready.clear()
        process = self.process
        book = process.book
        for lease in book.unsent():
            book.pop(lease.task.row)
            self.hooks.handed_on(lease.task.row)
            process.frontier.release(lease, delay=process.config.delay)

    def close(self, reason: str) -> None:
        """This process stops: what it leased and did not send goes back, and Redis learns why."""
        self.closing = True
        process = self.process
        try:
            self.release_unsent()
            process.frontier.renew([], ttl=process.config.lease_ttl, info=process.info(reason))
        except ClusterError as exc:
            logger.warning("Could not hand back unsent leases (they expire on their own): %s", exc)
        logger.info(
            "This %s (%s) committed %d rows of job %r (%s)",
            process.role,
            process.owner,
            process.rows_done,
            process.job.job,
            reason,
        )

    def _end(self, reason: str) -> None:
        process = self.process
        if process.finished:
            return
        process.finished = True
        self._ready.clear()
        logger.info("Job %r is %s: this process stops", process.job.job, reason)
        self.hooks.job_ended(reason)

    # --- Redis's health -------------------------------------------------------------------------

    def unavailable(self, exc: ClusterError) -> None:
        self.hooks.inc("urlcheck/cluster/unavailable")
        if self._down_since is None:
            self._down_since = self.clock()
            level = logging.WARNING if isinstance(exc, ClusterUnavailableError) else logging.ERROR
            logger.log(level, "%s; dispatch paused until it answers", exc)

    def available(self) -> None:
        if self._down_since is not None:
            logger.info(
                "Redis answers again after %.1f s; dispatch resumes",
                self.clock() - self._down_since,
            )
            self._down_since = None
