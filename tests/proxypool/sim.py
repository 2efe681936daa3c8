"""A seeded, simulated world for driving a real `ProxyPool` on a `ManualClock`.

The world decides how each request ends from (proxy id, site, time); the pool only sees outcomes.
Nothing here sleeps or touches the network.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from urlcheck.proxypool import (
    ErrorKind,
    Lease,
    LeaseCapReached,
    ManualClock,
    MemoryStore,
    Outcome,
    PoolConfig,
    PoolSnapshot,
    PoolStore,
    Proxy,
    ProxyPool,
    SessionLost,
)

# The store every pool made here gets: the `pool_store` fixture (conftest.py) sets it, so that
# one suite runs against every store.
STORE: Callable[[], PoolStore] = MemoryStore

OK = Outcome(status=200, latency=0.3)
NOT_FOUND = Outcome(status=404, latency=0.3)
TIMEOUT = Outcome(error=ErrorKind.TIMEOUT, latency=30.0)
CONNECT = Outcome(error=ErrorKind.CONNECT, latency=0.5)
UNREACHABLE = Outcome(error=ErrorKind.PROXY_UNREACHABLE, latency=5.0)
BLOCKED = Outcome(status=403, block="waf", latency=0.3)
CAPTCHA = Outcome(status=200, captcha="recaptcha", latency=0.3)
RATE_LIMITED = Outcome(status=429, latency=0.3)
AUTH = Outcome(status=407, error=ErrorKind.PROXY_AUTH, latency=0.1)

CONTROL_URLS = ("http://127.0.0.2/ok", "http://127.0.0.3/ok")

# (proxy id, site, now, rng) -> outcome
Behaviour = Callable[[str, str, float, random.Random], Outcome]
# (proxy id, control url, now, rng) -> passed
ProbeBehaviour = Callable[[str, str, float, random.Random], bool]


def proxy_urls(count: int, *, credentials: bool = False) -> list[str]:
    auth = "user{0}:pw{0}@" if credentials else ""
    return [f"http://{auth.format(i)}10.0.{i // 250}.{i % 250 + 1}:3128" for i in range(count)]


def new_pool(
    proxies: Sequence[Proxy | str] = (),
    config: PoolConfig | None = None,
    *,
    clock: ManualClock | None = None,
    seed: int | None = None,
) -> ProxyPool:
    """A pool on a `ManualClock` and the store under test."""
    clock = clock if clock is not None else ManualClock()
    return ProxyPool(proxies, config, store=STORE(), clock=clock, seed=seed)


def make_pool(count: int, config: PoolConfig | None = None, *, seed: int = 1) -> ProxyPool:
    return new_pool(proxy_urls(count), config or PoolConfig(), seed=seed)


def clock_of(pool: ProxyPool) -> ManualClock:
    clock = pool._clock
    assert isinstance(clock, ManualClock)
    return clock


def noisy(rate: float, bad: Outcome = TIMEOUT) -> Behaviour:
    """Every proxy works everywhere, failing at random with `rate`."""

    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        return bad if rng.random() < rate else OK

    return behave


@dataclass
class Sim:
    pool: ProxyPool
    behaviour: Behaviour
    sites: Sequence[str]
    probe: ProbeBehaviour | None = None
    seed: int = 7
    interval: float = 0.05  # simulated seconds between two acquires
    concurrency: int = 8  # leases in flight
    keys: Sequence[str] = ()
    rng: random.Random = field(init=False)
    inflight: deque[Lease] = field(init=False, default_factory=deque)
    requests: int = 0
    successes: int = 0
    lost: int = 0  # requests not sent: their sticky session ended (SessionLost)
    per_site: Counter[str] = field(default_factory=Counter)
    per_site_ok: Counter[str] = field(default_factory=Counter)
    per_proxy: Counter[str] = field(default_factory=Counter)
    per_cell: Counter[tuple[str, str]] = field(default_factory=Counter)  # (site, proxy id)
    next_probe_at: float = 0.0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.clock = clock_of(self.pool)

    def reset_counts(self) -> None:
        self.requests = self.successes = 0
        self.per_site.clear()
        self.per_site_ok.clear()
        self.per_proxy.clear()
        self.per_cell.clear()

    @property
    def success_rate(self) -> float:
        return self.successes / self.requests if self.requests else 1.0

    def site_success(self, site: str) -> float:
        return self.per_site_ok[site] / self.per_site[site]

    def step(self) -> Lease | None:
        site = self.sites[self.rng.randrange(len(self.sites))]
        key = self.keys[self.rng.randrange(len(self.keys))] if self.keys else None
        while True:
            try:
                lease = self.pool.acquire(site, key)
                break
            except SessionLost:
                # the key's proxy left and its session ended: this request is not sent
                self.lost += 1
                self.clock.advance(self.interval)
                return None
            except LeaseCapReached:
                if key is None or not self.inflight:
                    raise
                # the key's proxy is at its cap: the session waits for a request to end
                self.finish(self.inflight.popleft())
        self.inflight.append(lease)
        if len(self.inflight) > self.concurrency:
            self.finish(self.inflight.popleft())
        self.clock.advance(self.interval)
        if self.probe is not None and self.clock.now >= self.next_probe_at:
            self.next_probe_at = self.clock.now + 1.0
            self.run_probes()
        return lease

    def finish(self, lease: Lease) -> None:
        outcome = self.behaviour(lease.proxy.id, lease.site, self.clock.now, self.rng)
        self.pool.release(lease, outcome)
        self.requests += 1
        self.per_site[lease.site] += 1
        self.per_proxy[lease.proxy.id] += 1
        self.per_cell[(lease.site, lease.proxy.id)] += 1
        if outcome.ok:
            self.successes += 1
            self.per_site_ok[lease.site] += 1

    def drain(self) -> None:
        while self.inflight:
            self.finish(self.inflight.popleft())

    def run_probes(self) -> None:
        assert self.probe is not None
        for task in self.pool.due_probes():
            ok = self.probe(task.proxy.id, task.control_url, self.clock.now, self.rng)
            self.pool.report_probe(task.proxy.id, task.control_url, ok, 0.2)

    def run(
        self,
        steps: int,
        *,
        check: Callable[[PoolSnapshot], None] | None = None,
        check_every: int = 20,
    ) -> None:
        for index in range(steps):
            self.step()
            if check is not None and index % check_every == 0:
                check(self.pool.snapshot())


def states_of(snapshot: PoolSnapshot) -> dict[str, str]:
    return {p["id"]: p["state"] for p in snapshot["proxies"]}


def benched_pairs(snapshot: PoolSnapshot) -> list[tuple[str, str]]:
    return [
        (site, proxy_id)
        for site, row in snapshot["matrix"].items()
        for proxy_id, cell in row.items()
        if cell["benched_until"] is not None
    ]
