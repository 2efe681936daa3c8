"""Prometheus metrics of a running crawl (docs/reports.md).

``URLCHECK_METRICS_PORT`` serves ``/metrics`` on ``URLCHECK_METRICS_HOST`` (127.0.0.1 by
default) while the crawl runs; ``URLCHECK_METRICS_FILE`` writes the node-exporter textfile
format when the spider closes, for cron. Off (bare NotConfigured) when neither is set.

Counters move on Scrapy's signals; gauges (rows, requests in flight, hosts in back-off,
unavailable or slowed down, the proxies' state) and the back-off time are refreshed every
``URLCHECK_METRICS_INTERVAL`` seconds in the reactor thread, so the HTTP server's thread only
ever reads prometheus-client's own locked values.
Each crawler has its own registry: two crawls in one process do not mix their figures.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
    write_to_textfile,
)
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from urlcheck.check.result import Result, status_class
from urlcheck.crawl.runtime import Runtime, runtime
from urlcheck.proxypool.rules.health import State
from urlcheck.signals import proxy_acquired, proxy_released

if TYPE_CHECKING:
    import threading
    from wsgiref.simple_server import WSGIServer

    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

    from urlcheck.config.crawlconfig import MetricsConfig
    from urlcheck.proxypool import ProxyPool

logger = logging.getLogger(__name__)

# Pool acquire is a dict lookup in memory and a Lua call in Redis: 50 us to 100 ms.
ACQUIRE_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1)
PROXY_STATES = tuple(state.value for state in State)


class CrawlMetrics:
    """The metric families, in their own registry."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.input_rows = Gauge("urlcheck_input_rows", "Rows in the input CSV", registry=r)
        self.done_rows = Gauge(
            "urlcheck_done_rows", "Rows with a result, earlier runs of the job included", registry=r
        )
        self.rows = Counter("urlcheck_rows", "Result rows written by this run", registry=r)
        self.results = Counter(
            "urlcheck_results",
            "Result rows by the status class of their final answer",
            ["status_class"],
            registry=r,
        )
        self.verdicts = Counter(
            "urlcheck_verdicts", "Result rows by verdict", ["verdict"], registry=r
        )
        self.errors = Counter(
            "urlcheck_errors", "Result rows without a final answer, by kind", ["kind"], registry=r
        )
        self.in_flight = Gauge(
            "urlcheck_requests_in_flight", "Requests in the downloader", registry=r
        )
        self.backoff = Gauge("urlcheck_hosts_backoff", "Hosts in back-off now", registry=r)
        self.unavailable = Gauge(
            "urlcheck_hosts_unavailable", "Hosts given up on as unavailable", registry=r
        )
        # Learned delays as two figures rather than one series per host: a crawl of a million
        # URLs can meet a hundred thousand hosts, and a label per host would be as many series.
        self.slowed = Gauge(
            "urlcheck_hosts_slowed", "Hosts whose delay was raised after 429 answers", registry=r
        )
        self.delay_max = Gauge(
            "urlcheck_host_delay_max_seconds",
            "The longest delay between requests learned for a host (0: none learned)",
            registry=r,
        )
        self.backoff_seconds = Counter(
            "urlcheck_backoff_seconds",
            "Time hosts spent paused by the back-off, added up over hosts",
            registry=r,
        )
        self.proxy_state = Gauge(
            "urlcheck_proxy_state",
            "1 for the state each proxy is in",
            ["proxy", "state"],
            registry=r,
        )
        self.proxy_success = Gauge(
            "urlcheck_proxy_success_ratio",
            "Share of a proxy's recent outcomes that succeeded",
            ["proxy"],
            registry=r,
        )
        self.proxy_captcha = Gauge(
            "urlcheck_proxy_captcha_ratio",
            "Share of a proxy's recent outcomes that met a captcha",
            ["proxy"],
            registry=r,
        )
        self.proxy_responses = Counter(
            "urlcheck_proxy_responses",
            "Leases released, by proxy and outcome (ok, soft, captcha, block, error_<kind>)",
            ["proxy", "outcome"],
            registry=r,
        )
        self.acquire = Histogram(
            "urlcheck_proxy_acquire_seconds",
            "Time the proxy pool took to lease a proxy",
            buckets=ACQUIRE_BUCKETS,
            registry=r,
        )


