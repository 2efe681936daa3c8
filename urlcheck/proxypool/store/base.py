"""The store interface: what the processes of one pool share, changed only by atomic primitives.

A store holds the registry of proxies, leases (with a TTL), sticky sessions (with a TTL), each
proxy's state and each (site, proxy) bench. It holds no policy: `ProxyPool` judges outcomes with
the rules in `..policy` over its own books and commits the state changes it decides, guarded by
the store's generation (`gen`, bumped by every commit and membership change), so that two
processes cannot both take the last proxy the quarantine cap allows. A call whose `gen` argument
is behind the store's returns the newer shared state (`Shared`) with its result.

The memory store holds this in the process (one thread); the Redis store in Redis, one script or
one transaction per primitive, time from the server's ``TIME`` (see docs/proxypool.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from urlcheck.proxypool.config import PoolConfig
    from urlcheck.proxypool.policy.choosing import Choice
    from urlcheck.proxypool.proxy import Proxy
    from urlcheck.proxypool.rules.health import State

__all__ = [
    "Acquired",
    "Committed",
    "Heard",
    "PoolStore",
    "Reclaimed",
    "Released",
    "Report",
    "Shared",
    "StoreError",
    "StoreUnavailable",
    "cap_of",
]


class StoreUnavailable(Exception):  # noqa: N818 - named for what the caller does about it
    """The store could not run a call (connection refused or lost, timeout, script error): the
    one error type that crosses the store boundary, with the cause chained. The call had no
    effect that the pool must know of; retry it later."""


StoreError = StoreUnavailable  # the earlier name


@dataclass(frozen=True, slots=True)
class Shared:
    """The shared state at generation `gen`: every proxy's (state, quarantined until), the
    benches in force, and the registry (None: unchanged since the caller last saw it)."""

    gen: int
    states: dict[str, tuple[State, float]]
    benches: dict[tuple[str, str], float]  # (site, proxy id) -> benched until
    proxies: dict[str, Proxy] | None
    reset: bool = False  # the store lost its state (a Redis restarted without persistence)


# Plain tuples on the hot path (a NamedTuple costs more to build than the rest of a memory
# store call), unpacked at once by the pool:
#: (lease id, proxy id or None when there is nothing to hand out (empty pool, or fail_closed),
#: session lost (the key's proxy left service), fallback (nothing was eligible: the least bad),
#: newer shared state when the caller's generation was behind, capped (nothing was lent because
#: the fallback is at its lease cap and caps are hard: other processes hold its leases))
Acquired = tuple[int, str | None, bool, bool, Shared | None, bool]
#: newer shared state, when the caller's generation was behind (a store that answers a release
#: later, with its next call, returns None: the next call's reply carries any newer state)
Released = Shared | None
#: this process's leases reclaimed (lease id, proxy id), and newer shared state (as `Released`)
Reclaimed = tuple[list[tuple[int, str]], Shared | None]
#: An outcome as the fleet shares it: (site, code, latency), sent with the release.
Report = tuple[str, int, float | None]
#: Another process's outcome, read from the store: (proxy id, site, code, latency, when).
Heard = tuple[str, str, int, float | None, float]


class Committed(NamedTuple):
    ok: bool  # False: another process committed first; nothing was written
    gen: int
    shared: Shared | None  # on a conflict, the state that won


def cap_of(proxy: Proxy, config: PoolConfig) -> int:
    """A proxy's lease cap (0: none)."""
    return proxy.max_concurrent if proxy.max_concurrent is not None else config.max_concurrent


