"""The pool's books: what this process knows of each proxy, site and (proxy, site) pair.

Plain records, no locks and no I/O: the policy functions in this package read and change them,
and report the state changes that other processes must see (``Books.dirty``) for the store to
commit. See docs/proxypool.md, "Policy and storage".
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, NamedTuple

from urlcheck.proxypool.rules.hashing import stable_hash
from urlcheck.proxypool.rules.health import State, Window
from urlcheck.proxypool.rules.probes import ControlUrlStats

if TYPE_CHECKING:
    import random
    from collections.abc import Callable

    from urlcheck.proxypool.config import PoolConfig
    from urlcheck.proxypool.events import Event
    from urlcheck.proxypool.proxy import Proxy

__all__ = ["Books", "PairCase", "PairRec", "ProxyRec", "SiteRec"]

# seconds between two maintenance passes (expired leases, back-offs over, outlier rule)
MAINTENANCE_EVERY = 1.0


class ProxyRec:
    __slots__ = (
        "active",
        "bench_a",
        "bench_a_until",
        "bench_b",
        "bench_b_until",
        "cap",
        "failed_cycles",
        "fault_since",
        "fault_streak",
        "id",
        "idle_after",
        "last_probe",
        "last_transition",
        "last_used",
        "lat_fast",
        "lat_n",
        "lat_ratio",
        "lat_rn",
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
        "share",
        "slowed",
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
        self.slowed = False  # its weight carries a latency penalty (see states.reweigh)
        self.share = 1.0  # of its turns under the unweighted strategies (see strategies.py)
        self.window = Window(cfg.window_size, cfg.recent_window)
        self.latencies: deque[float] = deque(maxlen=cfg.window_size)
        self.lat_fast = 0.0  # recent latency, seconds (the weight compares it with the pool's)
        self.lat_n = 0
        # recent latency over its own norm on each site (`PairRec.lat_norm`): what a spike is
        # judged on, so that a change of sites (a slow host next) is no spike
        self.lat_ratio = 1.0
        self.lat_rn = 0
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
        self.fault_streak = 0  # failures in a row that can only be the proxy's (refused, 407)
        self.fault_since = 0.0  # when that streak began
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


class PairRec:
    __slots__ = (
        "benched_until",
        "factor",
        "last_seen",
        "lat_n",
        "lat_norm",
        "level",
        "n",
        "ok",
        "route",
        "window",
    )

    def __init__(self, cfg: PoolConfig) -> None:
        self.window = Window(cfg.pair_window_size, cfg.recent_window)
        self.route = 1.0  # moving success average; steers routing even while the site is excused
        self.factor = 1.0
        self.benched_until = 0.0
        self.level = 0
        self.n = self.ok = 0
        self.last_seen = 0.0
        self.lat_norm = 0.0  # the proxy's usual latency on this site
        self.lat_n = 0


class SiteRec:
    __slots__ = ("countdown", "entries", "fails", "fault", "last_seen", "n", "ok", "pairs")

    def __init__(self, cfg: PoolConfig) -> None:
        self.entries: deque[tuple[float, str, int]] = deque(maxlen=cfg.site_window_size)
        self.fails = 0
        self.pairs: dict[str, PairRec] = {}
        self.fault: str | None = None
        self.last_seen = 0.0
        self.countdown = 0
        self.n = self.ok = 0

    def pair(self, proxy_id: str, cfg: PoolConfig) -> PairRec:
        pair = self.pairs.get(proxy_id)
        if pair is None:
            pair = self.pairs[proxy_id] = PairRec(cfg)
        return pair


class PairCase(NamedTuple):
    """A (proxy, site) pair being judged: the proxy's, the site's and the pair's records, which
    the blame rules pass along together."""

    rec: ProxyRec
    site: str
    site_rec: SiteRec
    pair: PairRec


class Books:
    """Everything the policy judges on, for one pool in one process."""

    def __init__(self, config: PoolConfig, rng: random.Random) -> None:
        self.config = config
        self.random: Callable[[], float] = rng.random
        self.proxies: dict[str, ProxyRec] = {}
        self.cands: list[ProxyRec] = []  # in service, in insertion order
        self.max_weight = 1.0
        self.counts = dict.fromkeys(State, 0)
        self.deferred: list[Event] = []  # found outside a call that reports events
        self.sites: dict[str, SiteRec] = {}
        # (time, proxy id, code, site) of the pool's latest outcomes
        self.pool: deque[tuple[float, str, int, str]] = deque(maxlen=config.global_window_size)
        self.pool_fails = 0
        self.pool_latency = 0.0
        self.pool_alpha = 1.0 / config.global_window_size
        self.pair_alpha = 2.0 / (config.pair_window_size + 1)
        self.our_side: str | None = None
        self.our_countdown = 0
        self.rr = 0
        self.quarantine_log: deque[float] = deque(maxlen=100_000)
        self.buckets = [[0, 0, 0] for _ in range(60)]  # [second, outcomes, successes]
        self.outcomes = 0
        self.control = {url: ControlUrlStats(url) for url in config.control_urls}
        self.next_maintenance = -math.inf
        self.next_sweep = -math.inf
        self.next_outlier = -math.inf
        # the typical failure rate (`judge.noise_level`), measured once a second: failures and
        # outcomes pooled, and each proxy's part of them (left out when it is judged)
        self.noise_at = -math.inf
        self.noise_fails = self.noise_captchas = self.noise_total = 0.0
        self.noise_parts: dict[str, tuple[float, float, float]] = {}
        # changes other processes must see, for the store to commit: proxy ids whose state
        # changed, and (site, proxy id, until) benches
        self.dirty: set[str] = set()
        self.dirty_benches: list[tuple[str, str, float]] = []
        # sticky keys (see sessions.py): this process's view of each key's proxy, and the
        # (key, site) sessions that stand in while that proxy is benched on the site
        self.homes: dict[str, str] = {}
        self.homes_before: dict[str, str] = {}  # the previous session TTL's
        self.homes_turn_at = -math.inf
        self.splits: dict[tuple[str, str], float] = {}

    def site(self, name: str, now: float) -> SiteRec:
        rec = self.sites.get(name)
        if rec is None:
            rec = self.sites[name] = SiteRec(self.config)
            rec.last_seen = now
        return rec

    def idle_interval(self) -> float:
        cfg = self.config
        return cfg.probe_idle_min + (cfg.probe_idle_max - cfg.probe_idle_min) * self.random()

    def refresh_max_weight(self) -> None:
        self.max_weight = max((r.static_weight for r in self.cands), default=1.0)

    def required_in_service(self) -> int:
        return min(self.config.min_in_service, len(self.proxies) - self.counts[State.DEAD])

    def quarantine_cap(self) -> int:
        """Most proxies quarantined at once: ``quarantine_cap`` of those not dead, at least one.

        Dead proxies are left out (they are not the policy's to lift, and after half the pool
        died nothing could be quarantined any more), and the floor of one lets a pool of three
        bench its broken proxy: ``min_in_service`` is the limit that keeps small pools serving.
        """
        share = self.config.quarantine_cap
        if share <= 0.0:
            return 0
        return max(1, int(share * (len(self.proxies) - self.counts[State.DEAD]) + 1e-9))

    def take_dirty(self) -> tuple[dict[str, tuple[State, float]], list[tuple[str, str, float]]]:
        """The changes to commit, and forget them."""
        states = {}
        for proxy_id in self.dirty:
            rec = self.proxies.get(proxy_id)
            if rec is not None:
                states[proxy_id] = (rec.state, rec.until)
        benches = self.dirty_benches
        self.dirty = set()
        self.dirty_benches = []
        return states, benches
