"""``scrapy job clean NAME`` and the job's proxy pool, on a private redis-server: the pool named
after the job goes with it (probe keys included), a pool another job shares by name stays, and
keys of other pools and jobs are never touched."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from urlcheck.cluster import ClusterJob
from urlcheck.cluster.admin import clean
from urlcheck.cluster.pools import record_user
from urlcheck.proxypool import PoolConfig, ProxyPool
from urlcheck.proxypool.store.redis import RedisStore

if TYPE_CHECKING:
    import redis

    from tests.redisserver import RedisServer

PROXIES = ["http://127.0.0.20:3128", "http://127.0.0.21:3128"]


def run_job(url: str, client: redis.Redis, job: str, pool: str | None = None) -> None:
    """What a process of `job` leaves in Redis: the job's state and, as the proxy middleware
    does, its pool (named after the job unless `pool` names it) with a probe claimed."""
    cluster = ClusterJob(client, job)
    cluster.open("box:1:aa", place=f"box:/jobs/{job}")
    store = RedisStore(url, pool or job)
    proxy_pool = ProxyPool(PROXIES, PoolConfig(), store=store)
    try:
        proxy_pool.release(proxy_pool.acquire("a.test"), None)
        ids = [p.id for p in proxy_pool.proxies]
        store.claim_probes(ids, 0.0, 60.0)  # a probe under way: its own key
    finally:
        proxy_pool.close()
    record_user(cluster, pool or job, own=pool is None)


def keys(client: redis.Redis, pattern: str) -> set[str]:
    return {k.decode() for k in client.scan_iter(match=pattern)}


def test_clean_removes_the_jobs_own_pool_and_nothing_else(
    server: RedisServer, client: redis.Redis
) -> None:
    run_job(server.url, client, "mig")
    run_job(server.url, client, "mig2")  # a name that starts alike
    run_job(server.url, client, "other", pool="eu")
    pool_keys = keys(client, "{urlcheck:pool:mig}:*")
    assert {"{urlcheck:pool:mig}:users", "{urlcheck:pool:mig}:proxies"} <= pool_keys
    assert sum(k.startswith("{urlcheck:pool:mig}:probe:") for k in pool_keys) == len(PROXIES)
    untouched = keys(client, "*") - pool_keys - keys(client, "uc:{mig}:*")
    out = io.StringIO()
    removed = clean("mig", server.url, out)
    job_line, pool_line = out.getvalue().splitlines()
    assert job_line.startswith("cluster: removed ") and job_line.endswith(" keys of job 'mig'")
    assert pool_line == f"cluster: removed {len(pool_keys)} keys of its proxy pool 'mig'"
    assert removed > len(pool_keys)
    assert keys(client, "*") == untouched


def test_a_pool_shared_by_name_is_kept(server: RedisServer, client: redis.Redis) -> None:
    # Job `eu` runs on its own pool `eu`; job `b` joins that pool by name.
    run_job(server.url, client, "eu")
    run_job(server.url, client, "b", pool="eu")
    pool_keys = keys(client, "{urlcheck:pool:eu}:*")
    out = io.StringIO()
    clean("eu", server.url, out)
    assert out.getvalue().splitlines()[1] == (
        f"cluster: kept the {len(pool_keys)} keys of proxy pool 'eu': also used by name by job "
        "'b' (URLCHECK_PROXY_POOL_NAME)"
    )
    assert keys(client, "uc:{eu}:*") == set()
    assert keys(client, "{urlcheck:pool:eu}:*") == pool_keys
    # Cleaning the job that named it leaves it too: `b` has no pool of its own.
    out = io.StringIO()
    clean("b", server.url, out)
    assert out.getvalue().splitlines()[1] == "cluster: removed 0 keys of its proxy pool 'b'"
    assert keys(client, "{urlcheck:pool:eu}:*") == pool_keys


def test_a_pool_no_job_recorded_is_kept(server: RedisServer, client: redis.Redis) -> None:
    # A pool named like the job, made outside distributed mode (URLCHECK_PROXY_STORE and
    # URLCHECK_PROXY_POOL_NAME in a single process): nothing says it is the job's.
    pool = ProxyPool(PROXIES, PoolConfig(), store=RedisStore(server.url, "solo"))
    pool.close()
    before = keys(client, "{urlcheck:pool:solo}:*")
    out = io.StringIO()
    assert clean("solo", server.url, out) == 0
    assert "kept the" in out.getvalue() and "not recorded as this job's own" in out.getvalue()
    assert keys(client, "{urlcheck:pool:solo}:*") == before
