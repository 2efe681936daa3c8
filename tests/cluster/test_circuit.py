"""The host circuit over each of its stores (memory, and the job's Redis on a real, private
redis-server): one contract, then what only the shared store does: a host given up on by one
process is given up on by every process, with the same evidence, timed by Redis's clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from urlcheck.clock import ManualClock
from urlcheck.cluster import ClusterJob, Frontier, Task
from urlcheck.cluster.circuit import RedisCircuitStore
from urlcheck.cluster.evidence import decode_evidence, encode_evidence
from urlcheck.cluster.frontier import Then
from urlcheck.politeness.circuit import (
    CircuitStore,
    HostCircuit,
    MemoryCircuitStore,
    Strike,
    Unavailable,
)

if TYPE_CHECKING:
    import redis

    from tests.redisserver import RedisServer

JOB = "circ"
TTL = 30.0


@pytest.fixture
def client(client: redis.Redis) -> redis.Redis:
    """The shared empty client (conftest), with the job open."""
    ClusterJob(client, JOB).open("coordinator@test")
    return client


def frontier(client: redis.Redis, owner: str = "w1") -> Frontier:
    return Frontier(client, JOB, owner=owner)


@pytest.fixture(params=["memory", "redis"])
def make_store(request: pytest.FixtureRequest) -> Callable[[], CircuitStore]:
    if request.param == "memory":
        return MemoryCircuitStore
    client = request.getfixturevalue("client")
    return lambda: RedisCircuitStore(frontier(client))


def down(host: str = "a.test", rows: int = 2, since: float = 1_700_000_000.0) -> Unavailable:
    return Unavailable(host, rows, Strike(503, None, 120.0, 4), since)


# --- the contract, for every store ------------------------------------------------------------


def test_strikes_count_in_a_row_per_host_and_an_answer_clears_them(make_store) -> None:
    store = make_store()
    assert [store.strike("a.test"), store.strike("a.test"), store.strike("b.test")] == [1, 2, 1]
    store.clear("a.test")
    assert store.strike("a.test") == 1
    store.clear("c.test")  # nothing to clear


def test_the_first_evidence_stands(make_store) -> None:
    store = make_store()
    first, new = store.give_up(down(rows=2))
    assert new and first.host == "a.test" and first.rows == 2
    assert first.last == Strike(503, None, 120.0, 4)
    again, new = store.give_up(down(rows=3))
    assert not new and again == first
    assert store.get("a.test") == first and store.get("b.test") is None
    assert store.all() == [first]


def test_the_circuit_is_the_same_over_every_store(make_store) -> None:
    circuit = HostCircuit(down_after=2, clock=ManualClock(1_700_000_000.0), store=make_store())
    assert circuit.exhausted("a.test", Strike(None, "connect", None, 3)) is None
    circuit.answered("a.test")
    assert circuit.exhausted("a.test", Strike(None, "connect", None, 3)) is None
    given_up = circuit.exhausted("a.test", Strike(None, "connect", None, 3))
    assert given_up is not None and given_up.message() == (
        "host a.test unavailable: 2 rows in a row failed (connect) on all 3 tries; not requested"
    )
    assert circuit.unavailable("a.test") == given_up
    assert circuit.exhausted("a.test", Strike(503)) is None  # once per host
    assert [d.host for d in circuit.hosts()] == ["a.test"]


# --- shared through Redis ---------------------------------------------------------------------


def test_evidence_round_trips() -> None:
    evidence = down(since=1_700_000_000.123)
    assert decode_evidence("a.test", "1700000000123|" + encode_evidence(evidence)) == evidence


def test_one_process_gives_a_host_up_for_every_process(client: redis.Redis) -> None:
    one, two = frontier(client, "w1"), frontier(client, "w2")
    circuit_one = HostCircuit(2, store=RedisCircuitStore(one))
    store_two = RedisCircuitStore(two)
    circuit_two = HostCircuit(2, store=store_two)
    # Strikes from two processes add up: the count is the host's, not the process's.
    assert circuit_one.exhausted("a", Strike(503, None, 0.0, 4)) is None
    before = int(client.time()[0])
    given_up = circuit_two.exhausted("a", Strike(503, None, 0.0, 4))
    assert given_up is not None and given_up.rows == 2
    assert before <= given_up.since <= before + 2  # Redis's clock
    assert client.hgetall(f"uc:{{{JOB}}}:strikes") == {}
    # w1 learns it with its next lease of the host: no round trip of its own.
    assert circuit_one.unavailable("a") is None
    one.push([("a", Task(1, "http://a/", "http://a/", None, {}, "http://a/"))])
    (lease,) = one.claim(1, ttl=TTL, delay=0).leases
    assert lease.down
    circuit_one.store.leased(lease)  # type: ignore[attr-defined]
    assert circuit_one.unavailable("a") == given_up
    assert circuit_one.unavailable("a").message() == given_up.message()
    # The host's strikes stop counting once it is given up on.
    assert circuit_one.exhausted("a", Strike(503)) is None


def test_an_answer_clears_strikes_another_process_counted(client: redis.Redis) -> None:
    one, two = frontier(client, "w1"), frontier(client, "w2")
    circuit_one = HostCircuit(2, store=RedisCircuitStore(one))
    store_two = RedisCircuitStore(two)
    circuit_two = HostCircuit(2, store=store_two)
    assert circuit_one.exhausted("a", Strike(None, "connect", None, 3)) is None
    # w2 leases the host: the lease says its count is open, so w2's answer clears it.
    two.push([("a", Task(1, "http://a/", "http://a/", None, {}, "http://a/"))])
    (lease,) = two.claim(1, ttl=TTL, delay=0).leases
    assert lease.struck and not lease.down
    store_two.leased(lease)
    calls = two.round_trips
    circuit_two.answered("a")
    assert two.round_trips == calls + 1
    circuit_two.answered("a")  # nothing open: no round trip
    assert two.round_trips == calls + 1
    assert circuit_one.exhausted("a", Strike(None, "connect", None, 3)) is None  # 1 in a row


def test_giving_a_host_up_ends_its_back_off_for_every_process(client: redis.Redis) -> None:
    one, two = frontier(client, "w1"), frontier(client, "w2")
    one.push([("a", Task(i, "http://a/", "http://a/", None, {}, "http://a/")) for i in (1, 2)])
    (lease,) = one.claim(1, ttl=TTL, delay=0).leases
    one.complete_retry(lease, lease.task, delay=0, backoff=120, strikes=3)
    assert two.claim(1, ttl=TTL, delay=0).leases == ()  # paused 120 s
    circuit = HostCircuit(1, store=RedisCircuitStore(one))
    assert circuit.exhausted("a", Strike(503, None, None, 4)) is not None
    (lease,) = two.claim(1, ttl=TTL, delay=0).leases
    assert lease.host == "a" and lease.down
    assert client.zscore(f"uc:{{{JOB}}}:paused", "a") is None


def test_a_given_up_hosts_rows_wait_for_no_gap(client: redis.Redis) -> None:
    """Its rows are recorded without requests: each is leased as soon as the last is done,
    not one host delay after it (a minute here)."""
    one = frontier(client)
    one.push([("a", Task(i, "http://a/", "http://a/", None, {}, "http://a/")) for i in (1, 2, 3)])
    (lease,) = one.claim(1, ttl=TTL, delay=60).leases
    assert HostCircuit(1, store=RedisCircuitStore(one)).exhausted("a", Strike(503)) is not None
    for row in (1, 2, 3):
        assert lease.task.row == row
        done = one.complete_result(lease, f'{{"row": {row}}}', delay=60, then=Then(1, TTL))
        assert done.committed and done.claim is not None
        if row < 3:
            (lease,) = done.claim.leases
            assert lease.down
    assert done.claim.leases == () and done.claim.wait is None


def test_redis_down_fails_open(server: RedisServer, client: redis.Redis) -> None:
    store = RedisCircuitStore(frontier(client))
    circuit = HostCircuit(1, store=store)
    server.stop()
    try:
        assert circuit.exhausted("a", Strike(503)) is None  # not counted: not given up on
        circuit.answered("a")
    finally:
        server.start()
    assert circuit.unavailable("a") is None
