"""What only the Redis store has: scripts as package data, counted round trips, an outage and
a restart that empties it. The behaviour both stores share is in test_pool and test_scenarios."""

from __future__ import annotations

import contextlib
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from tests.redisserver import RedisServer
from urlcheck.proxypool import (
    LeaseCapReached,
    ManualClock,
    PoolConfig,
    ProxyPool,
    StoreUnavailable,
)
from urlcheck.proxypool.rules.health import State
from urlcheck.proxypool.store import store_from_uri
from urlcheck.proxypool.store.redis import RedisStore

from .sim import AUTH, CONTROL_URLS, OK, TIMEOUT, proxy_urls

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def server(redis_server: RedisServer) -> Iterator[RedisServer]:
    redis_server.flush()
    yield redis_server
    redis_server.stop()  # a test may have stopped it: leave one running for the next
    redis_server.start()


def pool_on(url: str, count: int = 5) -> tuple[ProxyPool, RedisStore]:
    store = RedisStore(url, "t", server_time=False)
    pool = ProxyPool(proxy_urls(count), PoolConfig(), store=store, clock=ManualClock(), seed=1)
    return pool, store


def two_processes(url: str, proxies: int, clock: ManualClock) -> tuple[ProxyPool, ProxyPool]:
    """Two pools on one store, as two processes have them (one clock: no test waits)."""
    first, second = (
        ProxyPool(
            proxy_urls(proxies),
            PoolConfig(),
            store=RedisStore(url, "t", server_time=False),
            clock=clock,
            seed=seed,
        )
        for seed in (1, 2)
    )
    return first, second


def test_scripts_ship_as_package_data_and_scan_no_keyspace() -> None:
    lua = resources.files("urlcheck.proxypool.store").joinpath("lua")
    names = sorted(p.name for p in lua.iterdir() if p.name.endswith(".lua"))
    assert names == [
        "_prelude.lua",
        "acquire.lua",
        "claim.lua",
        "commit.lua",
        "reclaim.lua",
        "release.lua",
    ]
    for name in names:
        text = lua.joinpath(name).read_text()
        assert "'KEYS'" not in text and "SCAN" not in text, name


def test_round_trips_per_call(server: RedisServer) -> None:
    pool, store = pool_on(server.url, 10)
    pool.release(pool.acquire("a.test"), OK)  # first calls: maintenance, adopting the registry
    before, sent = store.round_trips, store.commands
    lease = pool.acquire("a.test")
    assert (store.round_trips - before, store.commands - sent) == (1, 1)
    pool.release(lease, OK)  # sent behind CLIENT REPLY SKIP, in one write: no answer to read
    assert (store.round_trips - before, store.commands - sent) == (1, 3)
    lease = pool.acquire("a.test")
    assert (store.round_trips - before, store.commands - sent) == (2, 4)
    pool.release(lease, AUTH)  # 407: the proxy dies, a state change to commit
    assert (store.round_trips - before, store.commands - sent) == (3, 7)
    assert {p["state"] for p in pool.snapshot()["proxies"]} == {"healthy", "dead"}
    pool.close()


def test_a_server_without_client_reply_answers_releases_read_with_the_next_call() -> None:
    """A Redis look-alike or proxy that refuses CLIENT REPLY: each release is answered, and the
    answer shares the next call's round trip; the replies stay in step with the calls."""
    with RedisServer(options=("--rename-command", "CLIENT", "")) as server:
        pool, store = pool_on(server.url, 3)
        pool.release(pool.acquire("a.test"), OK)
        before, sent = store.round_trips, store.commands
        for _ in range(50):
            lease = pool.acquire("a.test")
            pool.release(lease, OK)
        assert (store.round_trips - before, store.commands - sent) == (50, 100)
        assert store.link._owed == 1  # the last release's answer, read with the next call's
        client = server.client()
        assert client.zcard(store._k["leases"]) == 0
        assert set(client.hvals(store._k["active"])) == {b"0"}
        pool.release(pool.acquire("a.test"), OK)
        assert store.link._owed == 1
        client.close()
        pool.close()


