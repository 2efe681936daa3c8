"""A crawler process stand-in for the multi-process tests: a pool on a shared Redis store.

Run: python -m tests.proxypool.worker REDIS_URL COMMAND. Prints one JSON line with what it did,
then (``hold``) keeps its leases until stdin closes or it is killed.
"""

from __future__ import annotations

import json
import sys

from urlcheck.proxypool import (
    ManualClock,
    NoProxyAvailableError,
    PoolConfig,
    ProxyPool,
)
from urlcheck.proxypool.store.redis import RedisStore

from .sim import BLOCKED, OK, UNREACHABLE, proxy_urls

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
    lease = p.acquire("site.test", key=key)
    p.release(lease, OK)  # (a cap of 1: the other process's lease of the key waits for it)
    print(json.dumps({"proxy": lease.proxy.id}), flush=True)


if __name__ == "__main__":
    redis_url, command, *rest = sys.argv[1:]
    if command == "hold":
        hold(redis_url, int(rest[0]))
    elif command == "quarantine":
        quarantine(redis_url)
    elif command == "bench":
        bench(redis_url)
    elif command == "sticky":
        sticky(redis_url, rest[0])
    else:
        raise SystemExit(f"unknown command {command}")
