"""Distributed mode as a Scrapy add-on (docs/distributed.md), in the manner of scrapy-zyte-api's
``Addon``: listed in ``ADDONS`` (urlcheck/settings.py), it turns the crawl into a process of a
distributed job only when ``REDIS_URL`` is set. It then swaps the scheduler for the one that
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


def distributed(settings: BaseSettings) -> bool:
    """Whether the crawl is a process of a distributed job: ``REDIS_URL`` (scrapy-redis's name)
    is set."""
    return bool(str(settings.get("REDIS_URL") or "").strip())


class DistributedMode:
    def update_settings(self, settings: BaseSettings) -> None:
        if not distributed(settings):
            return
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
