"""The leases this process holds, on its own clock: which to renew, which are still safe to send.

Redis decides when a lease expires; this process only knows a lower bound of that deadline: the
time it *sent* the claim or renewal plus the TTL (the script ran later than that). A request is
sent only while that bound is comfortably ahead, so a process that stalled longer than its TTL
drops the request instead of sending it next to the copy another process now holds.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from urlcheck.clock import Clock
    from urlcheck.cluster.frontier import Lease


@dataclass(slots=True)
class Held:
    lease: Lease
    deadline: float  # local clock; the lease lasts at least until then
    sent: bool = False
    finished_at: float | None = None  # the request left the downloader


class LeaseBook:
    def __init__(self, ttl: float, *, margin: float = 5.0, clock: Clock = time.monotonic) -> None:
        if ttl <= margin:
            raise ValueError(f"lease TTL {ttl} s must exceed the safety margin {margin} s")
        self.ttl = ttl
        self.margin = margin
        self.clock = clock
        self._held: dict[int, Held] = {}  # row -> lease (a row has one live task)

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, row: object) -> bool:
        return row in self._held

    def add(self, leases: Iterable[Lease], asked_at: float) -> None:
        for lease in leases:
            self._held[lease.task.row] = Held(lease, asked_at + self.ttl)

    def get(self, row: int) -> Lease | None:
        held = self._held.get(row)
        return None if held is None else held.lease

    def pop(self, row: int) -> Lease | None:
        held = self._held.pop(row, None)
        return None if held is None else held.lease

    def safe_to_send(self, row: int) -> bool:
        held = self._held.get(row)
        return held is not None and held.deadline - self.clock() > self.margin

    def sent(self, row: int) -> None:
        held = self._held.get(row)
        if held is not None:
            held.sent = True

    def finished(self, row: int) -> None:
        """Its download ended; the callback's outcome (hop, retry or result) follows at once."""
        held = self._held.get(row)
        if held is not None:
            held.finished_at = self.clock()

    def awaiting_outcome(self, *, within: float = 10.0) -> int:
        """Leases whose download ended moments ago: each will complete, and claim in the same
        round trip, for the place it freed."""
        now = self.clock()
        return sum(
            1
            for held in self._held.values()
            if held.finished_at is not None and now - held.finished_at < within
        )

    def renewable(self, *, stuck_after: float = 60.0) -> list[Lease]:
        """Leases to extend. One whose download ended long ago with no outcome (a callback that
        raised) is left to expire, so Redis gives the row to someone else."""
        now = self.clock()
        return [
            held.lease
            for held in self._held.values()
            if held.finished_at is None or now - held.finished_at < stuck_after
        ]

    def renewed(self, leases: Iterable[Lease], asked_at: float, lost: Iterable[str]) -> list[Lease]:
        """Apply a renewal sent at ``asked_at``; returns the leases lost (reaped by Redis)."""
        lost_hosts = set(lost)
        dropped: list[Lease] = []
        for lease in leases:
            held = self._held.get(lease.task.row)
            if held is None or held.lease.token != lease.token:
                continue
            if lease.host in lost_hosts:
                del self._held[lease.task.row]
                dropped.append(lease)
            else:
                held.deadline = asked_at + self.ttl
        return dropped

    def unsent(self) -> list[Lease]:
        return [held.lease for held in self._held.values() if not held.sent]
