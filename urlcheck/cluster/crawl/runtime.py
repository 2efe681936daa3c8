"""One crawl's share of a distributed job: ``ClusterRuntime.for_crawler(crawler)`` (None when the
crawl is not a process of one), made on first use from the role the check spider declared on the
crawl's runtime (:class:`urlcheck.crawl.runtime.ClusterRole`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

from urlcheck.check.urls import redacted
from urlcheck.cluster.config import ClusterConfig
from urlcheck.cluster.pools import record_user
from urlcheck.cluster.process import COORDINATOR, WORKER, JobProcess
from urlcheck.crawl import internals
from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from urlcheck.cluster.frontier import Claim, Then
    from urlcheck.crawl.requests import RowRequests

logger = logging.getLogger(__name__)


class Dispatcher(Protocol):
    """What a result's completion asks of the scheduler (:mod:`urlcheck.cluster.crawl.pipeline`)."""

    def then(self) -> Then | None:
        """What to claim in the completion's round trip."""

    def accept(self, claim: Claim, asked: float) -> None:
        """Take the leases it claimed."""


class ClusterRuntime(JobProcess):
    def __init__(self, crawler: Crawler, config: ClusterConfig, job: str, role: str) -> None:
        rt = runtime(crawler)
        super().__init__(config, job, role, rt.backoff)
        self.crawler = crawler
        assert rt.requests is not None  # made by the check spider, which declared the role
        self.requests: RowRequests = rt.requests  # tasks, requests and lines, as in one process
        self.scheduler: Dispatcher | None = None  # set when the scheduler opens

    @classmethod
    def for_crawler(cls, crawler: Crawler) -> ClusterRuntime | None:
        """The crawl's cluster runtime, made on first use."""
        found = _RUNTIMES.get(crawler)
        if found is not None:
            return found
        rt = runtime(crawler)
        role = rt.cluster_role
        # None before the spider (scrapy.utils.test.get_crawler builds components first).
        config = ClusterConfig.from_settings(crawler.settings) if role is not None else None
        if role is None or config is None:
            return None
        found = _RUNTIMES[crawler] = cls(
            crawler, config, role.job, COORDINATOR if role.coordinator else WORKER
        )
        logger.info(
            "Distributed mode: %s %s of job %r on %s",
            found.role,
            found.owner,
            role.job,
            redacted(config.redis_url),
        )
        proxies = rt.config.proxies
        if proxies is not None and proxies.in_job_redis:  # the job's pool: say it uses it
            record_user(found.job, proxies.pool_for(role.job), own=proxies.pool_name is None)
        return found

    def delay_for(self, host: str) -> float:
        """The per-host delay this process would keep (DOWNLOAD_DELAY, raised by AutoThrottle
        and by the host's robots.txt Crawl-delay); sent with each completion. Redis raises it to
        the host's learned pace."""
        engine = self.crawler.engine
        slot = internals.slot_times(engine.downloader, host) if engine is not None else None
        return max(super().delay_for(host), slot.delay if slot is not None else 0.0)


_RUNTIMES: WeakKeyDictionary[Crawler, ClusterRuntime] = WeakKeyDictionary()
