"""What the components of one crawl share, and the one way they find it.

Scrapy builds the spider, the scheduler's queue, middlewares, pipelines and extensions
separately; several need the same parsed config and live state (the hosts in back-off, the
row feeder, the results file, the job, the proxy pool). Each asks :func:`runtime` for the
crawl's :class:`Runtime` instead of reaching into the spider or into another component.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from urlcheck.config.crawlconfig import UrlcheckConfig
from urlcheck.politeness.backoff import HostBackoff

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Mapping
    from pathlib import Path

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from urlcheck.check.result import Result
    from urlcheck.cluster.frontier import JobHost
    from urlcheck.crawl.requests import RowRequests
    from urlcheck.crawl.terminal import Terminal
    from urlcheck.crawl.tlscheck import CertificateLedger
    from urlcheck.crawl.writefailure import WriteFailure
    from urlcheck.input.feeder import HostFeeder
    from urlcheck.input.kind import Source
    from urlcheck.jobs.context import JobContext
    from urlcheck.jobs.landings import ManyToOneSeen
    from urlcheck.jobs.resultsfile import ResultsPlan
    from urlcheck.proxypool import ProxyPool


@dataclass(frozen=True, slots=True)
class ClusterRole:
    """This process's part in a distributed job (``REDIS_URL``; docs/distributed.md)."""

    job: str  # -a job=NAME: the job in Redis, and its proxy pool's default name
    coordinator: bool  # -a csv too: it feeds the rows and writes results.jsonl


class Runtime:
    def __init__(self, config: UrlcheckConfig) -> None:
        self.config = config
        self.backoff = HostBackoff(config.backoff)
        # Set by the check spider when its start() has read the input:
        self.feeder: HostFeeder | None = None
        self.results: ResultsPlan | None = None
        self.job_context: JobContext | None = None
        self.total_rows = 0
        # Set by JobControl when it judges many_to_one over the whole job: its judgement as the
        # crawl closes, made by the first call (the Summary shows it and keeps no tally).
        self.job_landings: Callable[[], ManyToOneSeen | None] | None = None
        # Set by the proxy middleware when proxies are configured:
        self.proxy_pool: ProxyPool | None = None
        # Set by the check spider: how rows become requests and chains lines.
        self.requests: RowRequests | None = None
        # Set by the check spider: the line of a row whose callback raised (None: not a row's).
        # The lines of the row whose callback raised (and of its copies; the request of a copy
        # whose URL only shared a hash), for RowErrorsMiddleware.
        self.row_error: (
            Callable[[Response, BaseException], Iterable[Request | Result] | None] | None
        ) = None
        # Set by the check spider: how a cancel ends the rows in hand (JobControl calls it).
        self.wind_down: Callable[[float], Awaitable[None]] | None = None
        # Set by the check spider for rows a site gave (a fetched sitemap's): whether the row's
        # first request comes after a public answer (urlcheck.check.addressguard).
        self.row_after_public: Callable[[int], bool] | None = None
        # Set by the check spider in distributed mode (REDIS_URL; docs/distributed.md):
        self.cluster_role: ClusterRole | None = None
        # Set by distributed mode's coordinator extension: it queues the rows in Redis instead
        # of the spider requesting them, and reads the whole job's hosts for the host report.
        self.feed_rows: Callable[[Source, HostFeeder], Awaitable[None]] | None = None
        self.job_hosts: Callable[[], Mapping[str, JobHost] | None] | None = None
        # Set by `urlcheck check` on a terminal: the progress bar the Progress extension draws.
        self.terminal: Terminal | None = None
        # Set at the first write of results or job files that failed (urlcheck.crawl.writefailure).
        self.write_failure: WriteFailure | None = None
        # Set by the download handler: what each https connection's certificate check found.
        self.certificates: CertificateLedger | None = None

    @property
    def results_path(self) -> Path | None:
        return self.results.path if self.results is not None else None


_RUNTIMES: WeakKeyDictionary[Crawler, Runtime] = WeakKeyDictionary()


def runtime(crawler: Crawler) -> Runtime:
    """The crawl's runtime, made (and its settings parsed) on first use."""
    found = _RUNTIMES.get(crawler)
    if found is None:
        found = _RUNTIMES[crawler] = Runtime(UrlcheckConfig.from_settings(crawler.settings))
    return found
