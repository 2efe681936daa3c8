"""`ProxyPool`: the one object callers use. It holds the policy (config, clock, random source),
turns store results into leases and probe tasks, and logs every event once."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .clock import Clock, system_clock
from .config import PoolConfig
from .events import (
    ControlUrlChanged,
    Event,
    LeasesReclaimed,
    OurSideFault,
    PairBenched,
    SiteFault,
    Transition,
)
from .health import State
from .probes import ProbeTask
from .proxy import Proxy
from .store.memory import MemoryStore

if TYPE_CHECKING:
    from .outcome import Outcome
    from .snapshot import PoolSnapshot
    from .store.base import PoolStore

__all__ = ["Lease", "NoProxyAvailableError", "ProxyPool"]

logger = logging.getLogger(__name__)


class NoProxyAvailableError(LookupError):
    """The pool is empty, or nothing is eligible and `fail_closed` is set."""


@dataclass(slots=True, eq=False)
class Lease:
    """One use of one proxy, from `acquire` to `release`.

    ``session_lost`` is set when the caller's key had a session whose proxy left service: the
    caller should drop what it tied to that session (cookies, state) before using this proxy.
    ``fallback`` is set when nothing was eligible and this is the least bad proxy.
    """

    id: int
    proxy: Proxy
    site: str
    key: str | None
    session_lost: bool
    fallback: bool
    acquired_at: float
    released: bool = field(default=False, repr=False)


class ProxyPool:
    """A pool of proxies with health, blame, quarantine and sticky sessions.

    Usage: ``lease = pool.acquire("example.com")``, send the request through ``lease.proxy``,
    then ``pool.release(lease, Outcome(status=200, latency=0.4))``.
    """

    def __init__(
        self,
        proxies: Iterable[Proxy | str] = (),
        config: PoolConfig | None = None,
        *,
        store: PoolStore | None = None,
        clock: Clock = system_clock,
        seed: int | None = None,
    ) -> None:
        self.config = config if config is not None else PoolConfig()
        self._clock = clock
        self._store = store if store is not None else MemoryStore()
        self._store.open(self.config, random.Random(seed))
        self._proxies: dict[str, Proxy] = {}
        self._listeners: list[Callable[[Event], object]] = []
        for proxy in proxies:
            self.add(proxy)

    # ---------------------------------------------------------------- membership

    def add(self, proxy: Proxy | str) -> Proxy:
        """Add a proxy (a `Proxy` or a spec line); an existing id gets the new spec, same health."""
        if isinstance(proxy, str):
            proxy = Proxy.parse(proxy)
        known = proxy.id in self._proxies
        self._proxies[proxy.id] = proxy
        self._log(self._store.add_proxy(proxy, self._clock()))
        if not known:
            logger.info("proxy %s added", proxy.id)
        return proxy

    def remove(self, proxy_id: str) -> bool:
        """Remove a proxy; only its own sessions end. False if it was not in the pool."""
        removed, events = self._store.remove_proxy(proxy_id, self._clock())
        self._proxies.pop(proxy_id, None)
        self._log(events)
        if removed:
            logger.info("proxy %s removed", proxy_id)
        return removed

    @property
    def proxies(self) -> tuple[Proxy, ...]:
        return tuple(self._proxies.values())

    def get(self, proxy_id: str) -> Proxy | None:
        return self._proxies.get(proxy_id)

    # ---------------------------------------------------------------- leases

    def acquire(self, site: str, key: str | None = None) -> Lease:
        """Lease a proxy for one request to `site` (the target host).

        With `key`, the lease is sticky: the key keeps its proxy for the session's life
        (session_ttl, renewed on use). If that proxy left service, the session ends, the lease
        says ``session_lost`` and a new session starts. Raises `NoProxyAvailableError` when the pool
        is empty, or when nothing is eligible and `fail_closed` is set.
        """
        now = self._clock()
        result = self._store.acquire(site, key, now)
        if result.events:
            self._log(result.events)
        if result.proxy_id is None:
            raise NoProxyAvailableError(
                "no proxy in the pool" if not self._proxies else f"no eligible proxy for {site}"
            )
        proxy = self._proxies[result.proxy_id]
        if result.session_lost:
            logger.debug("session for key on %s lost; now on %s", site, proxy.id)
        return Lease(result.lease_id, proxy, site, key, result.session_lost, result.fallback, now)

    def release(self, lease: Lease, outcome: Outcome) -> None:
        """Return a lease with how the request ended. Releasing twice is ignored."""
        if lease.released:
            logger.warning("lease %d on %s released twice; ignored", lease.id, lease.proxy.id)
            return
        lease.released = True
        events = self._store.release(lease.id, lease.proxy.id, lease.site, outcome, self._clock())
        if events:
            self._log(events)

    def end_session(self, key: str) -> bool:
        """End the key's sticky session now, e.g. after a block: a visitor that was shown a
        captcha is not moved to another proxy mid-session; the next acquire starts afresh."""
        ended = self._store.end_session(key)
        if ended:
            logger.debug("sticky session ended on request")
        return ended

    # ---------------------------------------------------------------- probes

    def due_probes(self, now: float | None = None) -> list[ProbeTask]:
        """Probes to send now (at most `probe_batch`); report each with `report_probe`."""
        when = self._clock() if now is None else now
        tasks = []
        for proxy_id, url in self._store.due_probes(when):
            proxy = self._proxies.get(proxy_id)
            if proxy is not None:
                tasks.append(ProbeTask(proxy, url))
        return tasks

    def report_probe(
        self, proxy_id: str, control_url: str, ok: bool, latency: float | None = None
    ) -> None:
        """The result of a probe: `ok` is a 2xx answer from `control_url` through the proxy."""
        self._log(self._store.probe_result(proxy_id, control_url, ok, latency, self._clock()))

    # ---------------------------------------------------------------- metrics

    def snapshot(self) -> PoolSnapshot:
        """A JSON-serialisable picture of the pool (format: docs/proxypool.md)."""
        return self._store.snapshot(self._clock())

    def close(self) -> None:
        self._store.close()

    # ---------------------------------------------------------------- logging

    def subscribe(self, listener: Callable[[Event], object]) -> None:
        """Call ``listener(event)`` for every event (transitions, benches, faults), after it is
        logged: how a framework turns them into its own metrics."""
        self._listeners.append(listener)

    def _log(self, events: Sequence[Event]) -> None:
        for event in events:
            self._log_one(event)
            for listener in self._listeners:
                listener(event)

    def _log_one(self, event: Event) -> None:
        if isinstance(event, Transition):
            level = logging.INFO
            if event.new is State.DEAD and "407" in event.reason:
                level = logging.WARNING  # wrong credentials: a configuration mistake
            logger.log(
                level,
                "proxy %s: %s -> %s (%s)",
                event.proxy_id,
                event.old.value,
                event.new.value,
                event.reason,
            )
        elif isinstance(event, PairBenched):
            logger.info(
                "proxy %s benched for site %s for %.0fs (%s)",
                event.proxy_id,
                event.site,
                event.seconds,
                event.reason,
            )
        elif isinstance(event, SiteFault):
            if event.at_fault:
                logger.warning(
                    "site %s is at fault, no proxy is blamed for it: %s",
                    event.site,
                    event.reason,
                )
            else:
                logger.info("site %s works again: %s", event.site, event.reason)
        elif isinstance(event, OurSideFault):
            if event.active:
                logger.error(
                    "ALERT: failures span all proxies and sites; the fault is on our side "
                    "(network, probe targets). Quarantines are frozen: %s",
                    event.reason,
                )
            else:
                logger.warning("our side works again, quarantines resume: %s", event.reason)
        elif isinstance(event, LeasesReclaimed):
            logger.warning(
                "%d leases were never released and expired (a caller crashed or leaks)",
                event.count,
            )
        elif isinstance(event, ControlUrlChanged):
            if event.broken:
                logger.warning(
                    "control URL %s looks broken (%s); its failures count against no proxy",
                    event.url,
                    event.reason,
                )
            else:
                logger.info("control URL %s works again", event.url)
