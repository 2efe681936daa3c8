"""The per-host frontier in Redis, seen from a process that checks URLs (worker or coordinator).

Per host, across every process: at most one request in flight (a host with a lease is never
ready), and the next request no earlier than ``max(dispatch + delay, done + delay, until)`` on
Redis's clock, where ``until`` ends a 429/503 back-off. Each request costs two round trips:
``claim`` (one lease per ready host, up to the free download places) and ``complete`` (release
and outcome in one atomic step). ``renew`` extends all of a process's leases and records its
heartbeat in one call every few seconds. Every public method raises ClusterUnavailableError or
ClusterError when Redis fails (the boundary, urlcheck.redis.boundary).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from urlcheck.cluster.errors import ClusterBoundary, ClusterError
from urlcheck.cluster.evidence import decode_evidence
from urlcheck.cluster.keys import JobKeys
from urlcheck.cluster.scripts import JobScripts, pairs, text
from urlcheck.cluster.task import Task, decode_entry, encode_entry
from urlcheck.politeness.pace import CONVERGED, FORGET_AFTER, MIN_STEP
from urlcheck.redis.link import Link

if TYPE_CHECKING:
    import redis

    from urlcheck.cluster.workers import WorkerInfo
    from urlcheck.politeness.circuit import Unavailable
    from urlcheck.redis.boundary import Breaker

# Expired leases reaped per claim: bounds the script's run time after a mass failure.
REAP_LIMIT = 16
# After this many expired leases a row is committed as "worker_lost" instead of sent again.
MAX_REAPS = 3


def _ms(seconds: float) -> int:
    return max(round(seconds * 1000), 0)


@dataclass(frozen=True, slots=True)
class Lease:
    host: str
    token: str
    reaps: int  # how many earlier holders of this task lost their lease
    task: Task
    struck: bool = False  # the host's circuit count in a row is open: an answer clears it
    down: str = ""  # "<since ms>|<evidence json>" when the host was given up on for the job

    @property
    def lost_too_often(self) -> bool:
        return self.reaps >= MAX_REAPS


@dataclass(frozen=True, slots=True)
class Claim:
    control: str  # "run", "paused", "cancelled"; "" when Redis holds no such job
    status: str  # "running", "done", "cancelled"; "" when Redis holds no such job
    wait: float | None  # seconds until the next host is ready; None when none is queued
    reaped: int  # expired leases this call put back
    dropped: int  # queued copies of rows already done, discarded
    leases: tuple[Lease, ...]


@dataclass(frozen=True, slots=True)
class Completion:
    owned: bool  # False: the lease had expired (the task was re-queued for someone else)
    committed: bool  # this call recorded the row's result (it was not done before)
    claim: Claim | None = None  # the next leases, when asked for with ``claim_n``


@dataclass(frozen=True, slots=True)
class Renewal:
    control: str
    status: str
    lost: frozenset[str]  # hosts whose lease this process no longer holds


_LEASE_FIELDS = 6  # host, token, reaps, entry, struck, down


def _claim(reply: list[Any]) -> Claim:
    control, status, wait_ms, reaped, dropped = reply[:5]
    leases = tuple(
        Lease(
            text(reply[i]),
            text(reply[i + 1]),
            int(reply[i + 2]),
            decode_entry(text(reply[i + 3])),
            bool(int(reply[i + 4])),
            text(reply[i + 5]),
        )
        for i in range(5, len(reply), _LEASE_FIELDS)
    )
    wait = None if int(wait_ms) < 0 else int(wait_ms) / 1000
    return Claim(text(control), text(status), wait, int(reaped), int(dropped), leases)


@dataclass(frozen=True, slots=True)
class JobHost:
    """What the whole job met of one host (``Frontier.hosts``)."""

    too_fast: int = 0  # 429s it answered, with the learned pace on
    pace: float | None = None  # its learned delay in seconds; None when unknown or expired
    backoff_seconds: float = 0.0  # time it was paused by back-offs, overlaps counted once
    down: Unavailable | None = None  # the evidence, when it was given up on


@dataclass(frozen=True, slots=True)
class PaceRule:
    """The learned pace's settings and constants (politeness/pace.py), sent with each answer to
    the rule in Redis (pace_step, lua/_prelude.lua): its numbers are pace.py's alone."""

    floor: float = 0.3
    maximum: float = 10.0
    ease_after: int = 20
    min_step: float = MIN_STEP
    converged: float = CONVERGED
    forget_after: int = FORGET_AFTER

    def args(self) -> list[str | int]:
        """As complete.lua reads them (floats by repr: the same double in Lua)."""
        return [
            repr(float(self.floor)),
            repr(float(self.maximum)),
            self.ease_after,
            repr(float(self.min_step)),
            repr(float(self.converged)),
            self.forget_after,
        ]


