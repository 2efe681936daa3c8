"""The per-host circuit (:mod:`urlcheck.politeness.circuit`) as a downloader middleware.

It sits below Scrapy's RetryMiddleware (540 < 550) and the back-off (560), so it sees each
request's *last* outcome only: a 429/503 the back-off gave up on, a network error Scrapy's
retry gave up on, or an answer. Once a host is unavailable, its requests (queued rows, hops of
other chains) fail here at once with :class:`HostUnavailableError`, before any connection, and
the spider records them as ``host_unavailable`` with the evidence.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy.exceptions import NotConfigured

from urlcheck.crawl import meta as m
from urlcheck.crawl.failures import classify_exception
from urlcheck.crawl.runtime import runtime
from urlcheck.middlewares.backoff import host_of
from urlcheck.politeness.circuit import HostUnavailableError, Strike

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from urlcheck.politeness.backoff import HostBackoff

logger = logging.getLogger(__name__)

# Failures that say nothing answered: a host failing only these on every try is down.
NETWORK_KINDS = frozenset({"dns", "connect", "timeout", "connection_lost", "network"})


class HostCircuitMiddleware:
    def __init__(self, crawler: Crawler, backoff: HostBackoff) -> None:
        self.crawler = crawler
        self.backoff = backoff
        self.circuit = backoff.circuit

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        backoff = runtime(crawler).backoff
        if not backoff.config.down_after:
            raise NotConfigured("URLCHECK_HOST_DOWN_AFTER is 0")
        return cls(crawler, backoff)

    def process_request(self, request: Request) -> None:
        down = self.circuit.unavailable(host_of(request))
        if down is not None:
            if down.last.retry_after is not None:
                request.meta[m.RETRY_AFTER] = down.last.retry_after
            raise HostUnavailableError(down)

    def process_response(self, request: Request, response: Response) -> Response:
        host = host_of(request)
        if response.status in self.backoff.config.http_codes:
            tries = request.meta.get("retry_times", 0) + 1
            self._exhausted(
                host, Strike(response.status, None, request.meta.get(m.RETRY_AFTER), tries)
            )
        else:
            self.circuit.answered(host)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, HostUnavailableError):
            return
        kind, _ = classify_exception(exception)
        # Through a proxy, a network error is most often the proxy's (a down site gets a 502
        # from the proxy, an answer): it says nothing about the host.
        if kind in NETWORK_KINDS and not request.meta.get("proxy"):
            tries = request.meta.get("retry_times", 0) + 1
            self._exhausted(host_of(request), Strike(None, kind, None, tries))

    def _exhausted(self, host: str, strike: Strike) -> None:
        down = self.circuit.exhausted(host, strike)
        if down is None:
            return
        self.backoff.resume(host)  # its queued requests need no more waiting: they fail now
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("urlcheck/hosts/unavailable")
        logger.warning(
            "%s; its remaining rows are recorded as host_unavailable without requests "
            "(URLCHECK_HOST_DOWN_AFTER=%d)",
            down.message().replace("; not requested", ""),
            self.circuit.down_after,
        )