class PoolStore(ABC):
    """Shared state and atomic primitives; see the module docstring."""

    #: True when other processes share the store: `acquire` then wants alternates in its
    #: `Choice`, as the caller's view of caps and benches may be behind; `release` takes the
    #: outcome (`Report`) for the other processes, and the store's answers bring theirs
    #: (`inbox`).
    shared_by_processes = False
    #: Other processes' outcomes that came with the store's answers since the pool last
    #: looked (oldest first): the pool judges them on its books as if they were its own, so
    #: that every process judges from everyone's outcomes. Always empty for a store of one
    #: process.
    inbox: list[Heard]
    #: Leases held per proxy across processes, as the store last told (None: not told; a
    #: store of one process, whose counts are the pool's own).
    fleet_active: dict[str, int] | None = None

    @property
    def round_trips(self) -> int:
        """Calls that waited for a server's answer (the Redis store counts them)."""
        return 0

    @property
    def commands(self) -> int:
        """Commands sent, answered at once or with a later call (likewise)."""
        return 0

    def open(self, config: PoolConfig) -> None:
        """Called once by the pool before any other call."""
        self.config = config
        self.inbox = []

    # ---------------------------------------------------------------- registry

    @abstractmethod
    def add_proxy(self, proxy: Proxy) -> tuple[bool, int]:
        """Register a proxy (healthy) or replace the spec of a known id, keeping its state.
        Returns (new, the generation after the change)."""

    @abstractmethod
    def remove_proxy(self, proxy_id: str) -> tuple[bool, int]:
        """Forget a proxy, its state and its lease count; its sessions end on their next use.
        Returns (removed, the generation after the change)."""

    @abstractmethod
    def load(self, now: float) -> Shared:
        """The whole shared state now."""

    # ---------------------------------------------------------------- leases and sessions

    @abstractmethod
    def acquire(
        self, site: str, key: str | None, choose: Callable[[bool], Choice], now: float, gen: int
    ) -> Acquired:
        """Atomically: keep the key's session if its proxy is registered, in service and not
        benched for the site (renewed for session_ttl; never rotated, even when full), else take
        the first id of ``choose()`` that is in service, not benched and under its cap, else its
        `forced` id (under its cap when `hard_lease_cap` is set); lease it for lease_ttl
        and, with a key and no fallback, store the session.
        ``choose(False)`` may be called before the session is looked at (a remote store sends
        the choice with the call); ``choose(True)`` when no id of the first choice was usable
        (the fallback: costs a remote store a second call, rare)."""

    @abstractmethod
    def release(
        self, lease_id: int, proxy_id: str, now: float, gen: int, report: Report | None = None
    ) -> Released:
        """Atomically: end the lease, if it has not expired (one that has was ended by
        `reclaim`), and, from a store that processes share, append `report` (the outcome) to
        the fleet's outcome log, stamped `now`, for the other processes' `inbox`: a failure at
        once, a success at the latest with the next failure, `reclaim`, `flush` or `close`, or
        a second later (the Redis store tells successes in batches). A remote store may send it
        and return without waiting for the answer, which it then reads with its next call: the
        release still takes effect at once."""

    @abstractmethod
    def reclaim(self, now: float, gen: int) -> Reclaimed:
        """End the leases past their TTL; returns this process's own (lease id, proxy id),
        and the shared state when the store has moved past `gen` (else None). A shared store
        also brings the news (`inbox`) and the lease counts (`fleet_active`): the pool calls
        it once a second, so none of them is ever older than that."""

    @abstractmethod
    def end_session(self, key: str) -> bool:
        """Forget the key's sticky session (its next acquire starts a new one)."""

    @abstractmethod
    def usage(self, now: float) -> tuple[int, int]:
        """(leases held, live sessions), across processes."""

    # ---------------------------------------------------------------- states

    @abstractmethod
    def commit(
        self,
        gen: int,
        states: dict[str, tuple[State, float]],
        benches: Sequence[tuple[str, str, float]],
        now: float,
    ) -> Committed:
        """Atomically, if the store is still at `gen`: write proxies' (state, until) and
        (site, proxy id, until) benches, and bump the generation."""

    @abstractmethod
    def claim_probes(self, proxy_ids: Sequence[str], now: float, ttl: float) -> list[str]:
        """Of these proxies, those no other process is probing now; claimed for `ttl`."""

    def flush(self) -> None:  # noqa: B027 - optional hook, nothing held back in most stores
        """Append the outcomes held back to the fleet's log now (see `release`)."""

    def end_probe(self, proxy_id: str) -> None:  # noqa: B027 - optional hook
        """The probe of this proxy is over: another process may probe it."""

    def close(self) -> None:  # noqa: B027 - optional hook, nothing to do for most stores
        """Release connections; the memory store has none."""
