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
