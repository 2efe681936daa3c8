"""The Redis store on a real Redis Cluster (three redis-servers on loopback): every key of a
pool is in one slot, so the store talks to the node that serves it, whichever node it was
given, and follows the slot when the cluster moves it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redisserver import RedisClusterServers
from urlcheck.proxypool import (
    LeaseCapReached,
    ManualClock,
    PoolConfig,
    ProxyPool,
    StoreUnavailable,
)
from urlcheck.proxypool.store.redis import RedisStore, key_prefix

from .sim import OK, proxy_urls


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterServers]:
    with RedisClusterServers(tmp_path_factory.mktemp("cluster")) as servers:
        yield servers


def pool_at(url: str, seed: int, config: PoolConfig, name: str) -> tuple[ProxyPool, RedisStore]:
    store = RedisStore(url, name, server_time=False)
    pool = ProxyPool(proxy_urls(2), config, store=store, clock=ManualClock(), seed=seed)
    return pool, store


def test_processes_given_different_nodes_share_one_pool(cluster: RedisClusterServers) -> None:
    config = PoolConfig(max_concurrent=1, hard_lease_cap=True)
    owner = cluster.owner(key_prefix("shared") + "meta")
    others = [node for node in cluster.nodes if node is not owner]
    (one, store_one), (two, store_two) = (
        pool_at(node.url, seed, config, "shared") for seed, node in enumerate(others, 1)
    )
    assert store_one.link.where == store_two.link.where == f"127.0.0.1:{owner.port}"
    leases = [one.acquire("a.test"), two.acquire("a.test")]
    assert {lease.proxy.id for lease in leases} == {p.id for p in one.proxies}
    with pytest.raises(LeaseCapReached):  # caps of 1 across both processes
        one.acquire("a.test")
    for lease, pool in zip(leases, (one, two), strict=True):
        pool.release(lease, OK)
    one.release(one.acquire("a.test"), OK)
    for pool in (one, two):
        pool.close()


def test_the_store_follows_its_slot_to_another_node(cluster: RedisClusterServers) -> None:
    config = PoolConfig(max_concurrent=1, hard_lease_cap=True)
    pool, store = pool_at(cluster.nodes[0].url, 1, config, "moved")
    held = pool.acquire("a.test")
    meta = key_prefix("moved") + "meta"
    target = next(node for node in cluster.nodes if node is not cluster.owner(meta))
    cluster.move_slot(meta, target)  # resharded, keys and all
    with pytest.raises(StoreUnavailable, match="now asking that node"):
        pool.acquire("a.test")  # the old node answers MOVED: the store turns to the new one
    assert store.link.where == f"127.0.0.1:{target.port}"
    other = pool.acquire("a.test")  # the held lease moved with the slot: the other proxy
    assert other.proxy != held.proxy
    with pytest.raises(LeaseCapReached):
        pool.acquire("a.test")
    pool.release(held, OK)
    pool.release(other, OK)
    pool.release(pool.acquire("a.test"), OK)
    pool.close()


def test_when_the_slots_node_dies_the_store_asks_the_node_it_was_given(tmp_path: Path) -> None:
    """A failover: the slot's node is gone and another serves the slot. The store, refused by
    the node it had turned to, asks the node of its URL again, whose MOVED names the new one."""
    # its own cluster: a node is stopped; the others go on serving their slots
    with RedisClusterServers(tmp_path, options=("--cluster-require-full-coverage", "no")) as cl:
        meta = key_prefix("failover") + "meta"
        owner = cl.owner(meta)
        seed, spare = (node for node in cl.nodes if node is not owner)
        pool, store = pool_at(seed.url, 1, PoolConfig(), "failover")
        pool.release(pool.acquire("a.test"), OK)
        assert store.link.where == f"127.0.0.1:{owner.port}"
        cl.move_slot(meta, spare)  # its replica took over, say, with the pool's keys
        owner.stop()
        said = []
        for _ in range(5):
            try:
                pool.release(pool.acquire("a.test"), OK)
                break
            except StoreUnavailable as exc:
                said.append(str(exc))
        assert store.link.where == f"127.0.0.1:{spare.port}"
        assert any(f"asking 127.0.0.1:{seed.port} again" in m for m in said), said
        assert any("now asking that node" in m for m in said), said
        pool.release(pool.acquire("a.test"), OK)
        pool.close()
