"""URLCHECK_PROXY_STORE and URLCHECK_PROXY_POOL_NAME, parsed once with the proxy settings."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from urlcheck.config.crawlconfig import ConfigError
from urlcheck.config.proxies import ProxySettings

PROXIES = {"URLCHECK_PROXIES": ["http://127.0.0.20:3128"]}


def parse(**values: str) -> ProxySettings:
    parsed = ProxySettings.from_settings(Settings({**PROXIES, **values}))
    assert parsed is not None
    return parsed


def test_defaults_keep_the_pool_in_the_process() -> None:
    parsed = parse()
    assert parsed.store_uri == "memory://"
    assert (parsed.pool_name, parsed.pool_for(None)) == (None, "default")


def test_a_redis_store_and_a_pool_name() -> None:
    parsed = parse(URLCHECK_PROXY_STORE="redis://127.0.0.1:6379/2", URLCHECK_PROXY_POOL_NAME="eu")
    assert parsed.store_uri == "redis://127.0.0.1:6379/2"
    assert parsed.pool_name == "eu"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("URLCHECK_PROXY_STORE", "sqlite:///pool.db", "URLCHECK_PROXY_STORE: expected memory://"),
        ("URLCHECK_PROXY_POOL_NAME", "a{b}", "URLCHECK_PROXY_POOL_NAME: 'a{b}' must be"),
        ("URLCHECK_PROXY_POOL_NAME", " ", "URLCHECK_PROXY_POOL_NAME: '' must be"),
    ],
)
def test_bad_values_name_the_setting(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("}", r"\}")):
        parse(**{name: value})


def test_a_lease_outlives_the_download_timeout_by_a_little_unless_set() -> None:
    assert parse(DOWNLOAD_TIMEOUT="20").pool.lease_ttl == 35.0
    assert parse(DOWNLOAD_TIMEOUT="60").pool.lease_ttl == 75.0
    assert parse(DOWNLOAD_TIMEOUT="20", URLCHECK_PROXY_LEASE_TTL="600").pool.lease_ttl == 600.0


def test_sessions_end_by_default_and_may_move() -> None:
    assert parse().pool.session_loss == "end"
    assert parse(URLCHECK_PROXY_SESSION_LOSS=" Move ").pool.session_loss == "move"
    with pytest.raises(ConfigError, match="URLCHECK_PROXY_SESSION_LOSS: must be move or end"):
        parse(URLCHECK_PROXY_SESSION_LOSS="teleport")
