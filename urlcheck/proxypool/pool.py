"""``ProxyPool``: the one object callers use. It runs the policy (``policy``) on this process's
books between the store's atomic calls, commits the state changes it decides, and logs every
event once."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from urlcheck.proxypool.clock import Clock, system_clock
from urlcheck.proxypool.config import PoolConfig
from urlcheck.proxypool.events import (
    Event,
    EventLog,
    FallbackLease,
    LeasesReclaimed,
    PairBenched,
    Transition,
)
from urlcheck.proxypool.policy import choosing, outcomes, probing, report, sessions, states, upkeep
from urlcheck.proxypool.policy.books import Books
from urlcheck.proxypool.proxy import Proxy
from urlcheck.proxypool.rules.health import State
from urlcheck.proxypool.rules.outcome import classify
from urlcheck.proxypool.rules.probes import ProbeTask
from urlcheck.proxypool.store.base import StoreUnavailable
from urlcheck.proxypool.store.memory import MemoryStore

if TYPE_CHECKING:
    from urlcheck.proxypool.policy.books import PairRec
    from urlcheck.proxypool.rules.outcome import Outcome
    from urlcheck.proxypool.snapshot import PoolSnapshot
    from urlcheck.proxypool.store.base import PoolStore, Shared

__all__ = ["Lease", "LeaseCapReached", "NoProxyAvailableError", "ProxyPool", "SessionLost"]

logger = logging.getLogger(__name__)


class NoProxyAvailableError(LookupError):
    """The pool is empty, or nothing is eligible and ``fail_closed`` is set."""


class LeaseCapReached(NoProxyAvailableError):  # noqa: N818 - named for what happened
    """Every proxy is at its lease cap (``hard_lease_cap``), or the sticky key's proxy is: a
    lease comes free when a request ends, so the caller may wait and try again."""


class SessionLost(NoProxyAvailableError):  # noqa: N818 - named for what happened
    """The sticky key's proxy left service, or is benched for the site, and ``session_loss``
    is ``end``: the session ended, nothing was lent. The request is not sent from another
    address; the key's next acquire starts a new session."""


