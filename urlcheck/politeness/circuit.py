"""Per-host circuit: a host that is down for everyone stops costing a back-off ladder per row.

A host in maintenance answers 503 to every request; with the back-off ladder (30 + 60 + 120 s)
each of its rows takes 3.5 minutes, so 60 rows took 3.5 hours. Once ``down_after`` rows of a
host in a row have exhausted their tries (429/503 after every retry, or a network error on
every try) with no other kind of answer from that host in between, the host is *unavailable*
for the rest of the run: its remaining rows are recorded at once, without requests, with the
evidence. Any other answer from the host (a 200, a 301, a 404, ...) resets the count.

This module knows nothing of Scrapy or Redis:
:class:`urlcheck.middlewares.circuit.HostCircuitMiddleware` feeds it and applies it. The counts
and the evidence live in a :class:`CircuitStore`: this process's memory
(:class:`MemoryCircuitStore`), or the job's Redis in distributed mode
(:class:`urlcheck.cluster.circuit.RedisCircuitStore`), so a host given up on by one process is
given up on by all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from urlcheck.clock import utc_iso

if TYPE_CHECKING:
    from urlcheck.clock import Clock


@dataclass(frozen=True, slots=True)
class Strike:
    """How one row ended after its last try."""

    status: int | None = None  # 429/503 ...
    error: str | None = None  # or a network error kind: timeout, connect, dns, ...
    retry_after: float | None = None
    tries: int = 1


@dataclass(frozen=True, slots=True)
class Unavailable:
    """The evidence a host was given up on."""

    host: str
    rows: int  # rows in a row that exhausted their tries
    last: Strike
    since: float  # wall-clock time it was given up on

    def message(self) -> str:
        last = self.last
        what = f"answered {last.status}" if last.status is not None else f"failed ({last.error})"
        tries = "the only try" if last.tries == 1 else f"all {last.tries} tries"
        hint = "" if last.retry_after is None else f", last Retry-After {last.retry_after:.0f} s"
        return (
            f"host {self.host} unavailable: {self.rows} rows in a row {what} on {tries}"
            f"{hint}; not requested"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows_tried": self.rows,
            "last_status": self.last.status,
            "last_error": self.last.error,
            "retry_after": self.last.retry_after,
            "tries_per_row": self.last.tries,
            "since": utc_iso(self.since, timespec="auto"),
        }


class CircuitStore(Protocol):
    """Where the circuit keeps its counts and evidence; each call is one atomic step."""

    def strike(self, host: str) -> int:
        """Count one more row of ``host`` that exhausted its tries; returns the count in a row
        (0 when the store could not count it: the host is then not given up on)."""

    def clear(self, host: str) -> None:
        """``host`` answered: its count in a row starts again."""

    def give_up(self, down: Unavailable) -> tuple[Unavailable, bool]:
        """Record ``down`` unless its host was given up on already; returns the evidence that
        stands and whether it is ``down`` (this call gave the host up)."""

    def get(self, host: str) -> Unavailable | None: ...

    def all(self) -> list[Unavailable]: ...


class MemoryCircuitStore:
    """One process's circuit (the single-process crawl)."""

    def __init__(self) -> None:
        self._strikes: dict[str, int] = {}
        self._down: dict[str, Unavailable] = {}

    def strike(self, host: str) -> int:
        count = self._strikes[host] = self._strikes.get(host, 0) + 1
        return count

    def clear(self, host: str) -> None:
        self._strikes.pop(host, None)

    def give_up(self, down: Unavailable) -> tuple[Unavailable, bool]:
        standing = self._down.get(down.host)
        if standing is not None:
            return standing, False
        self._strikes.pop(down.host, None)
        self._down[down.host] = down
        return down, True

    def get(self, host: str) -> Unavailable | None:
        return self._down.get(host)

    def all(self) -> list[Unavailable]:
        return list(self._down.values())


class HostCircuit:
    def __init__(
        self, down_after: int = 2, clock: Clock = time.time, store: CircuitStore | None = None
    ) -> None:
        self.down_after = down_after  # 0: never give a host up
        self.clock = clock
        self.store: CircuitStore = MemoryCircuitStore() if store is None else store

    def answered(self, host: str) -> None:
        """The host gave an answer other than exhausting a row's tries."""
        self.store.clear(host)

    def exhausted(self, host: str, strike: Strike) -> Unavailable | None:
        """A row of ``host`` ended after its last try with ``strike``; returns the evidence when
        this makes the host unavailable (once per host and store)."""
        if not self.down_after or self.store.get(host) is not None:
            return None
        count = self.store.strike(host)
        if count < self.down_after:
            return None
        down, new = self.store.give_up(Unavailable(host, count, strike, self.clock()))
        return down if new else None

    def unavailable(self, host: str) -> Unavailable | None:
        return self.store.get(host)

    def hosts(self) -> list[Unavailable]:
        return sorted(self.store.all(), key=lambda d: d.since)


class HostUnavailableError(Exception):
    """A request was not sent: its host has been given up on for this run."""

    def __init__(self, unavailable: Unavailable) -> None:
        self.unavailable = unavailable
        super().__init__(unavailable.message())
