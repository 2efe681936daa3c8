"""Benchmark of the proxy pool: speed, and success on a simulated world.

Run: python bench/pool.py [--seed N] [--pairs N] [--requests N]

Every figure is printed next to a bound or a baseline measured in the same run: pairs per second
against the 50,000/s target; the pool's success rate against an oracle that knows the good
proxies and against uniform random choice.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from urlcheck.proxypool import (
    ErrorKind,
    Lease,
    ManualClock,
    Outcome,
    PoolConfig,
    ProxyPool,
)

TARGET_PAIRS = 50_000
OK = Outcome(status=200, latency=0.3)
FAILED = Outcome(error=ErrorKind.TIMEOUT, latency=10.0)


def proxy_specs(count: int) -> list[str]:
    return [f"http://user{i}:pw{i}@10.0.{i // 250}.{i % 250 + 1}:3128" for i in range(count)]


def measure_pairs(
    label: str, config: PoolConfig, *, sites: int, keys: int, pairs: int, fail_every: int = 0
) -> None:
    clock = ManualClock()
    pool = ProxyPool(proxy_specs(20), config, clock=clock, seed=1)
    site_names = [f"site{i}.example" for i in range(sites)]
    key_names = [f"session{i}" for i in range(keys)] if keys else [None]
    noise = random.Random(5)
    plan = [
        (
            site_names[i % sites],
            key_names[i % len(key_names)],
            FAILED if fail_every and noise.randrange(fail_every) == 0 else OK,
        )
        for i in range(4096)
    ]
    acquire, release = pool.acquire, pool.release
    # warm the caches and sessions first, then time
    for site, key, outcome in plan:
        release(acquire(site, key), outcome)
    start = time.perf_counter()
    for index in range(pairs):
        site, key, outcome = plan[index & 4095]
        release(acquire(site, key), outcome)
        clock.now += 0.001
    rate = pairs / (time.perf_counter() - start)
    print(f"  {label:<44} {rate:>9,.0f} pairs/s = {rate / TARGET_PAIRS:.2f} x target")


@dataclass
class World:
    """True success probability of every (proxy, site) pair, fixed by the seed."""

    proxies: list[str]
    sites: list[str]
    odds: dict[tuple[str, str], float]

    @classmethod
    def make(cls, seed: int, proxies: list[str], site_count: int) -> World:
        rng = random.Random(seed)
        sites = [f"site{i}.example" for i in range(site_count)]
        odds = {}
        for index, proxy in enumerate(proxies):
            kind = index % 10
            blocked_on = set(rng.sample(sites, 3))
            for site in sites:
                if kind < 6:  # good
                    p = rng.uniform(0.96, 0.995)
                elif kind < 8:  # mediocre everywhere
                    p = rng.uniform(0.6, 0.85)
                elif kind == 8:  # blocked by a few sites
                    p = 0.02 if site in blocked_on else rng.uniform(0.95, 0.99)
                else:  # dead
                    p = 0.0
                odds[proxy, site] = p
        return cls(proxies, sites, odds)


Chooser = Callable[[str], str]


def simulate(
    world: World,
    choose: Chooser,
    report: Callable[[str, str, bool], None],
    requests: int,
    seed: int,
) -> float:
    rng = random.Random(seed)
    ok = 0
    for _ in range(requests):
        site = world.sites[rng.randrange(len(world.sites))]
        proxy = choose(site)
        success = rng.random() < world.odds[proxy, site]
        report(proxy, site, success)
        ok += success
    return ok / requests


def world_run(seed: int, requests: int) -> None:
    config = PoolConfig()
    clock = ManualClock()
    pool = ProxyPool(proxy_specs(30), config, clock=clock, seed=seed)
    ids = [p.id for p in pool.proxies]
    world = World.make(seed, ids, 10)
    leased: list[Lease] = []
    in_flight: deque[tuple[Lease, Outcome]] = deque()

    def pool_choose(site: str) -> str:
        lease = pool.acquire(site)
        leased.append(lease)
        clock.now += 0.02
        return lease.proxy.id

    def pool_report(proxy_id: str, site: str, success: bool) -> None:
        # Outcomes arrive a few requests later, as they do with concurrency.
        in_flight.append((leased.pop(), OK if success else FAILED))
        if len(in_flight) > 8:
            pool.release(*in_flight.popleft())

    picker = random.Random(seed + 1)
    good = {s: [p for p in ids if world.odds[p, s] >= 0.9] for s in world.sites}

    def random_choose(site: str) -> str:
        return ids[picker.randrange(len(ids))]

    def oracle_choose(site: str) -> str:
        choices = good[site]
        return choices[picker.randrange(len(choices))]

    def ignore(proxy_id: str, site: str, success: bool) -> None:
        return None

    pool_rate = simulate(world, pool_choose, pool_report, requests, seed)
    random_rate = simulate(world, random_choose, ignore, requests, seed)
    oracle_rate = simulate(world, oracle_choose, ignore, requests, seed)
    closed = (pool_rate - random_rate) / (oracle_rate - random_rate)
    totals = pool.snapshot()["totals"]
    print(
        f"simulated world (seed {seed}): 30 proxies (60% good, 20% mediocre, 10% blocked on 3 "
        f"of 10 sites, 10% dead), {requests:,} requests, same sites for each chooser"
    )
    print(f"  oracle (knows the good proxies)   success {oracle_rate:.3f}")
    print(
        f"  pool (weighted, defaults)         success {pool_rate:.3f} = "
        f"{pool_rate / oracle_rate:.3f} x oracle, {pool_rate / random_rate:.2f} x random"
    )
    print(f"  uniform random                    success {random_rate:.3f}")
    print(f"  share of the random-to-oracle gap the pool closes: {closed:.0%}")
    print(
        f"  pool states at the end: {totals['states']}, quarantines: {totals['quarantines_total']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pairs", type=int, default=200_000)
    parser.add_argument("--requests", type=int, default=60_000)
    args = parser.parse_args()
    logging.disable(logging.ERROR)  # the pool's state changes are not what is measured here
    print(f"acquire+release pairs per second, in memory, 20 proxies (target {TARGET_PAIRS:,}/s):")
    measure_pairs("weighted, 1 site", PoolConfig(), sites=1, keys=0, pairs=args.pairs)
    measure_pairs("weighted, 100 sites", PoolConfig(), sites=100, keys=0, pairs=args.pairs)
    measure_pairs(
        "weighted, 100 sites, 5% timeouts",
        PoolConfig(),
        sites=100,
        keys=0,
        pairs=args.pairs,
        fail_every=20,
    )
    measure_pairs(
        "round_robin, 100 sites",
        PoolConfig(strategy="round_robin"),
        sites=100,
        keys=0,
        pairs=args.pairs,
    )
    measure_pairs(
        "least_connections, 100 sites",
        PoolConfig(strategy="least_connections"),
        sites=100,
        keys=0,
        pairs=args.pairs,
    )
    measure_pairs(
        "sticky, 1,000 keys, 100 sites", PoolConfig(), sites=100, keys=1000, pairs=args.pairs
    )
    print()
    world_run(args.seed, args.requests)


if __name__ == "__main__":
    main()
