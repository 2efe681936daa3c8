"""Per-host back-off on 429/503, as a downloader middleware (policy in
:mod:`urlcheck.politeness.backoff`), and the learned pace: a 429 also raises that host's delay
(:mod:`urlcheck.politeness.pace`).

It runs before Scrapy's RetryMiddleware in the response chain (priority 560 > 550) and turns a
429/503 into (1) a pause of that host alone, which
:class:`urlcheck.crawl.scheduling.PoliteHostQueue` honours without holding any of the global places,
and (2) a retry built by Scrapy's own ``get_retry_request``. After the last retry the response goes
to the spider as the row's answer.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.httpobj import urlparse_cached

from urlcheck.crawl import meta as m
from urlcheck.crawl.runtime import runtime
from urlcheck.politeness.backoff import HostBackoff, parse_retry_after

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class HostBackoffMiddleware:
    def __init__(self, crawler: Crawler, backoff: HostBackoff) -> None:
        self.crawler = crawler
        self.backoff = backoff
        self.config = backoff.config
        self._reporter = create_looping_call(self._report_paused)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        backoff = runtime(crawler).backoff
        if not backoff.config.http_codes:
            raise NotConfigured("URLCHECK_BACKOFF_HTTP_CODES is empty")
        middleware = cls(crawler, backoff)
        crawler.signals.connect(middleware._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware._spider_closed, signal=signals.spider_closed)
        return middleware

    def _spider_opened(self) -> None:
        self._reporter.start(self.config.log_interval, now=False)

    def _spider_closed(self) -> None:
        if self._reporter.running:
            self._reporter.stop()

    def _report_paused(self) -> None:
        for paused in self.backoff.paused():
            logger.info(
                "Host %s is backing off (attempt %d of %d): %.0f s left",
                paused.host,
                paused.attempt,
                self.config.retries + 1,
                paused.seconds_left,
            )

    def process_response(self, request: Request, response: Response) -> Request | Response:
        host = host_of(request)
        if response.status not in self.config.http_codes:
            self.backoff.pace.answered(host)
            return response
        retry_after = parse_retry_after(response.headers.get(b"Retry-After"))
        if response.status == 429:
            self._learn_pace(host, retry_after)
        if request.meta.get("dont_retry"):
            return response
        stats, spider = self.crawler.stats, self.crawler.spider
        assert stats is not None and spider is not None
        if retry_after is not None:
            request.meta[m.RETRY_AFTER] = retry_after
        attempt = request.meta.get("retry_times", 0) + 1
        retry = get_retry_request(
            request,
            spider=spider,
            reason=f"backoff_{response.status}",
            max_retry_times=request.meta.get("max_retry_times", self.config.retries),
            # The retry goes first once the host is back, ahead of its other queued rows.
            priority_adjust=1,
            give_up_log_level=logging.WARNING,
            stats_base_key="urlcheck/backoff",
        )
        if retry is None:
            return response
        seconds = self.backoff.pause(host, attempt, retry_after)
        stats.inc_value("urlcheck/backoff/pauses")
        logger.info(
            "Host %s answered %d to %s: pausing that host %.0f s (attempt %d of %d%s)",
            host,
            response.status,
            request.url,
            seconds,
            attempt,
            self.config.retries + 1,
            "" if retry_after is None else f", Retry-After {retry_after:.0f} s",
        )
        return retry

    def _learn_pace(self, host: str, retry_after: float | None) -> None:
        pace = self.backoff.pace
        before = pace.delay(host)
        after = pace.too_fast(host, retry_after)
        if after > before:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("urlcheck/pace/raised")
            logger.info(
                "Host %s answered 429 at %.2f s between requests: %.2f s from now on",
                host,
                before,
                after,
            )


def host_of(request: Request) -> str:
    """The host a request counts against: its download slot (the spider sets it per hop)."""
    slot: str | None = request.meta.get("download_slot")
    return slot or urlparse_cached(request).hostname or ""
