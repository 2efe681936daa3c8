"""Distributed mode as a Scrapy add-on (docs/distributed.md), in the manner of scrapy-zyte-api's
``Addon``: listed in ``ADDONS`` (urlcheck/settings.py), it turns the crawl into a process of a
distributed job only when the job's Redis is named (``REDIS_URL``, or scrapy-redis's
``REDIS_HOST``). It then swaps the scheduler for the one that
leases work from Redis, and adds the pipeline that commits results there and the extension of
the job's coordinator. Without ``REDIS_URL`` it changes nothing, and this module is all of
distributed mode that a crawl loads: no module of :mod:`urlcheck.cluster`, no redis-py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from urlcheck.crawl.scheduling import MemoryScheduler

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

CLUSTER_SCHEDULER = "urlcheck.cluster.crawl.scheduler.ClusterScheduler"


def redis_url(settings: BaseSettings) -> str:
    """The job's Redis as scrapy-redis names it: ``REDIS_URL``, or else its ``REDIS_HOST``,
    ``REDIS_PORT`` and ``REDIS_DB`` (``scrapy_redis.connection``); "" when neither is set."""
    url = str(settings.get("REDIS_URL") or "").strip()
    if url or not str(settings.get("REDIS_HOST") or "").strip():
        return url
    from scrapy_redis.connection import SETTINGS_PARAMS_MAP

    given = {param: settings.get(name) for name, param in SETTINGS_PARAMS_MAP.items()}
    host = str(given["host"]).strip()
    if ":" in host and not host.startswith("["):  # an IPv6 address
        host = f"[{host}]"
    return f"redis://{host}:{given['port'] or 6379}/{given['db'] or 0}"


def distributed(settings: BaseSettings) -> bool:
    """Whether the crawl is a process of a distributed job: the job's Redis is named."""
    return bool(redis_url(settings))


class DistributedMode:
    def update_settings(self, settings: BaseSettings) -> None:
        url = redis_url(settings)
        if not url:
            return
        if not settings.get("REDIS_URL"):  # named by host and port: every reader takes the URL
            settings.set("REDIS_URL", url, settings.getpriority("REDIS_HOST") or 0)
        from urlcheck.cluster.crawl.coordinator import ClusterCoordinator
        from urlcheck.cluster.crawl.pipeline import ClusterResultsPipeline

        # urlcheck's one-process scheduler gives way; a SCHEDULER of your own is kept.
        if load_object(settings.get("SCHEDULER")) is MemoryScheduler:
            settings.set("SCHEDULER", CLUSTER_SCHEDULER, settings.getpriority("SCHEDULER") or 0)
        # Before ResultsPipeline (300): a result is committed to Redis, not written here.
        settings.setdefault_in_component_priority_dict(
            "ITEM_PIPELINES", ClusterResultsPipeline, 290
        )
        # Stops (NotConfigured) in a worker: only a process given -a csv feeds the job.
        settings.setdefault_in_component_priority_dict("EXTENSIONS", ClusterCoordinator, 120)