class Metrics:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.config: MetricsConfig = runtime.config.metrics
        self.metrics = CrawlMetrics()
        self.server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._task: AsyncioLoopingCall | LoopingCall | None = None
        self._scraped = 0
        self._backoff_seconds = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        found = runtime(crawler)
        if not found.config.metrics.enabled:
            raise NotConfigured
        extension = cls(crawler, found)
        connect = crawler.signals.connect
        connect(extension.spider_opened, signal=signals.spider_opened)
        connect(extension.spider_closed, signal=signals.spider_closed)
        connect(extension.item_scraped, signal=signals.item_scraped)
        connect(extension.acquired, signal=proxy_acquired)
        connect(extension.released, signal=proxy_released)
        return extension

    @property
    def url(self) -> str | None:
        if self.server is None:
            return None
        host = f"[{self.config.host}]" if ":" in self.config.host else self.config.host
        return f"http://{host}:{self.server.server_port}/metrics"

    # --- signals -----------------------------------------------------------------------------

    def spider_opened(self) -> None:
        if self.config.port is not None:
            try:
                self.server, self._thread = start_http_server(
                    self.config.port, addr=self.config.host, registry=self.metrics.registry
                )
            except OSError as exc:
                logger.error(
                    "Metrics: cannot serve on %s port %s: %s; the crawl goes on without",
                    self.config.host,
                    self.config.port,
                    exc,
                )
            else:
                logger.info("Metrics on %s", self.url)
        self._task = create_looping_call(self.refresh)
        self._task.start(self.config.interval, now=True)

    def spider_closed(self) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()
        self.refresh()
        if self.config.file is not None:
            try:
                self.config.file.parent.mkdir(parents=True, exist_ok=True)
                write_to_textfile(str(self.config.file), self.metrics.registry)
            except OSError as exc:
                logger.error("Metrics: cannot write %s: %s", self.config.file, exc)
            else:
                logger.info("Metrics written to %s", self.config.file)
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def item_scraped(self, item: object) -> None:
        if not isinstance(item, Result):
            return
        m = self.metrics
        self._scraped += 1
        m.rows.inc()
        m.results.labels(status_class(item.final_status)).inc()
        m.verdicts.labels(item.verdict or "none").inc()
        if item.error:
            m.errors.labels(item.error).inc()

    def acquired(self, seconds: float) -> None:
        self.metrics.acquire.observe(seconds)

    def released(self, proxy: str, outcome: str) -> None:
        self.metrics.proxy_responses.labels(proxy, outcome).inc()

    # --- gauges ------------------------------------------------------------------------------

    def refresh(self) -> None:
        m, rt = self.metrics, self.runtime
        if rt.total_rows:
            m.input_rows.set(rt.total_rows)
        if rt.results is not None:
            m.done_rows.set(len(rt.results.done) + self._scraped)
        m.in_flight.set(len(self.crawler.engine.downloader.active) if self.crawler.crawling else 0)
        self._refresh_hosts()
        if rt.proxy_pool is not None:
            self._refresh_proxies(rt.proxy_pool)

    def _refresh_hosts(self) -> None:
        m, backoff = self.metrics, self.runtime.backoff
        m.backoff.set(len(backoff.paused()))
        m.unavailable.set(len(backoff.circuit.hosts()))
        learned = backoff.pace.learned()
        m.slowed.set(len(learned))
        m.delay_max.set(max((known.delay for known in learned.values()), default=0.0))
        # Never less than before: a pause cut short is only counted up to when it was.
        total = sum(backoff.paused_seconds().values())
        if total > self._backoff_seconds:
            m.backoff_seconds.inc(total - self._backoff_seconds)
            self._backoff_seconds = total

    def _refresh_proxies(self, pool: ProxyPool) -> None:
        m = self.metrics
        for proxy in pool.snapshot()["proxies"]:
            name = proxy["display"]
            for state in PROXY_STATES:
                m.proxy_state.labels(name, state).set(1 if proxy["state"] == state else 0)
            if proxy["success_rate"] is not None:
                m.proxy_success.labels(name).set(proxy["success_rate"])
            if proxy["captcha_rate"] is not None:
                m.proxy_captcha.labels(name).set(proxy["captcha_rate"])
