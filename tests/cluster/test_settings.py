"""Distributed mode's settings and how a crawl switches to it (only with REDIS_URL)."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from urlcheck.check.urls import redacted
from urlcheck.cluster.config import ClusterConfig, check_cluster
from urlcheck.config.crawlconfig import ConfigError


def test_off_without_redis_url() -> None:
    assert ClusterConfig.from_settings(Settings()) is None
    assert check_cluster(Settings(), {"csv": "urls.csv"}) is None


def test_lease_ttl_follows_the_download_timeout() -> None:
    config = ClusterConfig.from_settings(
        Settings({"REDIS_URL": "redis://r:6379/0", "DOWNLOAD_TIMEOUT": 20, "DOWNLOAD_DELAY": 0.3})
    )
    assert config is not None
    assert (config.lease_ttl, config.renew_interval, config.delay) == (30.0, 5.0, 0.3)
    assert config.send_margin == 10.0


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"URLCHECK_CLUSTER_LEASE_EXTRA": 1}, "URLCHECK_CLUSTER_LEASE_EXTRA"),
        ({"URLCHECK_CLUSTER_RENEW_INTERVAL": 70}, "at most a third of the lease TTL"),
        ({"REDIS_PARAMS": "not a dict"}, "REDIS_PARAMS"),
        ({"URLCHECK_CLUSTER_POLL_INTERVAL": "soon"}, "URLCHECK_CLUSTER_POLL_INTERVAL"),
    ],
)
def test_bad_settings_are_named(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ClusterConfig.from_settings(Settings({"REDIS_URL": "redis://r/0", **settings}))


def test_preflight_rules_for_job_names_and_workers() -> None:
    with_redis = Settings({"REDIS_URL": "redis://r/0"})
    with pytest.raises(ConfigError, match="-a job=NAME"):
        check_cluster(with_redis, {"csv": "urls.csv"})
    with pytest.raises(ConfigError, match="job name"):
        check_cluster(with_redis, {"csv": "urls.csv", "job": "a b"})
    with pytest.raises(ConfigError, match="needs -s REDIS_URL"):
        check_cluster(Settings(), {"job": "x"})
    assert check_cluster(with_redis, {"job": "x"}) is not None


def test_passwords_stay_out_of_logs_and_job_files() -> None:
    assert redacted("redis://:s3cret@r:6379/0") == "redis://r:6379/0"
    assert redacted("rediss://user:s3cret@r/1") == "rediss://r/1"  # an ACL user too
    assert redacted("redis://r:6379/0") == "redis://r:6379/0"
    assert redacted("redis://:s3/cr?et@r/0") == "redis://r/0"  # left unescaped
    assert redacted("rediss://r/0?password=s3cret&ssl_ca_certs=/ca.pem") == (
        "rediss://r/0?ssl_ca_certs=/ca.pem"  # redis-py reads a password there too
    )
