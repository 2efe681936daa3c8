"""Distributed mode with proxies: the job's processes share one pool in the job's Redis.

Unit tests of the default (URLCHECK_PROXY_STORE and the pool's name), then a real coordinator
and worker (`scrapy crawl check -s REDIS_URL=...`) crawling the demo site through real loopback
forward proxies, with a private redis-server."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import redis
from scrapy.settings import Settings

from tests.cluster.crawls import assert_each_row_once
from tests.cluster.crawls import crawl as cluster_crawl
from tests.redisserver import RedisServer
from tests.sitefixture import ProxyServer, SiteServer, running_proxies
from urlcheck.config.proxies import ProxySettings

PROXIES = {"URLCHECK_PROXIES": ["http://127.0.0.20:3128"]}
SITE_HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
PROXY_HOSTS = ("127.0.0.20", "127.0.0.21", "127.0.0.22")


def parse(**values: str) -> ProxySettings:
    parsed = ProxySettings.from_settings(Settings({**PROXIES, **values}))
    assert parsed is not None
    return parsed


def test_distributed_mode_keeps_the_pool_in_the_jobs_redis_under_the_jobs_name() -> None:
    parsed = parse(REDIS_URL="redis://127.0.0.1:6390/3")
    assert parsed.store_uri == "redis://127.0.0.1:6390/3"
    assert parsed.pool_for("migration") == "migration"


def test_set_store_and_pool_name_win_over_the_jobs() -> None:
    parsed = parse(
        REDIS_URL="redis://127.0.0.1:6390/3",
        URLCHECK_PROXY_STORE="redis://127.0.0.1:6391/0",
        URLCHECK_PROXY_POOL_NAME="eu",
    )
    assert (parsed.store_uri, parsed.pool_for("migration")) == ("redis://127.0.0.1:6391/0", "eu")
    kept_apart = parse(REDIS_URL="redis://127.0.0.1:6390/3", URLCHECK_PROXY_STORE="memory://")
    assert kept_apart.store_uri == "memory://"


def test_one_process_keeps_its_pool_in_memory() -> None:
    parsed = parse()
    assert (parsed.store_uri, parsed.pool_for(None)) == ("memory://", "default")


@pytest.fixture
def net(tmp_path: Path) -> Iterator[tuple[SiteServer, Sequence[ProxyServer], RedisServer]]:
    with (
        SiteServer(SITE_HOSTS, log_path=tmp_path / "site.jsonl", min_gap=0.25) as site,
        running_proxies(
            [ProxyServer(listen=h, log_path=tmp_path / f"proxy-{h}.jsonl") for h in PROXY_HOSTS]
        ) as proxies,
        RedisServer() as server,
    ):
        yield site, proxies, server


def crawl(tmp: Path, name: str, redis_url: str, *args: str) -> subprocess.Popen[bytes]:
    """``scrapy crawl check`` of job ``pooled``, run in ``tmp``: a worker writes its pool snapshot
    (proxies.json) in its working directory."""
    return cluster_crawl(tmp, name, "pooled", redis_url, *args, cwd=tmp)


@pytest.mark.crawl
def test_coordinator_and_worker_share_one_pool_in_the_jobs_redis(
    net: tuple[SiteServer, Sequence[ProxyServer], RedisServer], tmp_path: Path
) -> None:
    site, proxies, server = net
    rows = 12
    csv = tmp_path / "urls.csv"
    csv.write_text(
        "url\n"
        + "".join(
            site.url(SITE_HOSTS[i % len(SITE_HOSTS)], f"/chain/1?pool={i}") + "\n"
            for i in range(rows)
        )
    )
    settings: list[str] = []
    for setting in (
        "URLCHECK_PROXIES=" + ",".join(p.url for p in proxies),
        "URLCHECK_PROXY_STICKY=none",
        "URLCHECK_PROXY_STRATEGY=round-robin",
    ):
        settings += ["-s", setting]
    worker = crawl(tmp_path, "worker", server.url, *settings)
    coord = crawl(
        tmp_path, "coordinator", server.url, "-a", f"csv={csv}", "-s", f"JOBDIR={tmp_path / 'job'}",
        *settings,
    )  # fmt: skip
    assert coord.wait(timeout=60) == 0
    assert worker.wait(timeout=30) == 0
    assert_each_row_once(tmp_path, rows)
    lines = [json.loads(x) for x in (tmp_path / "job" / "results.jsonl").read_text().splitlines()]
    assert {x["proxy"] for x in lines} <= {p.address for p in proxies}
    assert all(x["final_status"] == 200 for x in lines)
    # Both ran the pool: each wrote its snapshot (the worker, having no job directory, in its
    # working directory).
    assert (tmp_path / "proxies.json").exists() and (tmp_path / "job" / "proxies.json").exists()
    # One pool, named after the job, in the job's Redis: it lists each proxy once, and both
    # processes registered their proxies into it (a pool of its own would leave 3, or none).
    client = redis.Redis.from_url(server.url, decode_responses=True)
    try:
        assert client.hlen("{urlcheck:pool:pooled}:proxies") == len(proxies)
        assert client.hget("{urlcheck:pool:pooled}:meta", "reg") == str(2 * len(proxies))
        # ... and both recorded it as the job's own, for `scrapy job clean`
        assert client.hgetall("{urlcheck:pool:pooled}:users") == {"pooled": "own"}
    finally:
        client.close()
