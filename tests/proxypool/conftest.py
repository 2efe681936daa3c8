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


# The seeded simulations run the pool tens of thousands of times a test. Their Redis runs are
# not traced for coverage: traced, they took 40% more CPU (a large part of the suite's under
# --cov) for no line more (the memory runs trace the same policy code, the contract tests the
# Redis store's), but for the one run in TRACED: it alone reaches judge.py's guard of the
# minimum in service when a site benches a pair.
SIMULATIONS = frozenset({"test_scenarios.py", "test_guide.py"})
TRACED = frozenset({"test_minimum_in_service_holds_in_a_small_pool"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if (
            isinstance(item, pytest.Function)
            and item.path.name in SIMULATIONS
            and getattr(item, "callspec", None) is not None
            and item.callspec.params.get("pool_store") == "redis"
            and item.originalname not in TRACED
        ):
            item.add_marker(pytest.mark.no_cover)
