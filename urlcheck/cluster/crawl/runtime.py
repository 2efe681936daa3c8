"""One process's share of a distributed job: ``runtime(crawler).cluster`` (None when
``REDIS_URL`` is not set), made by the check spider, which knows the job and the role."""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from typing import TYPE_CHECKING

from urlcheck.check.urls import redacted
from urlcheck.cluster.circuit import RedisCircuitStore
from urlcheck.cluster.connection import connect
from urlcheck.cluster.errors import ClusterError
from urlcheck.cluster.frontier import Frontier, JobHost, PaceEvent, PaceRule
from urlcheck.cluster.job import ClusterJob
from urlcheck.cluster.leases import LeaseBook
from urlcheck.cluster.workers import WorkerInfo
from urlcheck.config.reader import ConfigError
from urlcheck.crawl import internals
from urlcheck.crawl.runtime import runtime
from urlcheck.redis.boundary import Breaker

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    from urlcheck.cluster.config import ClusterConfig
    from urlcheck.cluster.crawl.coordinator import Coordinator
    from urlcheck.cluster.crawl.scheduler import ClusterScheduler

logger = logging.getLogger(__name__)

COORDINATOR = "coordinator"
WORKER = "worker"


class ClusterRuntime:
    def __init__(self, crawler: Crawler, config: ClusterConfig, job: str, role: str) -> None:
        self.crawler = crawler
        self.config = config
        self.role = role
        self.client = connect(config.redis_url, **config.redis_params)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(2)}"
        # One breaker for every call of this process: a hung Redis costs one timeout, not one
        # per call, on the event loop.
        self.breaker = Breaker()
        self.frontier = Frontier(self.client, job, owner=self.owner, breaker=self.breaker)
        self.job = ClusterJob(self.client, job, breaker=self.breaker)
        self.book = LeaseBook(config.lease_ttl, margin=config.send_margin)
        # The host circuit and the learned pace are the job's, kept in Redis.
        backoff = runtime(crawler).backoff
        self.circuit = RedisCircuitStore(self.frontier)
        backoff.circuit.store = self.circuit
        if backoff.config.pace_enabled:
            self.frontier.pace = PaceRule(
                backoff.config.delay_floor, backoff.config.delay_max, backoff.config.ease_after
            )
            backoff.pace.listener = self._heard
        self._pace: dict[str, PaceEvent] = {}  # host -> what its last answer taught
        self.started = time.time()
        self.rows_done = 0  # results this process committed
        self.finished = False  # the job is done or cancelled: ask for no more work
        self.control = ""
        self.coordinator: Coordinator | None = None  # set by the ClusterCoordinator extension
        self.scheduler: ClusterScheduler | None = None  # set when the scheduler opens

    @classmethod
    def for_crawler(cls, crawler: Crawler, spider: Spider | None = None) -> ClusterRuntime | None:
        """The crawl's cluster runtime, made on first use; the spider's ``from_crawler`` passes
        itself (the crawler gets its spider only afterwards)."""
        rt = runtime(crawler)
        config = rt.config.cluster
        if rt.cluster is not None or config is None:
            return rt.cluster
        spider = spider or crawler.spider
        if spider is None:  # components built before the spider (scrapy.utils.test.get_crawler)
            return None
        job = getattr(spider, "job", None)
        if not job:
            raise ConfigError("REDIS_URL is set (distributed mode): name the job with -a job=NAME")
        role = COORDINATOR if getattr(spider, "csv_path", None) is not None else WORKER
        rt.cluster = cls(crawler, config, str(job), role)
        logger.info(
            "Distributed mode: %s %s of job %r on %s",
            role,
            rt.cluster.owner,
            str(job),
            redacted(config.redis_url),
        )
        return rt.cluster

    @property
    def is_coordinator(self) -> bool:
        return self.role == COORDINATOR

    def info(self, state: str = "running") -> WorkerInfo:
        host, pid, _ = self.owner.split(":", 2)
        return WorkerInfo(
            self.owner,
            host,
            int(pid),
            self.role,
            self.started,
            self.rows_done,
            len(self.book),
            state,
        )

    def delay_for(self, host: str) -> float:
        """The per-host delay this process would keep (DOWNLOAD_DELAY, raised by AutoThrottle
        and by the host's robots.txt Crawl-delay); sent with each completion. Redis raises it to
        the host's learned pace."""
        engine = self.crawler.engine
        slot = internals.slot_times(engine.downloader, host) if engine is not None else None
        asked = runtime(self.crawler).backoff.pace.asked(host)
        return max(self.config.delay, slot.delay if slot is not None else 0.0, asked)

    def job_hosts(self) -> dict[str, JobHost] | None:
        """What the whole job met of its hosts, for the coordinator's host report; None when
        Redis does not answer (the report then shows this process's own)."""
        try:
            return self.frontier.hosts()
        except ClusterError as exc:
            logger.warning("Redis: the host report shows this process's hosts only: %s", exc)
            return None

    def pace_event(self, host: str) -> PaceEvent | None:
        """What the answer to this process's request to ``host`` taught the pace, once."""
        return self._pace.pop(host, None)

    def _heard(self, host: str, kind: str, retry_after: float | None) -> None:
        self._pace[host] = PaceEvent(kind, retry_after)
