"""Distributed mode's settings, parsed once (docs/distributed.md, docs/settings.md).

``REDIS_URL`` and ``REDIS_PARAMS`` keep scrapy-redis's names; setting ``REDIS_URL`` is what
turns distributed mode on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from urlcheck.cluster.errors import ClusterError
from urlcheck.cluster.keys import check_job_name
from urlcheck.config.reader import ConfigError, SettingsReader
from urlcheck.redis.client import OptionError, check_options

if TYPE_CHECKING:
    from urlcheck.config.reader import Settings


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    redis_url: str
    redis_params: dict[str, Any] = field(default_factory=dict)
    lease_ttl: float = 30.0  # DOWNLOAD_TIMEOUT + URLCHECK_CLUSTER_LEASE_EXTRA
    renew_interval: float = 5.0
    poll_interval: float = 0.5
    collect_interval: float = 0.5
    finished_ttl: float = 7 * 24 * 3600.0
    delay: float = 0.3  # DOWNLOAD_DELAY: the per-host floor in Redis too

    @classmethod
    def from_settings(cls, settings: Settings) -> ClusterConfig | None:
        """None when ``REDIS_URL`` is not set: one process, exactly as without this module."""
        read = SettingsReader(settings)
        url = read.text("REDIS_URL", "").strip()
        if not url:
            return None
        try:
            check_options(url)
        except OptionError as exc:
            raise ConfigError(f"setting REDIS_URL: {exc}") from None
        params = redis_params(settings)
        timeout = read.number("DOWNLOAD_TIMEOUT", 180.0)
        extra = read.number("URLCHECK_CLUSTER_LEASE_EXTRA", 10.0, minimum=5.0)
        renew = read.number("URLCHECK_CLUSTER_RENEW_INTERVAL", 5.0, minimum=0.1)
        if renew * 3 > timeout + extra:
            raise ConfigError(
                "setting URLCHECK_CLUSTER_RENEW_INTERVAL: must be at most a third of the lease "
                f"TTL (DOWNLOAD_TIMEOUT + URLCHECK_CLUSTER_LEASE_EXTRA = {timeout + extra} s), "
                f"got {renew}"
            )
        return cls(
            redis_url=url,
            redis_params=params,
            lease_ttl=timeout + extra,
            renew_interval=renew,
            poll_interval=read.number("URLCHECK_CLUSTER_POLL_INTERVAL", 0.5, minimum=0.01),
            collect_interval=read.number("URLCHECK_CLUSTER_COLLECT_INTERVAL", 0.5, minimum=0.01),
            finished_ttl=read.number("URLCHECK_CLUSTER_FINISHED_TTL", 7 * 24 * 3600.0),
            delay=read.number("DOWNLOAD_DELAY", 0.0),
        )

    @property
    def send_margin(self) -> float:
        """A request is sent only while its lease has at least this long left: two missed
        renewals (Redis slow or gone) stop dispatch well before another process could reap."""
        return 2 * self.renew_interval


def redis_params(settings: Settings) -> dict[str, Any]:
    """``REDIS_PARAMS``: options for every client of the job's Redis (the job's own and, when it
    lives there, the proxy pool's), with timeouts the event loop can wait out."""
    try:
        params = dict(settings.getdict("REDIS_PARAMS"))
    except (TypeError, ValueError):
        # its type only: a malformed dict may well hold the password
        kind = type(settings.get("REDIS_PARAMS")).__name__
        raise ConfigError(f"setting REDIS_PARAMS: expected a dict, got a {kind}") from None
    try:
        check_options("", params)
    except OptionError as exc:
        raise ConfigError(f"setting REDIS_PARAMS: {exc}") from None
    return params


def check_cluster(settings: Settings, spider_args: Mapping[str, str]) -> ClusterConfig | None:
    """The distributed-mode part of ``scrapy crawl check``'s preflight; raises ConfigError."""
    config = ClusterConfig.from_settings(settings)
    job = spider_args.get("job")
    if config is None:
        if job and not spider_args.get("csv"):
            raise ConfigError("a worker (-a job=NAME without -a csv) needs -s REDIS_URL=...")
        return None
    if not job:
        raise ConfigError("REDIS_URL is set (distributed mode): name the job with -a job=NAME")
    try:
        check_job_name(job)
    except ClusterError as exc:
        raise ConfigError(str(exc)) from None
    return config