@dataclass(slots=True, eq=False)
class Lease:
    """One use of one proxy, from ``acquire`` to ``release``.

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
    epoch: int = field(default=0, repr=False)  # the pool's store epoch when it was lent
    released: bool = field(default=False, repr=False)


class ProxyPool:
    """A pool of proxies with health, blame, quarantine and sticky sessions.

    Usage: ``lease = pool.acquire("example.com")``, send the request through ``lease.proxy``,
    then ``pool.release(lease, Outcome(status=200, latency=0.4))``.

    The policy runs here, on this process's books (``policy``); the store holds what processes
    share. Store calls raise ``StoreUnavailable`` when the store cannot be reached: nothing was
    changed, the call may be retried.
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
        self._store.open(self.config)
        self._books = Books(self.config, random.Random(seed))
        self._pick = choosing.picker(self.config.strategy)
        self._alternates = self._store.shared_by_processes
        self._end_lost = self.config.session_loss == "end"
        self._choose = self._choice
        self._asking: tuple[dict[str, PairRec], str | None, float] = ({}, None, 0.0)
        self._listeners: list[Callable[[Event], object]] = []
        self._event_log = EventLog(clock)
        self._gen = -1
        # Our leases that expired and were counted off our books, in case they are released
        # late: whether a release ended a lease is not waited for (a remote store answers it
        # with its next call), so the books decide. A lease another process reclaimed is
        # counted off at its release. (A lease never released leaves its id here: a leak the
        # reclaim warning has already reported.)
        self._reclaimed: set[int] = set()
        self._epoch = 0  # bumped when the store loses its state: leases lent before are gone
        self._adopt(self._store.load(self._clock()))
        for proxy in proxies:
            self.add(proxy)

    # ---------------------------------------------------------------- membership

    def add(self, proxy: Proxy | str) -> Proxy:
        """Add a proxy (a ``Proxy`` or a spec line); an existing id gets the new spec and keeps
        its health."""
        if isinstance(proxy, str):
            proxy = Proxy.parse(proxy)
        _, gen = self._store.add_proxy(proxy)
        self._follow(gen)
        if states.add(self._books, proxy, self._clock()):
            logger.info("proxy %s added", proxy.id)
        return proxy

    def remove(self, proxy_id: str) -> bool:
        """Remove a proxy; only its own sessions end. False if it was not in the pool."""
        removed, gen = self._store.remove_proxy(proxy_id)
        self._follow(gen)
        events: list[Event] = []
        removed = states.remove(self._books, proxy_id, self._clock(), events) or removed
        self._settle(events)
        if removed:
            logger.info("proxy %s removed", proxy_id)
        return removed

    @property
    def proxies(self) -> tuple[Proxy, ...]:
        return tuple(rec.proxy for rec in self._books.proxies.values())

    def get(self, proxy_id: str) -> Proxy | None:
        rec = self._books.proxies.get(proxy_id)
        return rec.proxy if rec is not None else None

    # ---------------------------------------------------------------- leases

    def acquire(self, site: str, key: str | None = None) -> Lease:
        """Lease a proxy for one request to ``site`` (the target host).

        With ``key``, the lease is sticky: the key keeps its proxy for the session's life
        (session_ttl, renewed on use). If that proxy left service, the session ends, the lease
        says ``session_lost`` and a new session starts. If it is only benched for ``site``, only
        that site's requests move, to a stand-in of their own (the first such lease says
        ``session_lost``). Raises ``NoProxyAvailableError`` when the pool
        is empty, or when nothing is eligible and ``fail_closed`` is set.
        """
        now = self._clock()
        books = self._books
        events: list[Event] | None = None
        if now >= books.next_maintenance or books.deferred:
            events, books.deferred = books.deferred, []
            self._maintain(now, events)
        # in sight from its first request: a failure's row is judged against the sites the
        # crawl visits, not only those that answered so far
        site_rec = books.sites.get(site)
        pairs = (site_rec if site_rec is not None else books.site(site, now)).pairs
        self._asking = pairs, key, now  # for `_choice`, which the store calls
        asked, moved = key, False
        if key is not None:
            asked, moved = sessions.session_key(books, key, site, pairs, now)
            if moved and self._end_lost:
                if events:
                    self._settle(events)
                raise SessionLost(f"the sticky session's proxy is benched for {site}")
        store = self._store
        lease_id, proxy_id, lost, fallback, shared, capped = store.acquire(
            site, asked, self._choose, now, self._gen
        )
        if shared is not None:
            self._adopt(shared)
            if proxy_id is None and not capped and not lost:  # chosen from stale books: again
                lease_id, proxy_id, lost, fallback, _, capped = store.acquire(
                    site, asked, self._choose, now, self._gen
                )
        if store.inbox:
            self._hear(events if events is not None else [])
        elif events:
            self._settle(events)
        if proxy_id is None:
            if lost and self._end_lost:
                if key is not None:
                    sessions.end(books, key)
                raise SessionLost(f"the sticky session's proxy left service ({site})")
            if not books.proxies:
                raise NoProxyAvailableError("no proxy in the pool")
            full = all(r.cap and r.active >= r.cap for r in books.proxies.values())
            if capped or full:
                why = "every proxy is at its lease cap"
                if key is not None and not full:
                    why = "the sticky session's proxy is at its lease cap"
                raise LeaseCapReached(f"no eligible proxy for {site}: {why}")
            raise NoProxyAvailableError(f"no eligible proxy for {site}")
        rec = books.proxies.get(proxy_id)
        if rec is None:  # added by another process since we last looked
            self._adopt(self._store.load(now))
            rec = books.proxies[proxy_id]
        rec.active += 1
        rec.last_used = now
        if fallback:
            self._log((FallbackLease(rec.id, site, rec.state),))
        lost = lost or moved
        if key is not None and asked == key and not fallback:
            sessions.note(books, key, rec.id)
        if lost:
            logger.debug("session for key on %s lost; now on %s", site, rec.id)
        return Lease(lease_id, rec.proxy, site, key, lost, fallback, now, self._epoch)

    def _choice(self, exhausted: bool = False) -> choosing.Choice:
        """The policy's choice for the acquire in progress (``_asking``), asked by the store when
        it needs one. A method bound once, not a closure per acquire: that cost 3% of a pair."""
        pairs, key, now = self._asking
        if key is None and not exhausted and not self._alternates:  # the common case, inlined
            rec = self._pick(self._books, pairs, now)
            if rec is not None:
                return (rec.id,), None
            exhausted = True  # nothing usable: only the fallback is left
        return choosing.choose(
            self._books, self._pick, pairs, key, now, self._alternates, exhausted
        )

    def release(self, lease: Lease, outcome: Outcome | None) -> None:
        """Return a lease with how the request ended. Releasing twice is ignored.

        ``None``: the request never reached the proxy (refused on our side, e.g. by the
        address guard): the lease ends and nothing is judged, for the proxy or the site."""
        if lease.released:
            logger.warning("lease %d on %s released twice; ignored", lease.id, lease.proxy.id)
            return
        now = self._clock()
        code = classify(outcome) if outcome is not None else 0
        # A lease lent before the store lost its state is not there to end. A store that
        # processes share takes the outcome too, for the others to judge.
        report = (
            (lease.site, code, outcome.latency)
            if self._alternates and outcome is not None
            else None
        )
        shared = (
            self._store.release(lease.id, lease.proxy.id, now, self._gen, report)
            if lease.epoch == self._epoch
            else None
        )
        lease.released = True
        if shared is not None:
            self._adopt(shared)
        rec = self._books.proxies.get(lease.proxy.id)
        if rec is None:
            return
        if lease.epoch != self._epoch:
            pass  # lent before the store lost its state: counted off then (`_restore`)
        elif self._reclaimed and lease.id in self._reclaimed:
            self._reclaimed.discard(lease.id)  # counted off when it expired
        elif rec.active:  # (not below 0 for a lease of a proxy removed and added again)
            rec.active -= 1
        if outcome is None:
            return
        events = outcomes.record(self._books, rec, lease.site, code, outcome.latency, now)
        if events:
            self._settle(events)

    def end_session(self, key: str) -> bool:
        """End the key's sticky session now, e.g. after a block: a visitor that was shown a
        captcha is not moved to another proxy mid-session; the next acquire starts afresh."""
        ended = self._store.end_session(key)
        for stand_in in sessions.end(self._books, key):
            self._store.end_session(stand_in)
        if ended:
            logger.debug("sticky session ended on request")
        return ended

    # ---------------------------------------------------------------- probes

    def due_probes(self, now: float | None = None) -> list[ProbeTask]:
        """Probes to send now (at most ``probe_batch``); report each with ``report_probe``. With a
        shared store, a proxy is probed by one process at a time."""
        when = self._clock() if now is None else now
        due = probing.due_probes(self._books, when)
        if not due:
            return []
        claimed = set(
            self._store.claim_probes([pid for pid, _ in due], when, self.config.probe_timeout)
        )
        control = self._books.control
        return [
            ProbeTask(self._books.proxies[pid].proxy, url, control[url].method)
            for pid, url in due
            if pid in claimed
        ]

    def add_probe_target(self, url: str) -> bool:
        """Offer one of the crawl's own URLs (the first of a host, say) as a probe target.

        Taken when no control URL is configured and fewer than ``probe_targets`` are known: then
        probes are sent as HEAD requests for it, and any answer of the site passes. True: taken.
        """
        return probing.add_target(self._books, url)

    @property
    def wants_probe_targets(self) -> bool:
        """Would ``add_probe_target`` take a new URL now?"""
        return probing.wants_targets(self._books)

    def report_probe(
        self, proxy_id: str, control_url: str, ok: bool, latency: float | None = None
    ) -> None:
        """The result of a probe: ``ok`` is a 2xx answer from a control URL through the proxy, or
        any answer of the site for a probe target (see ``ProbeTask``)."""
        self._store.end_probe(proxy_id)
        events = probing.probe_result(
            self._books, proxy_id, control_url, ok, latency, self._clock()
        )
        self._settle(events)

    # ---------------------------------------------------------------- metrics

    def snapshot(self) -> PoolSnapshot:
        """A JSON-serialisable picture of the pool (format: docs/proxypool.md)."""
        now = self._clock()
        if now >= self._books.next_maintenance or self._alternates:
            # a shared store: up to date with the fleet (its outcomes, its lease counts)
            events, self._books.deferred = self._books.deferred, []
            self._maintain(now, events)
            self._settle(events)
        leases, sessions = self._store.usage(now)
        # the fleet's lease counts per proxy, as the store told them just now (a store of one
        # process: the books' own)
        return report.snapshot(self._books, now, leases, sessions, self._store.fleet_active)

    def flush(self) -> None:
        """Tell the fleet now the outcomes this process still holds back: a shared store sends
        successes in batches, at the latest a second later while the process works
        (docs/proxypool.md, *One fleet, one judgement*). For a process that stops calling the
        pool but goes on; `close()` does it too."""
        self._store.flush()

    def close(self) -> None:
        self._store.close()

    # ---------------------------------------------------------------- shared state

    def _maintain(self, now: float, events: list[Event]) -> None:
        books = self._books
        store = self._store
        reclaimed = 0
        expired, shared = store.reclaim(now, self._gen)
        if shared is not None:
            # states another process committed since our last call: a process that only
            # watches (snapshots, probes) shows them too
            self._adopt(shared)
        for lease_id, proxy_id in expired:
            rec = books.proxies.get(proxy_id)
            if rec is not None:
                rec.active -= 1
                self._reclaimed.add(lease_id)
            reclaimed += 1
        if reclaimed:
            events.append(LeasesReclaimed(reclaimed))
        if store.inbox:
            self._judge_heard(events)
        upkeep.maintain(books, now, events)

    def _hear(self, events: list[Event]) -> None:
        """Judge the other processes' outcomes the store brought, then settle."""
        self._judge_heard(events)
        if events:
            self._settle(events)

    def _judge_heard(self, events: list[Event]) -> None:
        """Other processes' outcomes, judged on our books as our own are (``outcomes.record``,
        at the time each happened): every process judges from everyone's outcomes, so a
        proxy that fails for one process is benched as soon as it would be in one process."""
        books = self._books
        heard = self._store.inbox
        self._store.inbox = []
        get, record = books.proxies.get, outcomes.record
        for proxy_id, site, code, latency, at in heard:
            rec = get(proxy_id)
            if rec is not None:
                judged = record(books, rec, site, code, latency, at)
                if judged:
                    events.extend(judged)

    def _restore(self) -> None:
        """The store lost everything (a Redis restarted without persistence): register our
        proxies again and commit what our books know of their states. Leases in flight were
        lost with it: our books count them off now (their releases change nothing), with those
        whose release failed during the outage."""
        logger.warning(
            "proxy store lost its state; registering %d proxies again", len(self._books.proxies)
        )
        self._epoch += 1
        self._reclaimed.clear()  # lease ids start again in an empty store
        for rec in self._books.proxies.values():
            rec.active = 0  # releases that failed in the outage are not coming back either
            self._store.add_proxy(rec.proxy)
            if rec.state is not State.HEALTHY:
                self._books.dirty.add(rec.id)
        self._gen = self._store.load(self._clock()).gen
        self._settle(())

    def _follow(self, gen: int) -> None:
        """Our own membership change moved the store on by one: our books have it already."""
        if gen == self._gen + 1:
            self._gen = gen

    def _settle(self, events: Sequence[Event]) -> None:
        """Commit the state changes the policy made, then report the events. When another
        process committed first, its state wins and ours is dropped (and not reported)."""
        books = self._books
        if books.dirty or books.dirty_benches:
            changed, benches = books.take_dirty()
            try:
                done = self._store.commit(self._gen, changed, benches, self._clock())
            except StoreUnavailable:
                books.dirty.update(changed)  # to be committed with the next change
                books.dirty_benches[:0] = benches
                raise
            if not done.ok:
                assert done.shared is not None
                # our benches were not written: the shared ones are the truth
                for site, proxy_id, until in benches:
                    site_rec = books.sites.get(site)
                    pair = site_rec.pairs.get(proxy_id) if site_rec is not None else None
                    if pair is not None and pair.benched_until == until:
                        pair.benched_until = 0.0
                self._adopt(done.shared)
                kept = [e for e in events if not isinstance(e, Transition | PairBenched)]
                if len(kept) < len(events):
                    logger.debug("state changes dropped: another process changed the pool first")
                events = kept
            else:
                self._gen = done.gen
        self._log(events)

    def _adopt(self, shared: Shared) -> None:
        """Take the shared state: proxies added or removed, states and benches set elsewhere."""
        books = self._books
        now = self._clock()
        if shared.reset and books.proxies:
            self._restore()
            return
        self._gen = shared.gen
        events: list[Event] = []
        if shared.proxies is not None:
            for proxy_id in [pid for pid in books.proxies if pid not in shared.proxies]:
                states.remove(books, proxy_id, now, events)
            for proxy in shared.proxies.values():
                states.add(books, proxy, now)
        for proxy_id, (state, until) in shared.states.items():
            rec = books.proxies.get(proxy_id)
            if rec is not None:
                states.adopt(books, rec, state, until, now)
        for (site, proxy_id), until in shared.benches.items():
            rec = books.proxies.get(proxy_id)
            if rec is not None and until > now:
                pair = books.site(site, now).pair(proxy_id, books.config)
                if pair.benched_until != until:
                    pair.benched_until = until
                    rec.benched_on(site, until)
        books.dirty.clear()
        books.dirty_benches.clear()

    # ---------------------------------------------------------------- logging

    def subscribe(self, listener: Callable[[Event], object]) -> None:
        """Call ``listener(event)`` for every event (transitions, benches, faults), after it is
        logged: how a framework turns them into its own metrics."""
        self._listeners.append(listener)

    def _log(self, events: Sequence[Event]) -> None:
        for event in events:
            self._event_log(event)
            for listener in self._listeners:
                listener(event)
