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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and item.path.name in SIMULATIONS and _untraced(item):
            item.add_marker(pytest.mark.no_cover)
