"""The store interface: all mutable state of a pool, changed only by whole, atomic calls.

`acquire`, `release`, `probe_result`, `due_probes` and `snapshot` are each one call that runs
atomically: the memory store holds a lock for its duration; the Redis store will run each as one
Lua script (keys under one hash tag, time from the server's TIME, values in ARGV). A call applies
the pool's policy (the pure rules in `health`, `blame`, `strategies` and `hashing`) to the state it
holds and returns what changed as events, which the pool logs.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ..config import PoolConfig
    from ..events import Event
    from ..outcome import Outcome
    from ..proxy import Proxy
    from ..snapshot import PoolSnapshot

__all__ = ["AcquireResult", "PoolStore", "StoreError"]


class StoreError(Exception):
    """The store could not run a call (connection lost, script error). The one error type that
    crosses the store boundary; the cause is chained."""


class AcquireResult(NamedTuple):
    lease_id: int
    proxy_id: str | None  # None: nothing to hand out (empty pool, or fail_closed)
    session_lost: bool  # the key's session ended because its proxy left service
    fallback: bool  # nothing was eligible; this is the least bad proxy
    events: Sequence[Event]


class PoolStore(ABC):
    """Holds the state; a `ProxyPool` holds the policy (its config and random source)."""

    config: PoolConfig
    rng: random.Random

    def open(self, config: PoolConfig, rng: random.Random) -> None:
        """Called once by the pool before any other call."""
        self.config = config
        self.rng = rng

    @abstractmethod
    def add_proxy(self, proxy: Proxy, now: float) -> Sequence[Event]:
        """Add a proxy (healthy), or update the spec of one with the same id, keeping its health."""

    @abstractmethod
    def remove_proxy(self, proxy_id: str, now: float) -> tuple[bool, Sequence[Event]]:
        """Forget a proxy. Its sessions end (reported on their next acquire); others are kept."""

    @abstractmethod
    def acquire(self, site: str, key: str | None, now: float) -> AcquireResult:
        """Atomically: reclaim expired leases, honour or end the key's session, choose a proxy,
        count the lease and (with a key) store the session, renewed for session_ttl."""

    @abstractmethod
    def release(
        self, lease_id: int, proxy_id: str, site: str, outcome: Outcome, now: float
    ) -> Sequence[Event]:
        """Atomically: end the lease and apply the outcome to the proxy, pair, site and pool."""

    @abstractmethod
    def end_session(self, key: str) -> bool:
        """Atomically: forget the key's sticky session (its next acquire starts a new one)."""

    @abstractmethod
    def due_probes(self, now: float) -> list[tuple[str, str]]:
        """Atomically: pick up to probe_batch (proxy id, control URL) due now, marked in flight."""

    @abstractmethod
    def probe_result(
        self, proxy_id: str, control_url: str, ok: bool, latency: float | None, now: float
    ) -> Sequence[Event]:
        """Atomically: apply one probe result."""

    @abstractmethod
    def snapshot(self, now: float) -> PoolSnapshot:
        """Atomically: a JSON-serialisable picture of the whole state."""

    def close(self) -> None:  # noqa: B027 - optional hook, nothing to do for most stores
        """Release connections; the memory store has none."""
