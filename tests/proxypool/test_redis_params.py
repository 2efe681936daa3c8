"""The proxy pool's Redis client takes ``REDIS_PARAMS`` when the pool lives in the job's Redis.

Settings first, then a private redis-server with ``--requirepass``: the pool works with the
password given only in ``REDIS_PARAMS``; a refused password is one line naming the setting and
never showing the password; and a real distributed crawl through loopback proxies, then
``scrapy job clean``, with the password nowhere in the log, the results or the output."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from tests.conftest import project_settings
from tests.processes import crawl_argv, run, scrapy_job
from tests.redisserver import RedisServer
from tests.sitefixture import ProxyServer, SiteServer
from urlcheck.cluster.config import ClusterConfig
from urlcheck.config.crawlconfig import UrlcheckConfig
from urlcheck.config.proxies import ProxySettings
from urlcheck.config.reader import ConfigError
from urlcheck.crawl.preflight import check_proxy_store
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.proxypool import Outcome, ProxyPool, StoreUnavailable
from urlcheck.proxypool.store.redis import RedisStore

PROXIES = {"URLCHECK_PROXIES": ["http://127.0.0.20:3128"]}
SECRET = "pool-Secret-7f3a"  # the test server's password
PARAMS = {"password": SECRET, "ssl_ca_certs": "/etc/ca.pem"}


def parse(**values: Any) -> ProxySettings:
    parsed = ProxySettings.from_settings(Settings({**PROXIES, **values}))
    assert parsed is not None
    return parsed


def test_redis_params_go_to_a_pool_in_the_jobs_redis_only() -> None:
    job = "redis://r.internal:6379/0"
    defaulted = parse(REDIS_URL=job, REDIS_PARAMS=json.dumps(PARAMS))  # as `-s` gives it
    assert (defaulted.in_job_redis, defaulted.store_params) == (True, PARAMS)
    same = parse(REDIS_URL=job, REDIS_PARAMS=PARAMS, URLCHECK_PROXY_STORE=job)
    assert (same.in_job_redis, same.store_params) == (True, PARAMS)
    # Another Redis (even another db of the same server) takes its options from its own URL:
    # the job's password is never sent to a server it was not given for.
    for elsewhere in ("redis://pools.internal:6379/0", "redis://r.internal:6379/4"):
        other = parse(REDIS_URL=job, REDIS_PARAMS=PARAMS, URLCHECK_PROXY_STORE=elsewhere)
        assert (other.in_job_redis, other.store_params) == (False, {})
    # Outside distributed mode REDIS_PARAMS means nothing.
    alone = parse(REDIS_PARAMS=PARAMS, URLCHECK_PROXY_STORE=job)
    assert (alone.in_job_redis, alone.store_params) == (False, {})


def test_a_malformed_redis_params_is_named_without_its_text() -> None:
    with pytest.raises(ConfigError, match="setting REDIS_PARAMS: expected a dict") as info:
        parse(REDIS_URL="redis://r/0", REDIS_PARAMS='{"password": "' + SECRET)
    assert SECRET not in str(info.value)


@pytest.fixture(scope="module")
def locked() -> Iterator[RedisServer]:
    with RedisServer(password=SECRET) as server:
        yield server


def test_a_timeout_the_event_loop_cannot_wait_out_is_refused_wherever_it_is_given() -> None:
    with pytest.raises(ConfigError, match=r"^setting REDIS_PARAMS: socket_timeout=30: expected"):
        parse(REDIS_URL="redis://r/0", REDIS_PARAMS={"password": SECRET, "socket_timeout": 30})
    url = f"redis://:{SECRET}@r/0?socket_connect_timeout=5"  # redis-py reads the query too
    for read in (
        lambda: parse(REDIS_URL=url),
        lambda: ClusterConfig.from_settings(Settings({"REDIS_URL": url})),
    ):
        with pytest.raises(
            ConfigError, match=r"^setting REDIS_URL: socket_connect_timeout"
        ) as info:
            read()
        assert SECRET not in str(info.value)
    with pytest.raises(ConfigError, match=r"^setting URLCHECK_PROXY_STORE: socket_timeout"):
        parse(URLCHECK_PROXY_STORE="redis://r/0?socket_timeout=0")


def test_the_pool_works_with_the_password_only_in_redis_params(locked: RedisServer) -> None:
    # The client's own choices (urlcheck.redis.client) win whatever REDIS_PARAMS says; a
    # timeout up to 2 s is REDIS_PARAMS's, as for the job's own client.
    mine = {"socket_timeout": 2, "protocol": 3, "retry_on_timeout": True, "decode_responses": False}
    parsed = parse(REDIS_URL=locked.url, REDIS_PARAMS={"password": SECRET, **mine})
    assert "@" not in parsed.store_uri
    pool = ProxyPool(parsed.proxies, parsed.pool, store=parsed.store_for("params"))
    try:
        lease = pool.acquire("a.test")
        assert lease.proxy.id == parsed.proxies[0].id
        pool.release(lease, Outcome(status=200, latency=0.1))
        client = pool._store.link.client  # type: ignore[attr-defined]
        kwargs = client.connection_pool.connection_kwargs
        assert kwargs["password"] == SECRET
        assert (kwargs["protocol"], kwargs["socket_timeout"], kwargs["decode_responses"]) == (
            2,
            2,
            True,
        )
        assert kwargs["socket_connect_timeout"] == 1.5  # not given: the default
        assert kwargs["retry"].get_retries() == 0
        assert "ssl_ca_certs" not in kwargs  # not asked for here
    finally:
        pool.close()
    client = locked.client(decode_responses=True)
    assert client.hlen("{urlcheck:pool:params}:proxies") == 1
    client.close()


@pytest.mark.parametrize(
    ("values", "setting"),
    [
        ({"REDIS_PARAMS": {"password": "wrong-" + SECRET}}, "REDIS_PARAMS"),
        ({}, "REDIS_PARAMS"),  # none given
        ({"URL": "redis://:wrong-{secret}@127.0.0.1:{port}/0"}, "REDIS_URL"),
        ({"STORE": "redis://:wrong-{secret}@127.0.0.1:{port}/0"}, "URLCHECK_PROXY_STORE"),
    ],
)
def test_a_refused_password_names_the_setting_and_never_shows_it(
    locked: RedisServer, values: dict[str, Any], setting: str
) -> None:
    settings = dict(PROXIES)
    values = dict(values)
    url = values.pop("URL", locked.url).format(secret=SECRET, port=locked.port)
    if "STORE" in values:
        settings["URLCHECK_PROXY_STORE"] = values.pop("STORE").format(
            secret=SECRET, port=locked.port
        )
    else:
        settings["REDIS_URL"] = url
    config = UrlcheckConfig.from_settings(project_settings(**settings, **values))
    with pytest.raises(ConfigError) as info:
        check_proxy_store(config)
    message = str(info.value)
    assert message.startswith(f"setting {setting}: the proxy pool's Redis at redis://127.0.0.1:")
    assert "refused this client" in message
    assert SECRET not in message


def test_an_unreachable_stores_errors_never_show_the_password_of_its_url(
    locked: RedisServer,
) -> None:
    url = f"redis://:{SECRET}@127.0.0.1:{locked.port}/0"
    parsed = parse(URLCHECK_PROXY_STORE=url)
    store = parsed.store_for(None)
    assert isinstance(store, RedisStore)
    pool = ProxyPool(parsed.proxies, parsed.pool, store=store)
    locked.stop()
    try:
        with pytest.raises(StoreUnavailable, match=r"^proxy store \w+: Redis unavailable: "):
            pool.acquire("a.test")
    finally:
        locked.start()
    outputs = [repr(store), store.link.where, repr(pool.snapshot()), str(pool.acquire("a.test"))]
    pool.close()
    assert [text for text in outputs if SECRET in text] == []


def test_an_unreachable_store_is_left_to_the_crawl() -> None:
    with RedisServer() as server:
        url = server.url
    config = UrlcheckConfig.from_settings(project_settings(**PROXIES, REDIS_URL=url))
    check_proxy_store(config)  # nothing listens there now: not a setting's fault


def scrapy_crawl(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(crawl_argv(*args), cwd=tmp)


@pytest.mark.crawl
def test_a_distributed_crawl_and_its_clean_with_the_password_in_redis_params(
    locked: RedisServer, tmp_path: Path
) -> None:
    hosts = ("127.0.0.2", "127.0.0.3")
    with (
        SiteServer(hosts, log_path=tmp_path / "site.jsonl") as site,
        ProxyServer(listen="127.0.0.20", log_path=tmp_path / "proxy.jsonl") as proxy,
    ):
        csv = tmp_path / "urls.csv"
        csv.write_text("url\n" + "".join(site.url(h, f"/chain/1?p={h}") + "\n" for h in hosts))
        common = ["-a", "job=locked", "-s", f"REDIS_URL={locked.url}"]
        common += ["-s", f"URLCHECK_PROXIES={proxy.url}", "-s", "LOG_LEVEL=DEBUG"]
        wrong = json.dumps({"password": "wrong-" + SECRET})
        refused = scrapy_crawl(tmp_path, *common, "-a", f"csv={csv}", "-s", f"REDIS_PARAMS={wrong}")
        assert refused.returncode == ExitCode.INPUT_ERROR, refused.stderr[-2000:]
        assert "urlcheck: setting REDIS_PARAMS: the proxy pool's Redis at" in refused.stderr
        assert SECRET not in refused.stderr + refused.stdout
        right = json.dumps({"password": SECRET})
        log = tmp_path / "crawl.log"
        done = scrapy_crawl(
            tmp_path, *common, "-a", f"csv={csv}", "-s", f"REDIS_PARAMS={right}",
            "-s", f"JOBDIR={tmp_path / 'job'}", "-s", f"LOG_FILE={log}",
        )  # fmt: skip
        assert done.returncode == 0, log.read_text()[-3000:]
        address = proxy.address
    results = (tmp_path / "job" / "results.jsonl").read_text()
    lines = [json.loads(x) for x in results.splitlines()]
    assert len(lines) == 2 and all(x["proxy"] == address for x in lines)
    assert all(x["final_status"] == 200 for x in lines)
    client = locked.client(decode_responses=True)
    try:
        assert client.hgetall("{urlcheck:pool:locked}:users") == {"locked": "own"}
        pool_keys = list(client.scan_iter(match="{urlcheck:pool:locked}:*"))
        assert pool_keys
        cleaned = scrapy_job("clean", "locked", "-s", f"REDIS_URL={locked.url}",
                             "-s", f"REDIS_PARAMS={right}")  # fmt: skip
        assert cleaned.returncode == 0, cleaned.stderr
        assert f"removed {len(pool_keys)} keys of its proxy pool 'locked'" in cleaned.stdout
        assert list(client.scan_iter(match="*locked*")) == []
    finally:
        client.close()
    # The password is in no log line, stat, job file, result or output.
    everything = [log.read_text(), results, done.stdout, done.stderr, cleaned.stdout]
    everything += [p.read_text() for p in (tmp_path / "job").iterdir() if p.suffix == ".json"]
    assert not [text for text in everything if SECRET in text]


@pytest.mark.crawl
def test_a_password_in_redis_url_stays_out_of_the_log_and_the_job_files(
    locked: RedisServer, tmp_path: Path
) -> None:
    """The job's Redis is named in the log and in cluster.json without its password, and
    ``scrapy job status`` reaches it with the password in REDIS_PARAMS once the settings name that
    Redis (cluster.json's URL alone is reached without our credentials)."""
    url = f"redis://:{SECRET}@127.0.0.1:{locked.port}/0"
    with SiteServer(("127.0.0.2",), log_path=tmp_path / "site.jsonl") as site:
        csv = tmp_path / "urls.csv"
        csv.write_text(f"url\n{site.url('127.0.0.2', '/chain/1')}\n")
        log = tmp_path / "crawl.log"
        done = scrapy_crawl(
            tmp_path, "-a", "job=inurl", "-a", f"csv={csv}", "-s", f"REDIS_URL={url}",
            "-s", f"JOBDIR={tmp_path / 'job'}", "-s", f"LOG_FILE={log}",
        )  # fmt: skip
    text = log.read_text()
    assert done.returncode == 0, text[-3000:]
    cluster = json.loads((tmp_path / "job" / "cluster.json").read_text())
    assert cluster == {"job": "inurl", "redis_url": locked.url}
    assert f"of job 'inurl' on {locked.url}" in text
    right = json.dumps({"password": SECRET})
    unnamed = scrapy_job("status", str(tmp_path / "job"), "-s", f"REDIS_PARAMS={right}")
    assert unnamed.returncode == 2 and "Authentication required" in unnamed.stderr
    named = ("-s", f"REDIS_URL={locked.url}", "-s", f"REDIS_PARAMS={right}")
    status = scrapy_job("status", str(tmp_path / "job"), *named)
    assert status.returncode == 0, status.stderr
    assert "cluster: job 'inurl' done" in status.stdout
    cleaned = scrapy_job("clean", "inurl", "-s", f"REDIS_URL={url}")
    assert cleaned.returncode == 0, cleaned.stderr
    everything = [text, done.stdout, done.stderr, status.stdout, status.stderr, cleaned.stdout]
    everything += [unnamed.stdout, unnamed.stderr]
    everything += [p.read_text() for p in (tmp_path / "job").iterdir() if p.suffix == ".json"]
    assert not [text for text in everything if SECRET in text]


def test_an_acl_without_the_pools_commands_names_the_permissions() -> None:
    """A user the server lets in but not run scripts: the store's first call is refused, and
    the refusal (its cause kept by the boundary) names the setting, never the password."""
    acl = ("--user", "reader", "on", f">{SECRET}", "~*", "+@read", "+@connection")
    with RedisServer(options=acl) as server:
        url = f"redis://reader:{SECRET}@127.0.0.1:{server.port}/0"
        config = UrlcheckConfig.from_settings(project_settings(**PROXIES, URLCHECK_PROXY_STORE=url))
        with pytest.raises(ConfigError, match="check the permissions") as info:
            check_proxy_store(config)
    assert str(info.value).startswith(
        f"setting URLCHECK_PROXY_STORE: the proxy pool's Redis at redis://127.0.0.1:{server.port}/0"
    )
    assert SECRET not in str(info.value)