def test_a_release_takes_effect_before_the_next_call_returns(server: RedisServer) -> None:
    """Its answer is not waited for, but the server runs it at once: another process that
    asks after this one's next call finds the lease ended."""
    config = PoolConfig(max_concurrent=1, hard_lease_cap=True)
    first, second = (
        ProxyPool(
            proxy_urls(1),
            config,
            store=RedisStore(server.url, "t", server_time=False),
            clock=ManualClock(),
            seed=seed,
        )
        for seed in (1, 2)
    )
    lease = first.acquire("a.test")
    with pytest.raises(LeaseCapReached):
        second.acquire("a.test")
    first.release(lease, OK)
    first.snapshot()  # this process's next call
    second.release(second.acquire("a.test"), OK)
    # a release whose lease expired and was reclaimed meanwhile is not counted off twice
    lease = first.acquire("a.test")
    first._clock.advance(config.lease_ttl + 2)  # type: ignore[attr-defined]
    first.snapshot()  # maintenance reclaims it
    first.release(lease, OK)
    assert first.snapshot()["totals"]["leases_active"] == 0
    assert [p["active"] for p in first.snapshot()["proxies"]] == [0]
    first.close()
    second.close()


def test_an_unreachable_store_raises_one_error_and_a_restart_refills_it(
    server: RedisServer,
) -> None:
    pool, _ = pool_on(server.url)
    held = pool.acquire("a.test")
    server.stop()
    with pytest.raises(StoreUnavailable) as raised:
        pool.acquire("a.test")
    assert isinstance(raised.value.__cause__, redis.RedisError | OSError)
    with pytest.raises(StoreUnavailable):
        pool.release(held, OK)
    assert not held.released  # nothing happened: it may be released again later
    server.start()  # empty: no persistence
    lease = pool.acquire("a.test")  # the registry counter went back: proxies registered again
    pool.release(lease, OK)
    pool.release(held, OK)  # its lease died with the old server: nothing to end, no error
    other = ProxyPool(
        [], PoolConfig(), store=RedisStore(server.url, "t", server_time=False), clock=ManualClock()
    )
    assert {p.id for p in other.proxies} == {p.id for p in pool.proxies}
    pool.close()
    other.close()


def test_a_proxy_is_probed_by_one_process_at_a_time(server: RedisServer) -> None:
    config = PoolConfig(control_urls=CONTROL_URLS, probe_batch=10)
    clock = ManualClock()
    first, second = (
        ProxyPool(
            proxy_urls(6),
            config,
            store=RedisStore(server.url, "t", server_time=False),
            clock=clock,
            seed=seed,
        )
        for seed in (1, 2)
    )
    clock.advance(config.probe_idle_max + 1)  # every proxy is idle: all are due
    mine = {task.proxy_id for task in first.due_probes()}
    theirs = {task.proxy_id for task in second.due_probes()}
    assert len(mine) == 6
    assert not theirs
    for proxy_id in mine:  # reported: the claims end
        first.report_probe(proxy_id, CONTROL_URLS[0], True, 0.1)
    clock.advance(config.probe_idle_max + 1)
    assert {task.proxy_id for task in second.due_probes()} == mine
    first.close()
    second.close()


def test_a_store_on_a_unix_socket_is_shared_as_on_tcp() -> None:
    """One machine's processes may reach Redis over a Unix socket (``unix://``): the same
    store, registry and caps, without the TCP stack."""
    with tempfile.TemporaryDirectory(prefix="rs", dir="/tmp") as where:
        path = str(Path(where) / "redis.sock")
        with RedisServer(unix_socket=path) as srv:
            assert srv.unix_url is not None
            config = PoolConfig(max_concurrent=1)
            one, two = (
                ProxyPool(
                    proxies,
                    config,
                    store=store_from_uri(srv.unix_url, "u", server_time=False),
                    clock=ManualClock(),
                )
                for proxies in (proxy_urls(1), [])
            )
            assert [p.id for p in two.proxies] == [p.id for p in one.proxies]  # shared registry
            lease = one.acquire("a.test")
            with pytest.raises(LeaseCapReached):
                two.acquire("a.test")
            one.release(lease, OK)
            one.snapshot()
            two.release(two.acquire("a.test"), OK)
            one.close()
            two.close()


