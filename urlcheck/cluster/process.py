"""One process's share of a distributed job: its Redis client and the job's frontier, the leases
it holds, its role, and what it tells the others (docs/distributed.md).

The crawl's side (:class:`urlcheck.cluster.crawl.runtime.ClusterRuntime`) binds it to a crawler.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from typing import TYPE_CHECKING

from urlcheck.cluster.circuit import RedisCircuitStore
from urlcheck.cluster.connection import connect
from urlcheck.cluster.errors import ClusterError
from urlcheck.cluster.frontier import Frontier, JobHost, PaceEvent, PaceRule
from urlcheck.cluster.job import ClusterJob
from urlcheck.cluster.leases import LeaseBook
from urlcheck.cluster.workers import WorkerInfo
from urlcheck.redis.boundary import Breaker

if TYPE_CHECKING:
    from urlcheck.cluster.config import ClusterConfig
    from urlcheck.politeness.backoff import HostBackoff

logger = logging.getLogger(__name__)

COORDINATOR = "coordinator"
WORKER = "worker"


class JobProcess:
    def __init__(self, config: ClusterConfig, job: str, role: str, backoff: HostBackoff) -> None:
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
        self.backoff = backoff
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
        """The least time between two request starts to ``host`` this process would keep, sent
        with each completion (Redis raises it to the host's learned pace): ``DOWNLOAD_DELAY``,
        or the host's robots.txt Crawl-delay when longer."""
        return self.gap_for(host)

    def gap_for(self, host: str) -> float:
        """The least time from an answer of ``host`` to the next request's start: the same
        floor and Crawl-delay, never AutoThrottle's latency-based delay (counted from the end
        too, a host answering in 1 s would cost 2 s a URL; docs/politeness.md)."""
        return max(self.config.delay, self.backoff.pace.asked(host))

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
