"""Stores for the pool tests: `pool_store` runs a test once per store (memory, and Redis on a
private server flushed before each test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redisserver import RedisServer
from urlcheck.proxypool import MemoryStore

from . import sim


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(params=["memory", "redis"])
def pool_store(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "redis":
        from urlcheck.proxypool.store.redis import RedisStore

        server: RedisServer = request.getfixturevalue("redis_server")
        server.flush()
        sim.STORE = lambda: RedisStore(server.url, "test", server_time=False)
    try:
        yield request.param
    finally:
        sim.STORE = MemoryStore


# The seeded simulations run the pool tens of thousands of times a test, and tracing made them
# the largest CPU cost of the suite under --cov (a traced memory run takes twice as long, a
# traced Redis run 1.4 times). Their Redis runs, but for the one in
# TRACED, and the costliest of their memory runs (UNTRACED) are not traced: the traced pool
# tests reach every line and branch that they do (checked with --cov-context=test; the Redis
# run in TRACED alone reaches judge.py's guard of the minimum in service when a site benches a
# pair). A new simulation is traced until it is shown to add nothing.
SIMULATIONS = frozenset({"test_scenarios.py", "test_guide.py"})
TRACED = frozenset({"test_minimum_in_service_holds_in_a_small_pool"})
UNTRACED = frozenset({
    "test_site_wide_outage_quarantines_nobody",
    "test_noise_alone_quarantines_nobody",
    "test_thirty_percent_bad_on_one_site",
    "test_failing_proxy_blocked_by_the_cap_is_not_reported_probing",
    "test_mass_incident_respects_cap_and_minimum[memory-one-site]",
    "test_mass_incident_respects_cap_and_minimum[memory-all-5-sites]",
    "test_mass_incident_respects_cap_and_minimum[memory-half-the-proxies]",
})  # fmt: skip


def _untraced(item: pytest.Function) -> bool:
    store = item.callspec.params.get("pool_store") if hasattr(item, "callspec") else None
    if store == "redis":
        return item.originalname not in TRACED
    return store == "memory" and bool({item.originalname, item.name} & UNTRACED)


# The costliest simulations vary the world they run in (its sites, its failures, its seed): on
# Redis each runs in one of its worlds, named here; the others test the policy, on memory, as
# the memory runs of every world do. What the Redis run tests is the store: that one run shows
# the scenario's states, caps and benches kept in Redis as in memory.
ON_REDIS_ONCE = frozenset({
    "test_mass_incident_respects_cap_and_minimum[redis-half-unreachable]",
    "test_site_wide_outage_quarantines_nobody[redis-timeout-sites0-c]",
    "test_thirty_percent_bad_on_one_site[redis-1-three-sites]",
    "test_noise_alone_quarantines_nobody[redis-0.1]",
})  # fmt: skip
_REDIS_ONCE_FUNCTIONS = frozenset(name.split("[")[0] for name in ON_REDIS_ONCE)


def _another_redis_world(item: pytest.Function) -> bool:
    return (
        item.originalname in _REDIS_ONCE_FUNCTIONS
        and item.callspec.params.get("pool_store") == "redis"
        and item.name not in ON_REDIS_ONCE
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, deselected = [], []
    for item in items:
        if isinstance(item, pytest.Function) and item.path.name in SIMULATIONS:
            if _another_redis_world(item):
                deselected.append(item)
                continue
            if _untraced(item):
                item.add_marker(pytest.mark.no_cover)
        kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
