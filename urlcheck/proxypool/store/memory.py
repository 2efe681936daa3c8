"""The in-process store: flat records, one lock, the policy applied inside each call.

The layout mirrors what the Redis store will keep: one flat record per proxy, per (proxy, site)
pair and per site; the in-service candidates as one collection; leases, sessions and quarantines
as expiring entries. Expiry is lazy: leases are reclaimed at most once a second from the oldest,
sessions and idle sites once a minute.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import OrderedDict, deque
from typing import TYPE_CHECKING

from .. import blame, health
from ..events import (
    ControlUrlChanged,
    Event,
    LeasesReclaimed,
    OurSideFault,
    PairBenched,
    SiteFault,
    Transition,
)
from ..hashing import stable_hash
from ..health import IN_SERVICE, State, Window
from ..outcome import CELL, FAIL, PERMANENT, PROXY_FAULT, SOFT, classify
from ..probes import ControlUrlStats
from ..strategies import (
    pick_least_connections,
    pick_round_robin,
    pick_sticky,
    pick_weighted,
)
from .base import AcquireResult, PoolStore

if TYPE_CHECKING:
    import random
    from collections.abc import Sequence

    from ..config import PoolConfig
    from ..outcome import Outcome
    from ..proxy import Proxy
    from ..snapshot import (
        CellStats,
        ControlUrlInfo,
        PoolSnapshot,
        ProxyStats,
        SiteStats,
        TransitionInfo,
    )

__all__ = ["MemoryStore"]

_MAINTENANCE_EVERY = 1.0
_SWEEP_EVERY = 60.0
_FAST_LATENCY = 0.3  # EWMA weights: recent latency, and the proxy's own long-run baseline
_SLOW_LATENCY = 0.02
_NO_EVENTS: tuple[Event, ...] = ()
_PROXY = blame.Verdict.PROXY
_FALLBACK_RANK = {
    State.HEALTHY: 0,
    State.DEGRADED: 1,
    State.PROBING: 2,
    State.QUARANTINED: 3,
    State.DEAD: 4,
}


class _ProxyRec:
    __slots__ = (
        "active",
        "bench_a",
        "bench_a_until",
        "bench_b",
        "bench_b_until",
        "cap",
        "failed_cycles",
        "id",
        "idle_after",
        "last_probe",
        "last_transition",
        "last_used",
        "lat_fast",
        "lat_n",
        "lat_slow",
        "latencies",
        "level",
        "next_probe_at",
        "node_hash",
        "ok_a",
        "ok_a_at",
        "ok_b",
        "ok_b_at",
        "outlier",
        "probe_fail_streak",
        "probe_inconclusive",
        "probe_inflight_until",
        "probe_ok",
        "probe_seq",
        "proxy",
        "quarantine_time",
        "quarantines",
        "ramp_ok",
        "recent_fail",
        "row",
        "seq",
        "spiking",
        "stable_since",
        "state",
        "state_since",
        "static_weight",
        "until",
        "weight",
        "window",
    )

    def __init__(self, proxy: Proxy, cfg: PoolConfig, now: float, idle_after: float) -> None:
        self.id = proxy.id
        self.node_hash = stable_hash(proxy.id)
        self.set_spec(proxy, cfg)
        self.state = State.HEALTHY
        self.active = 0
        self.weight = self.static_weight
        self.window = Window(cfg.window_size, cfg.recent_window)
        self.latencies: deque[float] = deque(maxlen=cfg.window_size)
        self.lat_fast = self.lat_slow = 0.0
        self.lat_n = 0
        self.spiking = False
        self.outlier: str | None = None
        # (time, site, seq) of the latest failures; seq numbers the proxy window's outcomes
        self.recent_fail: deque[tuple[float, str, int]] = deque(maxlen=cfg.recent_window)
        self.seq = 0
        # the two most recent distinct sites that worked, to tell a red row from a red cell
        self.ok_a = self.ok_b = ""
        self.ok_a_at = self.ok_b_at = -math.inf
        # (site, failed) of its last outcomes anywhere, red cells included: its row in the
        # matrix, to tell a red cell in a green row (the pair's problem) from a red row
        self.row: deque[tuple[str, int]] = deque(maxlen=cfg.window_size)
        # the two most recent distinct sites it was benched on, and until when
        self.bench_a = self.bench_b = ""
        self.bench_a_until = self.bench_b_until = 0.0
        self.until = 0.0
        self.level = 0
        self.failed_cycles = 0
        self.probe_ok = self.probe_fail_streak = self.probe_inconclusive = 0
        self.next_probe_at = 0.0
        self.probe_inflight_until = 0.0
        self.probe_seq = self.node_hash % 9973
        self.last_used = self.last_probe = now
        self.idle_after = idle_after
        self.ramp_ok = 0
        self.stable_since = now
        self.quarantines = 0
        self.quarantine_time = 0.0
        self.state_since = now
        self.last_transition: tuple[float, State, State, str] | None = None

    def set_spec(self, proxy: Proxy, cfg: PoolConfig) -> None:
        self.proxy = proxy
        self.static_weight = proxy.weight
        self.cap = proxy.max_concurrent if proxy.max_concurrent is not None else cfg.max_concurrent

    def worked_elsewhere(self, sites: set[str], since: float) -> bool:
        return (self.ok_a_at >= since and self.ok_a not in sites) or (
            self.ok_b_at >= since and self.ok_b not in sites
        )

    def benched_on(self, site: str, until: float) -> None:
        if site != self.bench_a:
            self.bench_b, self.bench_b_until = self.bench_a, self.bench_a_until
            self.bench_a = site
        self.bench_a_until = until

    def benched_elsewhere(self, site: str, now: float) -> bool:
        return (self.bench_a_until > now and self.bench_a != site) or (
            self.bench_b_until > now and self.bench_b != site
        )

    def forget_failures_on(self, site: str) -> None:
        if any(s == site and failed for s, failed in self.row):
            kept = [(s, 0 if s == site else failed) for s, failed in self.row]
            self.row.clear()
            self.row.extend(kept)


class _PairRec:
    __slots__ = ("benched_until", "factor", "last_seen", "level", "n", "ok", "route", "window")

    def __init__(self, cfg: PoolConfig) -> None:
        self.window = Window(cfg.pair_window_size, cfg.recent_window)
        self.route = 1.0  # moving success average; steers routing even while the site is excused
        self.factor = 1.0
        self.benched_until = 0.0
        self.level = 0
        self.n = self.ok = 0
        self.last_seen = 0.0


class _Session:
    __slots__ = ("expires", "proxy_id")

    def __init__(self, proxy_id: str, expires: float) -> None:
        self.proxy_id = proxy_id
        self.expires = expires


class _SiteRec:
    __slots__ = ("countdown", "entries", "fails", "fault", "last_seen", "n", "ok", "pairs")

    def __init__(self, cfg: PoolConfig) -> None:
        self.entries: deque[tuple[float, str, int]] = deque(maxlen=cfg.site_window_size)
        self.fails = 0
        self.pairs: dict[str, _PairRec] = {}
        self.fault: str | None = None
        self.last_seen = 0.0
        self.countdown = 0
        self.n = self.ok = 0


class MemoryStore(PoolStore):
    """State in this process, guarded by one lock. URI: ``memory://``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proxies: dict[str, _ProxyRec] = {}
        self._cands: list[_ProxyRec] = []
        self._max_weight = 1.0
        self._counts = dict.fromkeys(State, 0)
        self._leases: OrderedDict[int, tuple[float, _ProxyRec]] = OrderedDict()
        self._lease_ids = itertools.count(1)
        self._sessions: dict[str, _Session] = {}
        self._deferred: list[Event] = []
        self._sites: dict[str, _SiteRec] = {}
        self._pool: deque[tuple[float, str, int, str]] = deque()
        self._pool_fails = 0
        self._pool_latency = 0.0
        self._our_side: str | None = None
        self._our_countdown = 0
        self._rr = 0
        self._quarantine_log: deque[float] = deque(maxlen=100_000)
        self._buckets = [[0, 0, 0] for _ in range(60)]  # [second, outcomes, successes]
        self._outcomes = 0
        self._control: dict[str, ControlUrlStats] = {}
        self._next_maintenance = -math.inf
        self._next_sweep = -math.inf
        self._next_outlier = -math.inf
        self._noise_at = -math.inf
        self._noise_value = 0.0

    def open(self, config: PoolConfig, rng: random.Random) -> None:
        super().open(config, rng)
        self._random = rng.random
        self._pool = deque(maxlen=config.global_window_size)
        self._pool_alpha = 1.0 / config.global_window_size
        self._pair_alpha = 2.0 / (config.pair_window_size + 1)
        self._control = {url: ControlUrlStats(url) for url in config.control_urls}
        self._pick = {
            "weighted": self._pick_weighted,
            "round_robin": self._pick_round_robin,
            "least_connections": self._pick_least_connections,
        }[config.strategy]

    # ----------------------------------------------------------------- membership

    def add_proxy(self, proxy: Proxy, now: float) -> Sequence[Event]:
        with self._lock:
            rec = self._proxies.get(proxy.id)
            if rec is not None:
                rec.set_spec(proxy, self.config)
                self._reweigh(rec)
                self._refresh_max_weight()
                return _NO_EVENTS
            rec = _ProxyRec(proxy, self.config, now, self._idle_interval())
            self._proxies[rec.id] = rec
            self._counts[State.HEALTHY] += 1
            self._cands.append(rec)
            self._refresh_max_weight()
            return _NO_EVENTS

    def remove_proxy(self, proxy_id: str, now: float) -> tuple[bool, Sequence[Event]]:
        with self._lock:
            rec = self._proxies.pop(proxy_id, None)
            if rec is None:
                return False, _NO_EVENTS
            self._counts[rec.state] -= 1
            if rec.state in IN_SERVICE:
                self._cands.remove(rec)
                self._refresh_max_weight()
            events: list[Event] = []
            self._enforce_limits(now, events)
            return True, events

    def end_session(self, key: str) -> bool:
        with self._lock:
            return self._sessions.pop(key, None) is not None

    # ----------------------------------------------------------------- acquire

    def acquire(self, site: str, key: str | None, now: float) -> AcquireResult:
        with self._lock:
            events: list[Event] | tuple[Event, ...] = _NO_EVENTS
            if now >= self._next_maintenance or self._deferred:
                events, self._deferred = self._deferred, []
                self._maintain(now, events)
            site_rec = self._sites.get(site)
            if site_rec is None:
                # in sight from its first request: a failure's row is judged against the sites
                # the crawl visits, not only those that answered so far
                site_rec = self._sites[site] = _SiteRec(self.config)
                site_rec.last_seen = now
            pairs = site_rec.pairs
            lost = False
            rec: _ProxyRec | None = None
            if key is None:
                rec = self._pick(pairs, now)
            else:
                session = self._sessions.get(key)
                if session is not None and session.expires > now:
                    held = self._proxies.get(session.proxy_id)
                    pair = pairs.get(held.id) if held is not None else None
                    if (
                        held is not None
                        and held.state in IN_SERVICE
                        and (pair is None or pair.benched_until <= now)
                    ):
                        # Never rotated mid-session, not even when full or degraded.
                        rec = held
                        session.expires = now + self.config.session_ttl
                    else:
                        lost = True
                if rec is None:
                    rec = pick_sticky(stable_hash(key), self._cands, pairs, now)
                    if rec is not None:
                        self._sessions[key] = _Session(rec.id, now + self.config.session_ttl)
                    elif session is not None:
                        del self._sessions[key]
            fallback = False
            if rec is None:
                if self.config.fail_closed or not self._proxies:
                    return AcquireResult(0, None, lost, False, events)
                rec = self._least_bad(pairs, now)
                fallback = True
            lease_id = next(self._lease_ids)
            self._leases[lease_id] = (now + self.config.lease_ttl, rec)
            rec.active += 1
            rec.last_used = now
            return AcquireResult(lease_id, rec.id, lost, fallback, events)

    def _pick_weighted(self, pairs: dict[str, _PairRec], now: float) -> _ProxyRec | None:
        return pick_weighted(self._cands, pairs, now, self._random, self._max_weight)

    def _pick_round_robin(self, pairs: dict[str, _PairRec], now: float) -> _ProxyRec | None:
        rec, self._rr = pick_round_robin(self._cands, pairs, now, self._rr)
        return rec

    def _pick_least_connections(self, pairs: dict[str, _PairRec], now: float) -> _ProxyRec | None:
        return pick_least_connections(self._cands, pairs, now, self._random)

    def _least_bad(self, pairs: dict[str, _PairRec], now: float) -> _ProxyRec:
        def badness(rec: _ProxyRec) -> tuple[int, bool, float, float]:
            pair = pairs.get(rec.id)
            benched = pair is not None and pair.benched_until > now
            load = rec.active / rec.cap if rec.cap else 0.0
            return _FALLBACK_RANK[rec.state], benched, load, -rec.window.smoothed_success(0.0)

        return min(self._proxies.values(), key=badness)

    # ----------------------------------------------------------------- release

    def release(
        self, lease_id: int, proxy_id: str, site: str, outcome: Outcome, now: float
    ) -> Sequence[Event]:
        code = classify(outcome)
        with self._lock:
            lease = self._leases.pop(lease_id, None)
            if lease is not None:
                lease[1].active -= 1
            rec = self._proxies.get(proxy_id)
            if rec is None:
                return _NO_EVENTS
            return self._record(rec, site, code, outcome.latency, now)

    def _record(
        self, rec: _ProxyRec, site: str, code: int, latency: float | None, now: float
    ) -> Sequence[Event]:
        cfg = self.config
        events: list[Event] = []
        fail = code & FAIL
        self._outcomes += 1
        second = int(now)
        bucket = self._buckets[second % 60]
        if bucket[0] != second:
            bucket[0], bucket[1], bucket[2] = second, 0, 0
        bucket[1] += 1
        bucket[2] += not code
        # The pool-wide and site windows see every outcome: they are what blame is judged on.
        pool = self._pool
        if len(pool) == cfg.global_window_size and pool[0][2] & FAIL:
            self._pool_fails -= 1
        pool.append((now, rec.id, code, site))
        site_rec = self._sites.get(site)
        if site_rec is None:
            site_rec = self._sites[site] = _SiteRec(cfg)
        site_rec.last_seen = now
        site_rec.n += 1
        entries = site_rec.entries
        if len(entries) == cfg.site_window_size and entries[0][2] & FAIL:
            site_rec.fails -= 1
        entries.append((now, rec.id, code))
        if fail:
            self._pool_fails += 1
            site_rec.fails += 1
            self._check_faults(site, site_rec, events)
        else:
            site_rec.ok += not code
            if site_rec.fault is not None or self._our_side is not None:
                self._check_recoveries(site, site_rec, events)
        pair = site_rec.pairs.get(rec.id)
        if pair is None:
            pair = site_rec.pairs[rec.id] = _PairRec(cfg)
        pair.last_seen = now
        pair.n += 1
        pair.ok += not code
        if code or pair.route != 1.0:
            value = 0.0 if fail else (1.0 - cfg.soft_failure_weight if code & SOFT else 1.0)
            pair.route += self._pair_alpha * (value - pair.route)
            pair.factor = health.success_factor(pair.route, cfg)
        if code & PERMANENT:
            self._kill(rec, "proxy authentication failed (407)", now, events)
            return events
        if site_rec.fault is not None or self._our_side is not None:
            return events  # excused: the site or our side is at fault, not this proxy
        pair.window.push(code)
        if not fail:
            if code:
                # rate limited: soft, and for this pair only
                if pair.window.n >= cfg.min_outcomes:
                    tripped = health.trip(pair.window, cfg, self._noise(now))
                    if tripped is not None:
                        self._judge_pair(
                            rec,
                            site=site,
                            site_rec=site_rec,
                            pair=pair,
                            reason=tripped.reason,
                            now=now,
                            events=events,
                        )
                return events
            window = rec.window
            window.push(0)
            rec.seq += 1
            rec.row.append((site, 0))
            if site != rec.ok_a:
                rec.ok_b, rec.ok_b_at = rec.ok_a, rec.ok_a_at
                rec.ok_a = site
            rec.ok_a_at = now
            rec.probe_fail_streak = 0
            if latency is not None and latency >= 0.0:
                self._record_latency(rec, latency)
            if (
                rec.state is State.HEALTHY
                and not window.fails
                and not rec.spiking
                and rec.outlier is None
                and not rec.level
                and not pair.level
            ):
                # The common case: a clean record, nothing to decide; only latency moves weight.
                if rec.weight != rec.static_weight or rec.lat_fast > self._pool_latency:
                    self._reweigh(rec)
                return events
            self._after_success(rec, pair, now, events)
        else:
            # A red cell in a green row counts against the pair only; the proxy's own window
            # takes the failures that span its row, and those that are certainly its own.
            cell = (
                not code & PROXY_FAULT
                and len(self._sites) > 1
                and health.red(pair.window, cfg)
                and not rec.benched_elsewhere(site, now)
                and blame.green_row(rec.row, site, cfg)
            )
            rec.row.append((site, 1))
            if cell:
                # marked in the pool window too: not part of the background noise
                self._pool[-1] = (now, rec.id, code | CELL, site)
            else:
                rec.window.push(code)
                rec.seq += 1
                rec.recent_fail.append((now, site, rec.seq))
            self._after_failure(
                rec,
                site=site,
                site_rec=site_rec,
                pair=pair,
                code=code,
                cell=cell,
                now=now,
                events=events,
            )
            if cell:
                return events
        self._reweigh(rec)
        return events

    def _record_latency(self, rec: _ProxyRec, latency: float) -> None:
        cfg = self.config
        rec.latencies.append(latency)
        if rec.lat_n == 0:
            rec.lat_fast = rec.lat_slow = latency
        else:
            rec.lat_fast += _FAST_LATENCY * (latency - rec.lat_fast)
            rec.lat_slow += _SLOW_LATENCY * (latency - rec.lat_slow)
        rec.lat_n += 1
        if self._pool_latency == 0.0:
            self._pool_latency = latency
        else:
            self._pool_latency += self._pool_alpha * (latency - self._pool_latency)
        if rec.lat_n >= cfg.min_outcomes and rec.lat_slow > 0.0:
            ratio = rec.lat_fast / rec.lat_slow
            if rec.spiking:
                rec.spiking = ratio > cfg.latency_recover_factor
            else:
                rec.spiking = ratio > cfg.latency_spike_factor

    def _after_success(self, rec: _ProxyRec, pair: _PairRec, now: float, ev: list[Event]) -> None:
        cfg = self.config
        state = rec.state
        if state is State.PROBING:
            rec.ramp_ok += 1
            if rec.ramp_ok >= cfg.ramp_requests:
                rec.failed_cycles = 0
                rec.stable_since = now
                self._set_state(rec, State.HEALTHY, "ramp complete: full weight", now, ev)
        elif state is State.HEALTHY or state is State.DEGRADED:
            # A success cannot raise a window's failure rates: a healthy proxy can only be
            # degraded here by a latency spike or the outlier rule, or at the success that
            # brings its window to min_outcomes, the first moment the rate rules apply (its
            # failures may all have come before).
            if (
                state is State.DEGRADED
                or rec.spiking
                or rec.outlier is not None
                or rec.window.n == cfg.min_outcomes
            ):
                self._check_degraded(rec, now, ev)
            if rec.level and now - rec.stable_since >= cfg.backoff_reset_after:
                rec.level = 0  # worked stably for a while: the next quarantine starts short again
        if (
            pair.level
            and pair.benched_until
            and now - pair.benched_until >= cfg.backoff_reset_after
        ):
            pair.level = 0

    def _check_degraded(self, rec: _ProxyRec, now: float, events: list[Event]) -> None:
        cfg = self.config
        if rec.state is not State.HEALTHY and rec.state is not State.DEGRADED:
            return
        why = health.degrade_reason(rec.window, cfg)
        if why is None and rec.spiking:
            why = f"latency spike ({rec.lat_fast:.2f}s against usual {rec.lat_slow:.2f}s)"
        if why is None and rec.outlier is not None:
            why = f"outlier: {rec.outlier}"
        if rec.state is State.HEALTHY:
            if why is not None:
                self._set_state(rec, State.DEGRADED, why, now, events)
        elif why is None and health.recovered(rec.window, cfg):
            self._set_state(rec, State.HEALTHY, "recovered", now, events)

    def _degrade(self, rec: _ProxyRec, why: str, now: float, events: list[Event]) -> None:
        """Lower the weight first (only a healthy proxy changes state; the reason is logged)."""
        if rec.state is State.HEALTHY:
            self._set_state(rec, State.DEGRADED, why, now, events)

    # ----------------------------------------------------------------- blame

    def _after_failure(
        self,
        rec: _ProxyRec,
        *,
        site: str,
        site_rec: _SiteRec,
        pair: _PairRec,
        code: int,
        cell: bool,
        now: float,
        events: list[Event],
    ) -> None:
        """Judge a failure: the proxy's (unless `cell`: it counts for the pair only), then the
        pair's."""
        cfg = self.config
        state = rec.state
        if state is State.QUARANTINED or state is State.DEAD:
            return  # a fallback lease: nothing more to learn
        entries = site_rec.entries
        noise = self._noise(now)
        if not cell:
            certain = bool(code & PROXY_FAULT)
            if state is State.PROBING and (certain or self._half_open_verdict(rec, entries, now)):
                # Half-open: one failure that is clearly the proxy's sends it back, longer.
                self._bench(rec, "failed while half-open", now, events)
                return
            proxy_trip = health.trip(rec.window, cfg, noise)
            if proxy_trip is not None and self._judge_proxy(
                rec, tripped=proxy_trip, certain=certain, noise=noise, now=now, events=events
            ):
                return
        pair_trip = health.trip(pair.window, cfg, noise)
        if (
            pair_trip is not None
            and blame.site_verdict(
                entries, rec.id, start=now, end=now, own_success=self._own(pair.window), cfg=cfg
            )
            is _PROXY
        ):
            self._bench_pair(
                rec,
                site=site,
                site_rec=site_rec,
                pair=pair,
                reason=pair_trip.reason,
                now=now,
                events=events,
            )
        if not cell:
            self._check_degraded(rec, now, events)

    def _judge_proxy(
        self,
        rec: _ProxyRec,
        *,
        tripped: health.Trip,
        certain: bool,
        noise: float,
        now: float,
        events: list[Event],
    ) -> bool:
        """Quarantine only failures concentrated on this proxy; True when settled here."""
        cfg = self.config
        if certain:
            # The proxy itself failed, whatever the site; unless every proxy fails right now.
            start = rec.recent_fail[0][0]
            if (
                blame.site_verdict(
                    self._pool, rec.id, start=start, end=now, own_success=0.0, cfg=cfg
                )
                is _PROXY
            ):
                self._bench(rec, tripped.reason + " (proxy unreachable)", now, events)
            else:
                self._degrade(rec, tripped.reason + "; other proxies fail too", now, events)
            return True
        failures = list(rec.recent_fail)
        needed = len(failures) // 2 + 1
        own = rec.window.success_rate(cfg.soft_failure_weight)
        if not tripped.sustained:
            # the burst rule: judge exactly the failures among the recent outcomes
            oldest = rec.seq - cfg.recent_window
            failures = [f for f in failures if f[2] > oldest]
            needed = cfg.recent_failures
            own = 1.0 - len(failures) / cfg.recent_window
        spans: dict[str, list[float]] = {}
        for at, s, _ in failures:
            span = spans.get(s)
            if span is None:
                spans[s] = [at, at]
            else:
                span[1] = at
        verdicts: dict[str, blame.Verdict] = {}
        for s, (start, end) in spans.items():
            site_rec = self._sites.get(s)
            verdicts[s] = (
                blame.Verdict.UNKNOWN
                if site_rec is None
                else blame.site_verdict(
                    site_rec.entries, rec.id, start=start, end=end, own_success=own, cfg=cfg
                )
            )
        unknown = [s for s, verdict in verdicts.items() if verdict is blame.Verdict.UNKNOWN]
        if unknown:
            # No peer on those sites at the time (one-off hosts): compare with the whole pool.
            start = min(spans[s][0] for s in unknown)
            end = max(spans[s][1] for s in unknown)
            overall = blame.site_verdict(
                self._pool, rec.id, start=start, end=end, own_success=own, cfg=cfg
            )
            for s in unknown:
                verdicts[s] = overall
        blamed_n = sum(1 for _, s, _ in failures if verdicts[s] is _PROXY)
        unknown_n = sum(1 for _, s, _ in failures if verdicts[s] is blame.Verdict.UNKNOWN)
        # With no peers at all, the sustained rule stands on its own: it is already a test
        # against the typical proxy's failure rate (see `health.trip`).
        counted = blamed_n + unknown_n if tripped.sustained else blamed_n
        if counted < needed:
            if blamed_n or unknown_n:
                self._degrade(rec, tripped.reason + "; blame unclear", now, events)
            return False  # others fail there too: mostly the sites' problem
        suspects = {
            s
            for s, verdict in verdicts.items()
            if verdict is _PROXY or (tripped.sustained and verdict is blame.Verdict.UNKNOWN)
        }
        per_site: dict[str, int] = {}
        for _, s, _ in failures:
            if s in suspects:
                per_site[s] = per_site.get(s, 0) + 1
        worst = max(per_site, key=per_site.__getitem__)
        since = spans[worst][0] - cfg.backoff_base
        # A red cell in a green row is the pair's problem: when the failures gather on one site
        # and the proxy worked on another shortly before they began, bench the pair. That costs
        # little; failures that follow elsewhere make the row red.
        if per_site[worst] >= needed and rec.worked_elsewhere({worst}, since):
            site_rec = self._sites.get(worst)
            pair = site_rec.pairs.get(rec.id) if site_rec is not None else None
            if (
                site_rec is not None
                and pair is not None
                and health.trip(pair.window, cfg, noise) is not None
            ):
                self._bench_pair(
                    rec,
                    site=worst,
                    site_rec=site_rec,
                    pair=pair,
                    reason=tripped.reason,
                    now=now,
                    events=events,
                )
            return False
        where = ", ".join(sorted(suspects))
        self._bench(rec, f"{tripped.reason}; concentrated on it at {where}", now, events)
        return True

    def _half_open_verdict(
        self, rec: _ProxyRec, entries: deque[tuple[float, str, int]], now: float
    ) -> bool:
        """Is one failure of a half-open proxy its own? Peers on the site say, else the pool."""
        cfg = self.config
        verdict = blame.site_verdict(entries, rec.id, start=now, end=now, own_success=0.0, cfg=cfg)
        if verdict is blame.Verdict.UNKNOWN:
            verdict = blame.site_verdict(
                self._pool, rec.id, start=now, end=now, own_success=0.0, cfg=cfg
            )
        return verdict is _PROXY

    def _own(self, window: Window) -> float:
        """A window's success rate as the blame rules see it: the worse of burst and record."""
        cfg = self.config
        burst = 1.0 - window.recent_failures / cfg.recent_window
        return min(burst, window.success_rate(cfg.soft_failure_weight))

    def _noise(self, now: float) -> float:
        """Failure rate of a typical proxy in service: what chance alone produces right now.
        Cached for a second."""
        if now - self._noise_at < _MAINTENANCE_EVERY:
            return self._noise_value
        cfg = self.config
        # Pooled over the proxies that are not failing outright: the bad ones are what the
        # rules look for, not part of the background.
        fails = total = 0.0
        failing: set[str] = set()
        for r in self._cands:
            window = r.window
            n = window.n
            if not n or r.state is State.PROBING:
                continue
            bad = window.fails + cfg.soft_failure_weight * window.softs
            if bad > (1.0 - cfg.quarantine_below) * n:
                failing.add(r.id)
            elif n >= cfg.min_outcomes:
                fails += bad
                total += n
        if total < len(self._pool):
            # Too little per-proxy history yet (a fresh pool): take the pool's recent outcomes,
            # leaving out those of proxies failing outright and the red cells of green rows.
            fails = total = 0.0
            for _, proxy_id, code, _ in self._pool:
                if proxy_id not in failing and not code & CELL:
                    total += 1
                    fails += code & FAIL
        self._noise_at = now
        self._noise_value = fails / total if total else 0.0
        return self._noise_value

    def _judge_pair(
        self,
        rec: _ProxyRec,
        *,
        site: str,
        site_rec: _SiteRec,
        pair: _PairRec,
        reason: str,
        now: float,
        events: list[Event],
    ) -> None:
        own = self._own(pair.window)
        if (
            blame.site_verdict(
                site_rec.entries, rec.id, start=now, end=now, own_success=own, cfg=self.config
            )
            is _PROXY
        ):
            self._bench_pair(
                rec, site=site, site_rec=site_rec, pair=pair, reason=reason, now=now, events=events
            )

    def _check_faults(self, site: str, site_rec: _SiteRec, events: list[Event]) -> None:
        cfg = self.config
        entries = site_rec.entries
        if site_rec.fault is None and site_rec.fails > (1.0 - cfg.site_fault_below) * len(entries):
            site_rec.countdown -= 1
            if site_rec.countdown <= 0:
                site_rec.countdown = 3  # the scan is O(window): run it on every third failure
                reason = blame.site_fault_reason(entries, site_rec.fails, cfg)
                if reason is not None:
                    site_rec.fault = reason
                    events.append(SiteFault(site, True, reason))
                    self._forget_failures_on(site, site_rec)
        pool = self._pool
        if self._our_side is None and self._pool_fails > (1.0 - cfg.our_side_below) * len(pool):
            self._our_countdown -= 1
            if self._our_countdown <= 0:
                self._our_countdown = 10
                reason = blame.our_side_reason(pool, self._pool_fails, cfg)
                if reason is not None:
                    self._our_side = reason
                    events.append(OurSideFault(True, reason))

    def _forget_failures_on(self, site: str, site_rec: _SiteRec) -> None:
        """The failures that came before the site was found at fault count against no proxy."""
        recent = self.config.recent_window
        for proxy_id, pair in site_rec.pairs.items():
            pair.window.reset()
            rec = self._proxies.get(proxy_id)
            if rec is None:
                continue
            rec.forget_failures_on(site)
            if not rec.recent_fail:
                continue
            kept = [f for f in rec.recent_fail if f[1] != site]
            for _, _, seq in rec.recent_fail:
                age = rec.seq - seq
                if age < recent:
                    rec.window.recent &= ~(1 << age)
            rec.recent_fail.clear()
            rec.recent_fail.extend(kept)

    def _check_recoveries(self, site: str, site_rec: _SiteRec, events: list[Event]) -> None:
        cfg = self.config
        if site_rec.fault is not None:
            rate = 1.0 - site_rec.fails / len(site_rec.entries)
            if rate >= cfg.site_recover_above:
                site_rec.fault = None
                events.append(SiteFault(site, False, f"success back to {rate:.0%}"))
        if self._our_side is not None:
            rate = 1.0 - self._pool_fails / len(self._pool)
            if rate >= cfg.our_side_recover_above:
                self._our_side = None
                events.append(OurSideFault(False, f"pool success back to {rate:.0%}"))

    # ----------------------------------------------------------------- states

    def _bench_blocked(self) -> str | None:
        """Why no further proxy may leave service now, if so."""
        total = len(self._proxies)
        out = self._counts[State.QUARANTINED] + self._counts[State.DEAD]
        cap = int(self.config.quarantine_cap * total + 1e-9)
        if out + 1 > cap:
            return f"quarantine cap reached ({out} of {total} out, cap {cap})"
        required = self._required_in_service()
        if len(self._cands) - 1 < required:
            return f"minimum in service ({required})"
        return None

    def _required_in_service(self) -> int:
        return min(self.config.min_in_service, len(self._proxies) - self._counts[State.DEAD])

    def _bench(self, rec: _ProxyRec, reason: str, now: float, events: list[Event]) -> None:
        """Quarantine (or, after too many failed cycles, kill) a proxy, if the pool allows it."""
        cfg = self.config
        if self._our_side is not None:
            return  # quarantines freeze while the fault is ours
        if rec.state in IN_SERVICE:
            blocked = self._bench_blocked()
            if blocked is not None:
                if rec.state is State.PROBING:
                    rec.ramp_ok = 0
                self._degrade(rec, f"{reason}; kept in service: {blocked}", now, events)
                return
        if rec.state is State.PROBING or rec.state is State.QUARANTINED:
            rec.failed_cycles += 1
        if rec.failed_cycles >= cfg.dead_after_cycles:
            why = f"{reason}; {rec.failed_cycles} failed quarantine cycles"
            self._kill(rec, why, now, events)
            return
        seconds = health.backoff(rec.level, cfg, self._random())
        rec.level += 1
        rec.until = now + seconds
        rec.next_probe_at = rec.until
        rec.probe_ok = rec.probe_inconclusive = 0
        rec.quarantines += 1
        self._quarantine_log.append(now)
        self._set_state(rec, State.QUARANTINED, f"{reason}; back-off {seconds:.0f}s", now, events)

    def _kill(self, rec: _ProxyRec, reason: str, now: float, events: list[Event]) -> None:
        rec.next_probe_at = now + self.config.dead_probe_interval * (1.0 - 0.5 * self._random())
        if rec.state is State.DEAD:
            return
        self._set_state(rec, State.DEAD, reason, now, events)
        self._enforce_limits(now, events)

    def _return(self, rec: _ProxyRec, reason: str, now: float, events: list[Event]) -> None:
        """Quarantine over: half-open, with fresh windows and a small share of traffic."""
        rec.window.reset()
        rec.recent_fail.clear()
        rec.ramp_ok = rec.probe_ok = rec.probe_inconclusive = rec.probe_fail_streak = 0
        rec.spiking = False
        rec.outlier = None
        self._set_state(rec, State.PROBING, reason, now, events)

    def _enforce_limits(self, now: float, events: list[Event]) -> None:
        """Keep the cap and the minimum when the pool shrinks (removals, 407 deaths): bring back
        the quarantined proxies due soonest. Better doubtful proxies than too few."""
        while self._counts[State.QUARANTINED]:
            total = len(self._proxies)
            required = self._required_in_service()
            cap = int(self.config.quarantine_cap * total + 1e-9)
            out = self._counts[State.QUARANTINED] + self._counts[State.DEAD]
            if len(self._cands) < required:
                reason = f"keeping the minimum of {required} in service"
            elif out > cap:
                reason = f"keeping under the quarantine cap of {cap}"
            else:
                return
            waiting = [r for r in self._proxies.values() if r.state is State.QUARANTINED]
            self._return(min(waiting, key=lambda r: r.until), reason, now, events)

    def _set_state(
        self, rec: _ProxyRec, new: State, reason: str, now: float, events: list[Event]
    ) -> None:
        old = rec.state
        if old is State.QUARANTINED:
            rec.quarantine_time += now - rec.state_since
        rec.state = new
        rec.state_since = now
        self._counts[old] -= 1
        self._counts[new] += 1
        was_in, now_in = old in IN_SERVICE, new in IN_SERVICE
        if was_in and not now_in:
            self._cands.remove(rec)
            self._refresh_max_weight()
        elif now_in and not was_in:
            self._cands.append(rec)
            self._refresh_max_weight()
        rec.last_transition = (now, old, new, reason)
        events.append(Transition(rec.id, old, new, reason))
        self._reweigh(rec)

    def _reweigh(self, rec: _ProxyRec) -> None:
        cfg = self.config
        factor = health.success_factor(rec.window.smoothed_success(cfg.soft_failure_weight), cfg)
        if rec.lat_n and self._pool_latency > 0.0:
            factor *= health.latency_factor(rec.lat_fast, self._pool_latency, cfg)
        if rec.state is State.DEGRADED:
            factor *= cfg.degraded_weight
        elif rec.state is State.PROBING:
            factor *= health.ramp(rec.ramp_ok, cfg)
        rec.weight = rec.static_weight * factor

    def _refresh_max_weight(self) -> None:
        self._max_weight = max((r.static_weight for r in self._cands), default=1.0)

    def _bench_pair(
        self,
        rec: _ProxyRec,
        *,
        site: str,
        site_rec: _SiteRec,
        pair: _PairRec,
        reason: str,
        now: float,
        events: list[Event],
    ) -> None:
        cfg = self.config
        if pair.benched_until > now or self._our_side is not None or site_rec.fault is not None:
            return
        # The pool's protections apply per site as well, with their own cap: benching a pair
        # costs only that site, and when most proxies fail on a site the site is at fault
        # anyway. One pair may always go, so small pools can route around a blocking site.
        benched = sum(1 for p in site_rec.pairs.values() if p.benched_until > now)
        serving = len(self._cands)
        if benched + 1 > max(1, int(cfg.pair_bench_cap * serving + 1e-9)):
            return
        if serving - benched - 1 < self._required_in_service():
            return
        seconds = health.backoff(pair.level, cfg, self._random())
        pair.level += 1
        pair.benched_until = now + seconds
        rec.benched_on(site, pair.benched_until)
        events.append(PairBenched(rec.id, site, seconds, reason))

    # ----------------------------------------------------------------- maintenance

    def _maintain(self, now: float, events: list[Event]) -> None:
        cfg = self.config
        self._next_maintenance = now + _MAINTENANCE_EVERY
        leases = self._leases
        reclaimed = 0
        while leases:
            lease_id = next(iter(leases))
            expires, rec = leases[lease_id]
            if expires > now:
                break
            del leases[lease_id]
            rec.active -= 1
            reclaimed += 1
        if reclaimed:
            events.append(LeasesReclaimed(reclaimed))
        if self._counts[State.QUARANTINED] and not cfg.control_urls:
            # Nothing to probe with: the real traffic of the half-open state is the probe.
            for rec in list(self._proxies.values()):
                if rec.state is State.QUARANTINED and rec.until <= now:
                    self._return(rec, "back-off over (no control URLs to probe)", now, events)
        if now >= self._next_outlier:
            self._next_outlier = now + cfg.outlier_interval
            self._run_outlier_rule(now, events)
        if now >= self._next_sweep:
            self._next_sweep = now + _SWEEP_EVERY
            self._sweep(now)

    def _run_outlier_rule(self, now: float, events: list[Event]) -> None:
        cfg = self.config
        rates = [
            (r.id, r.window.success_rate(cfg.soft_failure_weight))
            for r in self._cands
            if r.window.n >= cfg.outlier_min_outcomes and r.state is not State.PROBING
        ]
        found = blame.outliers(rates, cfg)
        for rec in list(self._cands):
            if rec.state is State.PROBING:
                continue
            outlier = found.get(rec.id)
            if outlier != rec.outlier:
                rec.outlier = outlier
                self._check_degraded(rec, now, events)

    def _sweep(self, now: float) -> None:
        expired = [k for k, s in self._sessions.items() if s.expires <= now]
        for key in expired:
            del self._sessions[key]
        horizon = now - self.config.site_idle_ttl
        for site in [s for s, rec in self._sites.items() if rec.last_seen < horizon]:
            del self._sites[site]
        for site_rec in self._sites.values():
            stale = [
                pid
                for pid, p in site_rec.pairs.items()
                if p.last_seen < horizon and p.benched_until <= now
            ]
            for pid in stale:
                del site_rec.pairs[pid]

    # ----------------------------------------------------------------- probes

    def _idle_interval(self) -> float:
        cfg = self.config
        return cfg.probe_idle_min + (cfg.probe_idle_max - cfg.probe_idle_min) * self._random()

    def due_probes(self, now: float) -> list[tuple[str, str]]:
        cfg = self.config
        if not cfg.control_urls:
            return []
        with self._lock:
            due: list[tuple[float, _ProxyRec]] = []
            for rec in self._proxies.values():
                if rec.probe_inflight_until > now:
                    continue
                state = rec.state
                if state is State.QUARANTINED:
                    at = max(rec.until, rec.next_probe_at)
                elif state is State.DEAD:
                    at = rec.next_probe_at
                else:
                    at = max(rec.last_used, rec.last_probe) + rec.idle_after
                if at <= now:
                    due.append((at, rec))
            due.sort(key=lambda item: item[0])
            tasks: list[tuple[str, str]] = []
            for _, rec in due:
                if len(tasks) >= cfg.probe_batch:
                    break
                url = self._control_url_for(rec)
                rec.probe_inflight_until = now + cfg.probe_timeout
                tasks.append((rec.id, url))
                stats = self._control[url]
                if (
                    rec.state not in IN_SERVICE
                    and stats.last_ok_at < now - cfg.probe_idle_max
                    and stats.checking_until <= now
                    and len(tasks) < cfg.probe_batch
                ):
                    # A failed probe counts only against a URL known to work: a busy pool never
                    # probes its working proxies, so check the URL through one of them too.
                    witness = self._probe_witness(now)
                    if witness is not None:
                        witness.probe_inflight_until = now + cfg.probe_timeout
                        stats.checking_until = now + cfg.probe_timeout
                        tasks.append((witness.id, url))
            return tasks

    def _probe_witness(self, now: float) -> _ProxyRec | None:
        healthy = [
            r for r in self._cands if r.state is State.HEALTHY and r.probe_inflight_until <= now
        ]
        return min(healthy, key=lambda r: r.last_probe, default=None)

    def _control_url_for(self, rec: _ProxyRec) -> str:
        # Rotate per proxy, so that consecutive probes of one proxy use different URLs.
        urls = [u for u, s in self._control.items() if not s.broken] or list(self._control)
        rec.probe_seq += 1
        return urls[rec.probe_seq % len(urls)]

    def probe_result(
        self, proxy_id: str, control_url: str, ok: bool, latency: float | None, now: float
    ) -> Sequence[Event]:
        cfg = self.config
        with self._lock:
            events: list[Event] = []
            stats = self._control.get(control_url)
            if stats is None:
                stats = self._control[control_url] = ControlUrlStats(control_url)
            conclusive = ok or (stats.worked_through_other(proxy_id) and self._our_side is None)
            change = stats.push(
                proxy_id, ok, min(cfg.control_url_broken_after, max(1, len(self._proxies))), now
            )
            if change is not None:
                events.append(ControlUrlChanged(control_url, bool(change), change or "works again"))
            rec = self._proxies.get(proxy_id)
            if rec is None:
                return events
            rec.probe_inflight_until = 0.0
            rec.last_probe = now
            rec.idle_after = self._idle_interval()
            if ok:
                self._probe_passed(rec, latency, now, events)
            elif conclusive:
                self._probe_failed(rec, control_url, now, events)
            else:
                self._probe_inconclusive(rec, now, events)
            return events

    def _probe_passed(
        self, rec: _ProxyRec, latency: float | None, now: float, events: list[Event]
    ) -> None:
        cfg = self.config
        rec.probe_fail_streak = 0
        state = rec.state
        if state is State.QUARANTINED:
            rec.probe_ok += 1
            rec.next_probe_at = now + cfg.probe_retry_interval
            # Hysteresis: 3 failures put it in, 5 probes in a row and the whole back-off get it out.
            if rec.probe_ok >= cfg.probes_to_return and now >= rec.until:
                self._return(rec, f"{rec.probe_ok} probes passed in a row", now, events)
        elif state is State.DEAD:
            rec.probe_ok = 1
            rec.until = now
            rec.next_probe_at = now + cfg.probe_retry_interval
            self._set_state(rec, State.QUARANTINED, "a probe passed; probing again", now, events)
        else:
            if latency is not None and latency >= 0.0:
                self._record_latency(rec, latency)
            self._check_degraded(rec, now, events)

    def _probe_failed(self, rec: _ProxyRec, url: str, now: float, events: list[Event]) -> None:
        cfg = self.config
        state = rec.state
        if state is State.QUARANTINED:
            if now >= rec.until:
                self._bench(rec, f"probe of {url} failed", now, events)
            else:
                rec.probe_ok = 0
                rec.next_probe_at = rec.until
        elif state is State.DEAD:
            rec.next_probe_at = now + cfg.dead_probe_interval * (1.0 - 0.5 * self._random())
        else:
            rec.probe_fail_streak += 1
            rec.idle_after = cfg.probe_retry_interval  # look again soon
            why = f"{rec.probe_fail_streak} probes failed in a row ({url})"
            if rec.probe_fail_streak >= cfg.recent_failures:
                rec.probe_fail_streak = 0
                self._bench(rec, why, now, events)
            else:
                self._degrade(rec, why, now, events)
                self._reweigh(rec)

    def _probe_inconclusive(self, rec: _ProxyRec, now: float, events: list[Event]) -> None:
        cfg = self.config
        if rec.state is State.QUARANTINED:
            rec.next_probe_at = now + cfg.probe_retry_interval
            if now >= rec.until:
                rec.probe_inconclusive += 1
                if rec.probe_inconclusive >= cfg.probes_to_return:
                    reason = "control URLs inconclusive; real traffic decides"
                    self._return(rec, reason, now, events)
        elif rec.state is State.DEAD:
            rec.next_probe_at = now + cfg.dead_probe_interval * (1.0 - 0.5 * self._random())

    # ----------------------------------------------------------------- snapshot

    def snapshot(self, now: float) -> PoolSnapshot:
        cfg = self.config
        with self._lock:
            if now >= self._next_maintenance:
                self._maintain(now, self._deferred)
            proxies = [self._proxy_stats(rec, now) for rec in self._proxies.values()]
            ids = set(self._proxies)
            recent = sorted(self._sites.items(), key=lambda item: -item[1].last_seen)
            recent = recent[: cfg.snapshot_sites]
            sites: dict[str, SiteStats] = {}
            matrix: dict[str, dict[str, CellStats]] = {}
            for name, site_rec in recent:
                n = len(site_rec.entries)
                sites[name] = {
                    "outcomes": site_rec.n,
                    "success_rate": 1.0 - site_rec.fails / n if n else 1.0,
                    "at_fault": site_rec.fault is not None,
                    "fault_reason": site_rec.fault,
                }
                matrix[name] = {
                    pid: {
                        "outcomes": p.n,
                        "success_rate": p.ok / p.n if p.n else 1.0,
                        "recent_success": p.route,
                        "benched_until": p.benched_until if p.benched_until > now else None,
                    }
                    for pid, p in site_rec.pairs.items()
                    if pid in ids
                }
            seconds = [b for b in self._buckets if now - 60 < b[0] <= now]
            outcomes = sum(b[1] for b in seconds)
            total = len(self._proxies)
            cap = int(cfg.quarantine_cap * total + 1e-9)
            out = self._counts[State.QUARANTINED] + self._counts[State.DEAD]
            controls: list[ControlUrlInfo] = [
                {"url": s.url, "broken": s.broken, "ok": s.ok, "failed": s.failed}
                for s in self._control.values()
            ]
            return {
                "time": now,
                "totals": {
                    "proxies": total,
                    "states": {state.value: n for state, n in self._counts.items()},
                    "in_service": len(self._cands),
                    "min_in_service": self._required_in_service(),
                    "quarantine_cap": cap,
                    "quarantine_cap_fill": out / cap if cap else float(out > 0),
                    "quarantines_total": sum(r.quarantines for r in self._proxies.values()),
                    "quarantines_last_hour": sum(1 for t in self._quarantine_log if t > now - 3600),
                    "leases_active": len(self._leases),
                    "sessions": sum(1 for s in self._sessions.values() if s.expires > now),
                    "outcomes_total": self._outcomes,
                    "throughput": outcomes / 60.0,
                    "success_rate": sum(b[2] for b in seconds) / outcomes if outcomes else None,
                    "our_side_fault": self._our_side,
                    "sites_at_fault": sorted(s for s, r in self._sites.items() if r.fault),
                },
                "proxies": proxies,
                "sites": sites,
                "matrix": matrix,
                "control_urls": controls,
            }

    def _proxy_stats(self, rec: _ProxyRec, now: float) -> ProxyStats:
        cfg = self.config
        window = rec.window
        n = window.n
        latencies = sorted(rec.latencies)
        quarantined = rec.state is State.QUARANTINED
        transition: TransitionInfo | None = None
        if rec.last_transition is not None:
            at, old, new, reason = rec.last_transition
            transition = {"at": at, "old": old.value, "new": new.value, "reason": reason}
        return {
            "id": rec.id,
            "display": rec.proxy.display,
            "tags": sorted(rec.proxy.tags),
            "state": rec.state.value,
            "weight": rec.weight,
            "static_weight": rec.static_weight,
            "success_rate": window.success_rate(cfg.soft_failure_weight) if n else None,
            "captcha_rate": window.captchas / n if n else None,
            "block_rate": window.blocks / n if n else None,
            "latency_p50": health.percentile(latencies, 0.5),
            "latency_p95": health.percentile(latencies, 0.95),
            "outcomes": n,
            "active": rec.active,
            "max_concurrent": rec.cap,
            "quarantines": rec.quarantines,
            "quarantine_seconds": rec.quarantine_time
            + (now - rec.state_since if quarantined else 0.0),
            "quarantined_until": rec.until if quarantined else None,
            "failed_cycles": rec.failed_cycles,
            "last_transition": transition,
        }
