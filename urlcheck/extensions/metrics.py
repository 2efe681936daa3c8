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
    from urlcheck.extensions.metricfamilies import CrawlMetrics
    from urlcheck.proxypool import ProxyPool

logger = logging.getLogger(__name__)

PROXY_STATES = tuple(state.value for state in State)


class Metrics:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.config: MetricsConfig = runtime.config.metrics
        from urlcheck.extensions.metricfamilies import CrawlMetrics  # on demand: see metricfamilies

        self.metrics: CrawlMetrics = CrawlMetrics()
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
                from prometheus_client import start_http_server  # on demand: see metricfamilies

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
                from prometheus_client import write_to_textfile  # on demand: see metricfamilies

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
