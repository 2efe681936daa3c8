"""Seeded simulated worlds for bench/pool.py: the pool's success rate against an oracle.

Each world fixes, from its seed, how every (proxy, site) request ends: good proxies work
(96-99.5%), mediocre ones fail often (60-85%, timeouts), some are blocked by 3 of the sites
(captchas there), dead ones refuse every connection (the proxy's own fault), flapping ones do so
one minute in five (a proxy process that crashes and is restarted). On top, a background
of failures that no proxy can avoid (dead hosts in a bulk check: timeouts) hits every chooser
alike. The oracle knows the good proxies of each site and picks uniformly among them; it pays the
background noise like everyone. The pool sees only outcomes, released a few requests late as with
concurrency, on a manual clock.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from urlcheck.proxypool import (
    ErrorKind,
    Lease,
    ManualClock,
    Outcome,
    PoolConfig,
    ProxyPool,
)

__all__ = ["WORLDS", "World", "run", "run_all"]

OK = Outcome(status=200, latency=0.3)
TIMEOUT = Outcome(error=ErrorKind.TIMEOUT, latency=10.0)
REFUSED = Outcome(error=ErrorKind.PROXY_UNREACHABLE, latency=0.01)
CAPTCHA = Outcome(status=200, captcha="recaptcha", latency=0.3)

GOOD, MEDIOCRE, BLOCKED, DEAD, FLAPPING = "good", "mediocre", "blocked", "dead", "flapping"
FLAP_PERIOD, FLAP_DOWN = 300.0, 60.0  # seconds: a flapping proxy is down 1 minute in 5
IN_FLIGHT = 8  # outcomes arrive this many requests late
STEP = 0.02  # simulated seconds between two requests


@dataclass(frozen=True)
class World:
    name: str
    kinds: tuple[tuple[str, int], ...]  # (kind, how many proxies), in pool order
    sites: int = 10
    noise: float = 0.0  # background failures, whatever the proxy
    strategy: str = "weighted"
    keys: int = 0  # sticky keys (accounts); 0: no key
    config: dict[str, object] = field(default_factory=dict)

    @property
    def proxies(self) -> int:
        return sum(n for _, n in self.kinds)

    def describe(self) -> str:
        mix = ", ".join(f"{n} {kind}" for kind, n in self.kinds if n)
        how = f"{self.keys:,} sticky keys" if self.keys else self.strategy
        return f"{mix}; {self.sites} sites; noise {self.noise:.0%}; {how}"


MIXED = ((GOOD, 18), (MEDIOCRE, 6), (BLOCKED, 3), (DEAD, 3))
NOISY = ((GOOD, 24), (BLOCKED, 3), (DEAD, 3))
WORLDS = (
    World("mixed", MIXED),
    World("noise 5%", NOISY, noise=0.05),
    World("noise 10%", NOISY, noise=0.10),
    World("noise 15%", NOISY, noise=0.15),
    World("dead proxies", ((GOOD, 20), (DEAD, 10)), noise=0.02),
    World("3 proxies, 1 dead", ((GOOD, 2), (DEAD, 1)), sites=3, noise=0.02),
    World("flapping, noise 10%", ((GOOD, 24), (FLAPPING, 6)), noise=0.10),
    World("round_robin", MIXED, strategy="round_robin"),
    World("least_connections", MIXED, strategy="least_connections"),
    World("round_robin, noise 10%", NOISY, noise=0.10, strategy="round_robin"),
    World("sticky keys", MIXED, keys=500),
)


@dataclass
class Result:
    world: World
    pool: float
    oracle: float
    random: float
    states: dict[str, int]


# (proxy, site) -> (kind, success odds, phase: where a flapping proxy is in its period at 0)
Odds = dict[tuple[str, str], tuple[str, float, float]]


def _specs(count: int) -> list[str]:
    return [f"http://10.1.{i // 250}.{i % 250 + 1}:3128" for i in range(count)]


def _odds(world: World, ids: list[str], sites: list[str], rng: random.Random) -> Odds:
    kinds = [kind for kind, n in world.kinds for _ in range(n)]
    odds: Odds = {}
    for index, (proxy, kind) in enumerate(zip(ids, kinds, strict=True)):
        phase = FLAP_PERIOD * index / len(ids)  # staggered: not all down at once
        blocked_on = set(rng.sample(sites, min(3, len(sites))))
        for site in sites:
            if kind in (GOOD, FLAPPING):
                p = rng.uniform(0.96, 0.995)
            elif kind == MEDIOCRE:
                p = rng.uniform(0.6, 0.85)
            elif kind == BLOCKED:
                p = 0.0 if site in blocked_on else rng.uniform(0.95, 0.99)
            else:
                p = 0.0
            odds[proxy, site] = (kind if kind != BLOCKED or site in blocked_on else GOOD, p, phase)
    return odds


def _answer(
    kind: str, p: float, phase: float, noise: float, now: float, rng: random.Random
) -> Outcome:
    if kind == DEAD or (kind == FLAPPING and (now + phase) % FLAP_PERIOD < FLAP_DOWN):
        return REFUSED
    if rng.random() < noise:
        return TIMEOUT  # the site's or the network's: no proxy could have done better
    if rng.random() < p:
        return OK
    return CAPTCHA if kind == BLOCKED else TIMEOUT


def _simulate(
    world: World,
    odds: Odds,
    sites: list[str],
    choose: Callable[[str, str | None], str],
    report: Callable[[Outcome], None],
    requests: int,
    seed: int,
) -> float:
    rng = random.Random(seed)
    keys = [f"account-{i}" for i in range(world.keys)]
    ok = 0
    for index in range(requests):
        site = sites[rng.randrange(len(sites))]
        key = keys[rng.randrange(len(keys))] if keys else None
        kind, p, phase = odds[choose(site, key), site]
        outcome = _answer(kind, p, phase, world.noise, index * STEP, rng)
        report(outcome)
        ok += outcome.ok
    return ok / requests


def run(world: World, seed: int, requests: int) -> Result:
    clock = ManualClock()
    start = clock.now
    config = PoolConfig(strategy=world.strategy, **world.config)  # type: ignore[arg-type]
    pool = ProxyPool(_specs(world.proxies), config, clock=clock, seed=seed)
    ids = [p.id for p in pool.proxies]
    sites = [f"site{i}.example" for i in range(world.sites)]
    odds = _odds(world, ids, sites, random.Random(seed))
    leased: list[Lease] = []
    in_flight: deque[tuple[Lease, Outcome]] = deque()
    # Probes as a crawl sends them with the defaults: HEAD of the first URL of its first hosts,
    # answered unless the proxy is down, asked for once a simulated second.
    for site in sites:
        pool.add_probe_target(f"http://{site}/first-row")
    probe_at = [0.0]

    def probe(now: float) -> None:
        probe_at[0] = now + 1.0
        for task in pool.due_probes():
            kind, _, phase = odds[task.proxy.id, sites[0]]
            down = kind == DEAD or (kind == FLAPPING and (now + phase) % FLAP_PERIOD < FLAP_DOWN)
            pool.report_probe(task.proxy.id, task.control_url, not down, 0.3)

    def pool_choose(site: str, key: str | None) -> str:
        lease = pool.acquire(site, key)
        leased.append(lease)
        clock.now += STEP
        if clock.now >= probe_at[0]:
            probe(clock.now - start)
        return lease.proxy.id

    def pool_report(outcome: Outcome) -> None:
        in_flight.append((leased.pop(), outcome))
        if len(in_flight) > IN_FLIGHT:
            pool.release(*in_flight.popleft())

    picker = random.Random(seed + 1)
    good = {s: [p for p in ids if odds[p, s][0] == GOOD] for s in sites}

    def oracle_choose(site: str, key: str | None) -> str:
        choices = good[site]
        return choices[picker.randrange(len(choices))]

    def random_choose(site: str, key: str | None) -> str:
        return ids[picker.randrange(len(ids))]

    def ignore(outcome: Outcome) -> None:
        return None

    pool_rate = _simulate(world, odds, sites, pool_choose, pool_report, requests, seed)
    oracle_rate = _simulate(world, odds, sites, oracle_choose, ignore, requests, seed)
    random_rate = _simulate(world, odds, sites, random_choose, ignore, requests, seed)
    states = pool.snapshot()["totals"]["states"]
    return Result(
        world, pool_rate, oracle_rate, random_rate, {k: v for k, v in states.items() if v}
    )


def run_all(seed: int, requests: int, *, bound: float = 0.01) -> list[Result]:
    """Run every world; print the pool's success next to the oracle's, and the bound."""
    print(
        f"simulated worlds (seed {seed}, {requests:,} requests each): pool success against an "
        f"oracle that knows the good proxies (target: within {bound} of it)"
    )
    head = f"  {'world':<24} {'oracle':>7} {'pool':>7} {'gap':>7} {'random':>7}"
    print(f"{head}  pool states at the end")
    results = []
    for world in WORLDS:
        result = run(world, seed, requests)
        results.append(result)
        gap = result.oracle - result.pool
        mark = "ok" if gap <= bound else "OVER"
        print(
            f"  {world.name:<24} {result.oracle:>7.3f} {result.pool:>7.3f} {gap:>+7.3f} "
            f"{result.random:>7.3f}  {mark:<4} {result.states}"
        )
    for world in WORLDS:
        print(f"    {world.name}: {world.describe()}")
    return results


if __name__ == "__main__":
    import logging

    logging.disable(logging.ERROR)
    run_all(7, 60_000)