@dataclass(frozen=True, slots=True)
class PaceEvent:
    """What the host's answer taught: ``"fast"`` (a 429) or ``"ok"`` (any other answer)."""

    kind: str
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class Then:
    """Claim ``n`` more leases in the same round trip as a completion."""

    n: int
    ttl: float


class Frontier(ClusterBoundary):
    subject = "frontier"

    def __init__(
        self, client: redis.Redis, job: str, *, owner: str, breaker: Breaker | None = None
    ) -> None:
        if not owner or "|" in owner:
            raise ClusterError(f"worker id {owner!r}: expected a non-empty id without '|'")
        self.keys = JobKeys(job)
        self.owner = owner
        self.link = Link(client)
        self.scripts = JobScripts(self.link, self.keys)
        self.breaker = breaker
        self.pace = PaceRule()

    @property
    def round_trips(self) -> int:
        return self.link.round_trips

    def push(self, items: Iterable[tuple[str, Task]], *, front: bool = False) -> int:
        """Queue tasks on their hosts (new rows at the back, marked as fed; ``front`` for
        hops and retries); rows already done are skipped. Returns how many were queued."""
        args: list[str | int] = ["1" if front else "0"]
        hosts: dict[str, None] = {}
        for host, task in items:
            args += [host, encode_entry(task)]
            hosts[host] = None
        if len(args) == 1:
            return 0
        return int(self.scripts.run("push", *args, hosts=hosts))

    def claim(self, n: int, *, ttl: float, delay: float) -> Claim:
        """Lease up to ``n`` ready hosts for ``ttl`` seconds. ``delay`` is this process's
        per-host delay, applied to hosts whose holder vanished."""
        reply = self.scripts.run("claim", self.owner, _ms(ttl), max(n, 0), _ms(delay), REAP_LIMIT)
        return _claim(reply)

    def complete_result(
        self,
        lease: Lease,
        line: str,
        *,
        delay: float,
        gap: float | None = None,
        then: Then | None = None,
        pace: PaceEvent | None = None,
    ) -> Completion:
        """The row's chain ended: ``line`` is its results.jsonl line. Committed at most once
        per row, whoever sends it and however often."""
        return self._complete(lease, "result", line, delay=delay, gap=gap, then=then, pace=pace)

    def complete_hop(
        self,
        lease: Lease,
        next_host: str,
        next_task: Task,
        *,
        delay: float,
        gap: float | None = None,
        then: Then | None = None,
        pace: PaceEvent | None = None,
    ) -> Completion:
        """The hop answered with a redirect: the next hop goes to the front of its host's
        queue (dropped when this lease had expired: the re-queued copy redoes the hop)."""
        entry = encode_entry(next_task)
        return self._complete(
            lease, "hop", entry, delay=delay, gap=gap, next_host=next_host, then=then, pace=pace
        )

    def complete_retry(
        self,
        lease: Lease,
        task: Task,
        *,
        delay: float,
        gap: float | None = None,
        backoff: float = 0.0,
        strikes: int = 0,
        then: Then | None = None,
        pace: PaceEvent | None = None,
    ) -> Completion:
        """Send ``task`` again, first in its host's queue, not before ``backoff`` seconds
        (the host is paused for every process)."""
        return self._complete(
            lease,
            "retry",
            encode_entry(task),
            delay=delay,
            gap=gap,
            backoff=backoff,
            strikes=strikes,
            then=then,
            pace=pace,
        )

    def commit(self, row: int, line: str) -> bool:
        """Commit a result that holds no lease: a row judged without a request (an invalid
        URL), or one whose lease was lost while its request ran. First result wins."""
        lease = Lease("", "", 0, Task(row, "", None, None, {}, ""))
        return self._complete(lease, "result", line, delay=0).committed

    def release(self, lease: Lease, *, delay: float) -> Completion:
        """Hand back a claimed task that was never sent."""
        return self._complete(lease, "release", "", delay=delay)

    def _complete(
        self,
        lease: Lease,
        kind: str,
        payload: str,
        *,
        delay: float,
        gap: float | None = None,
        backoff: float = 0.0,
        strikes: int = 0,
        next_host: str = "",
        then: Then | None = None,
        pace: PaceEvent | None = None,
    ) -> Completion:
        """``delay`` is the least time between two request starts to the host (DOWNLOAD_DELAY,
        AutoThrottle, Crawl-delay), ``gap`` the least time from this answer to the next start
        (DOWNLOAD_DELAY, Crawl-delay; ``delay`` when not given); Redis raises both to the
        host's learned pace."""
        retry_after = "-1" if pace is None or pace.retry_after is None else repr(pace.retry_after)
        reply = self.scripts.run(
            "complete",
            lease.host,
            lease.token,
            kind,
            _ms(delay),
            _ms(backoff),
            strikes,
            lease.task.row,
            payload,
            next_host,
            self.owner,
            _ms(then.ttl) if then else 0,
            then.n if then else 0,
            REAP_LIMIT,
            "" if pace is None else pace.kind,
            retry_after,
            *self.pace.args(),
            _ms(delay if gap is None else gap),
            hosts=(lease.host, next_host),
        )
        claim = _claim(reply[2:]) if then and then.n > 0 else None
        return Completion(bool(reply[0]), bool(reply[1]), claim)

    # --- the host circuit (urlcheck.cluster.circuit) -------------------------------------------

    def strike(self, host: str) -> int:
        """One more row of ``host`` exhausted its tries; returns its count in a row."""
        return int(self.link.call("HINCRBY", self.keys.key("strikes"), host, 1))

    def clear_strikes(self, host: str) -> None:
        self.link.call("HDEL", self.keys.key("strikes"), host)

    def give_up(self, host: str, evidence: str) -> tuple[bool, str]:
        """Give ``host`` up for the job unless it was already; returns whether this call did,
        and the evidence that stands (``"<since ms>|<evidence>"``)."""
        new, value = self.scripts.run("giveup", host, evidence, hosts=(host,))
        return bool(int(new)), text(value)

    def hosts(self) -> dict[str, JobHost]:
        """Every host the job slowed, paused or gave up on, whichever process met it: one call."""
        down, fast, backed, paces = self.scripts.run("hosts")
        pace = {text(host): text(value) for host, value in pairs(paces)}
        found: dict[str, dict[str, Any]] = {}
        for host, count in pairs(fast):
            learned = pace[text(host)]
            found[text(host)] = {
                "too_fast": int(count),
                "pace": float(learned) if learned else None,
            }
        for host, ms in pairs(backed):
            found.setdefault(text(host), {})["backoff_seconds"] = max(int(ms), 0) / 1000
        for host, value in pairs(down):
            found.setdefault(text(host), {})["down"] = decode_evidence(text(host), text(value))
        return {host: JobHost(**fields) for host, fields in sorted(found.items())}

    def renew(self, leases: Iterable[Lease], *, ttl: float, info: WorkerInfo | None) -> Renewal:
        args: list[str | int] = [self.owner, _ms(ttl), "" if info is None else info.to_json()]
        for lease in leases:
            args += [lease.host, lease.token]
        reply = self.scripts.run("renew", *args)
        return Renewal(text(reply[0]), text(reply[1]), frozenset(text(h) for h in reply[2:]))
