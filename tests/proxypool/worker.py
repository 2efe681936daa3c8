"""A crawler process stand-in for the multi-process tests: a pool on a shared Redis store.

Run: python -m tests.proxypool.worker REDIS_URL COMMAND. Prints one JSON line with what it did,
then (``hold``) keeps its leases until stdin closes or it is killed.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections import deque

from urlcheck.proxypool import (
    Lease,
    ManualClock,
    NoProxyAvailableError,
    Outcome,
    PoolConfig,
    Proxy,
    ProxyPool,
)
from urlcheck.proxypool.pool import LeaseCapReached
from urlcheck.proxypool.store.redis import RedisStore

from .sim import BLOCKED, OK, TIMEOUT, UNREACHABLE, proxy_urls

PROXIES = 10
CAP = 1
CONFIG = PoolConfig(max_concurrent=CAP, fail_closed=True, lease_ttl=60.0)
START = 1_000_000.0  # the pools' shared manual clock: no test waits for a TTL


def pool(url: str) -> ProxyPool:
    store = RedisStore(url, "shared", server_time=False)
    return ProxyPool(proxy_urls(PROXIES), CONFIG, store=store, clock=ManualClock(START), seed=1)


def hold(url: str, wanted: int) -> None:
    """Take up to `wanted` leases and keep them."""
    p = pool(url)
    leases = []
    for index in range(wanted):
        try:
            leases.append(p.acquire(f"site{index % 3}.test"))
        except NoProxyAvailableError:
            break
    print(json.dumps({"held": len(leases)}), flush=True)
    sys.stdin.read()  # hold until told to go


def quarantine(url: str) -> None:
    """Fail the first proxy until this process quarantines it."""
    p = pool(url)
    target = p.proxies[0].id
    clock = p._clock
    assert isinstance(clock, ManualClock)
    for _ in range(200):
        lease = p.acquire("site.test", key=None)
        clock.advance(0.1)
        p.release(lease, UNREACHABLE if lease.proxy.id == target else OK)
        states = {x["id"]: x["state"] for x in p.snapshot()["proxies"]}
        if states[target] == "quarantined":
            break
    print(json.dumps({"target": target, "state": states[target]}), flush=True)


def bench(url: str) -> None:
    """Block the first proxy on one site only, until this process benches that pair."""
    p = pool(url)
    target = p.proxies[0].id
    clock = p._clock
    assert isinstance(clock, ManualClock)
    benched = None
    for index in range(2000):
        site = ("blocked.test", "fine.test", "also-fine.test")[index % 3]
        lease = p.acquire(site)
        clock.advance(0.05)
        p.release(lease, BLOCKED if (site, lease.proxy.id) == ("blocked.test", target) else OK)
        cell = p.snapshot()["matrix"].get("blocked.test", {}).get(target)
        if cell is not None and cell["benched_until"] is not None:
            benched = cell["benched_until"]
            break
    states = {x["id"]: x["state"] for x in p.snapshot()["proxies"]}
    print(json.dumps({"target": target, "benched": benched, "state": states[target]}), flush=True)


def sticky(url: str, key: str) -> None:
    """The proxy the key's session is on."""
    p = pool(url)
    for _ in range(500):  # a cap of 1: the other process's lease of the key is refused meanwhile
        try:
            lease = p.acquire("site.test", key=key)
            break
        except LeaseCapReached:
            time.sleep(0.01)  # as a crawl does: it asks again later (docs/proxypool.md)
    p.release(lease, OK)
    print(json.dumps({"proxy": lease.proxy.id}), flush=True)


FLEET_SITES = ("a.test", "b.test", "c.test")


def fleet_pool(url: str) -> ProxyPool:
    """A pool as a crawler process has it: the system clock, the server's TIME, default
    thresholds."""
    store = RedisStore(url, "fleet")
    return ProxyPool(proxy_urls(PROXIES), PoolConfig(lease_ttl=60.0), store=store, seed=None)


def ready() -> None:
    """Say so, and wait for the word: the processes run at the same time, each with its pool
    made (and listening to the others) before any traffic."""
    print(json.dumps({"ready": True}), flush=True)
    sys.stdin.readline()


def fleet(url: str, steps: int) -> None:
    """Traffic with two leases in flight, where the first proxy always times out; once told
    that every process is done, prints how many of its requests failed here, and the state
    this process sees."""
    p = fleet_pool(url)
    dead = Proxy.parse(proxy_urls(PROXIES)[0]).id  # (the books' order is the store's)
    rng = random.Random()
    inflight: deque[Lease] = deque()
    failures = 0
    ready()
    for _ in range(steps):
        inflight.append(p.acquire(FLEET_SITES[rng.randrange(3)]))
        if len(inflight) > 2:
            lease = inflight.popleft()
            failures += lease.proxy.id == dead
            p.release(lease, TIMEOUT if lease.proxy.id == dead else OK)
    for lease in inflight:
        failures += lease.proxy.id == dead
        p.release(lease, TIMEOUT if lease.proxy.id == dead else OK)
    p.flush()  # the successes held back, for the others' snapshots
    print(json.dumps({"done": True}), flush=True)
    sys.stdin.readline()  # every process is done: a process that ran ahead sees the others' too
    states = {x["id"]: x["state"] for x in p.snapshot()["proxies"]}
    print(json.dumps({"dead": dead, "failures": failures, "state": states[dead]}), flush=True)


def world(url: str, steps: int) -> None:
    """A world where the first proxy always times out (quarantined), the second becomes five
    times slower for the last quarter (degraded: a latency spike, judged before its norm
    follows) and the third is blocked by one site (a benched cell); after the traffic, waits
    for a line on stdin, then prints its snapshot.

    The first tenth of the traffic goes to the two sites that block nobody: the blocked proxy
    has worked elsewhere before a.test blocks it (a proxy whose only outcomes are failures is
    out after three, wherever they come from, so a run that drew a.test three times first
    would quarantine it, as designed)."""
    p = fleet_pool(url)
    dead, slow, blocked = (Proxy.parse(spec).id for spec in proxy_urls(PROXIES)[:3])
    rng = random.Random()
    ready()
    for step in range(steps):
        site = FLEET_SITES[1 + rng.randrange(2) if step < steps // 10 else rng.randrange(3)]
        lease = p.acquire(site)
        who = lease.proxy.id
        if who == dead:
            outcome = TIMEOUT
        elif who == blocked and site == "a.test":
            outcome = BLOCKED
        elif who == slow and step > 3 * steps // 4:
            outcome = Outcome(status=200, latency=1.5)
        else:
            outcome = OK
        p.release(lease, outcome)
    p.flush()  # the successes held back, for the others' snapshots
    print(json.dumps({"done": True}), flush=True)
    sys.stdin.readline()  # every process is done: the log is complete
    snapshot = p.snapshot()
    print(json.dumps({"ids": [dead, slow, blocked], "snapshot": snapshot}), flush=True)


if __name__ == "__main__":
    redis_url, command, *rest = sys.argv[1:]
    if command == "hold":
        hold(redis_url, int(rest[0]))
    elif command == "quarantine":
        quarantine(redis_url)
    elif command == "bench":
        bench(redis_url)
    elif command == "fleet":
        fleet(redis_url, int(rest[0]))
    elif command == "world":
        world(redis_url, int(rest[0]))
    elif command == "sticky":
        sticky(redis_url, rest[0])
    else:
        raise SystemExit(f"unknown command {command}")