def test_a_restart_empties_the_books_leases_too(server: RedisServer) -> None:
    """Releases that failed in the outage, and releases of leases lent before Redis came back
    empty, leave no proxy counted full (with caps of 1, a leak would stop every lease)."""
    pool = ProxyPool(
        proxy_urls(2),
        PoolConfig(max_concurrent=1),
        store=RedisStore(server.url, "t", server_time=False),
        clock=ManualClock(),
        seed=1,
    )
    held = [pool.acquire("a.test"), pool.acquire("a.test")]  # both proxies at their cap
    late = held.pop()
    server.stop()
    with pytest.raises(StoreUnavailable):
        pool.acquire("a.test")
    with pytest.raises(StoreUnavailable):  # refused: the middleware drops it (counted)
        pool.release(held[0], OK)
    server.start()  # empty: no persistence
    with contextlib.suppress(StoreUnavailable):  # the first call may find the old connection
        pool.release(pool.acquire("a.test"), OK)
    lease = pool.acquire("a.test")  # the store lost everything: registered again
    pool.release(late, OK)  # lent before the restart: nothing to count off now
    assert sum(p["active"] for p in pool.snapshot()["proxies"]) == 1
    other = pool.acquire("a.test")
    pool.release(lease, OK)
    pool.release(other, OK)
    assert [p["active"] for p in pool.snapshot()["proxies"]] == [0, 0]
    pool.close()


def test_successes_reach_the_fleet_in_batches_and_a_failure_at_once(server: RedisServer) -> None:
    """Another process hears a failure with this process's next write, the successes before
    it in order; successes alone go in batches: 32 of them, the oldest a second old, the
    maintenance call, `flush` and `close` (docs/proxypool.md, *One fleet, one judgement*)."""
    clock = ManualClock()
    teller, hearer = two_processes(server.url, 20, clock)

    def heard() -> int:
        total: int = hearer.snapshot()["totals"]["outcomes_total"]
        return total

    def succeed(times: int) -> None:
        for _ in range(times):
            teller.release(teller.acquire("a.test"), OK)
            clock.advance(0.001)

    succeed(5)
    assert heard() == 0
    lease = teller.acquire("b.test")
    teller.release(lease, TIMEOUT)
    assert heard() == 6
    cell = hearer.snapshot()["matrix"]["b.test"][lease.proxy.id]
    assert (cell["outcomes"], cell["success_rate"]) == (1, 0.0)
    succeed(31)
    assert heard() == 6
    succeed(1)  # the 32nd
    assert heard() == 38
    succeed(1)
    lease = teller.acquire("a.test")
    clock.advance(1.0)
    teller.release(lease, OK)  # the oldest held back is a second old
    assert heard() == 40
    succeed(1)
    teller.snapshot()  # its maintenance call
    assert heard() == 41
    succeed(2)
    teller.flush()
    assert heard() == 43
    succeed(3)
    teller.close()
    assert heard() == 46
    hearer.close()


def test_a_process_that_only_watches_shows_the_states_others_committed(
    server: RedisServer,
) -> None:
    """The maintenance call (once a second, and each `snapshot`) brings the shared states
    when the store has moved on: a process that leases nothing still shows a quarantine
    another process decided, not the state it last judged itself."""
    clock = ManualClock()
    deciding, watching = two_processes(server.url, 3, clock)
    watching.snapshot()
    target = deciding.proxies[0].id
    store = deciding._store
    gen = store.load(clock()).gen
    until = clock() + 60.0
    assert store.commit(gen, {target: (State.QUARANTINED, until)}, [], clock()).ok
    shown = {p["id"]: p for p in watching.snapshot()["proxies"]}
    assert shown[target]["state"] == "quarantined"
    assert shown[target]["quarantined_until"] == until
    deciding.close()
    watching.close()
