"""Bot walls on every hop, with or without proxies: a captcha or block page is not the site's
answer, so the row ends ``blocked`` with the wall's vendor instead of being judged on it.

The proxy middleware already judges every response that went through a proxy (and tries another
proxy first); this one judges the rest, with the same detection (:mod:`urlcheck.check.detection`).
It sits below RetryMiddleware (550) and the host back-off (560) so that it sees only a hop's last
response: a retry is a copy of the request, and must not carry the mark of an earlier answer. It
reads the body HttpCompressionMiddleware and BodyCapMiddleware decoded (orders 590, 595).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from scrapy.exceptions import NotConfigured

from urlcheck.check.detection import detect, header_map
from urlcheck.crawl import meta as m
from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector


class BotWallMiddleware:
    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        if runtime(crawler).config.check.bot_walls == "off":
            raise NotConfigured  # URLCHECK_BOT_WALLS=off: no page is looked at
        return cls(crawler.stats)

    def process_response(self, request: Request, response: Response) -> Response:
        meta = request.meta
        # Not a row's hop (a probe, robots.txt); or the proxy middleware judged it already.
        if m.TASK not in meta or m.BLOCKED in meta or meta.get(m.PROXY):
            return response
        found = detect(
            response.status, header_map(response.headers.items()), response.body, response.url
        )
        if found.kind is None:
            return response
        signature = found.signature or found.kind
        self.stats.inc_value(f"urlcheck/wall/{found.kind}/{signature}")
        meta[m.BLOCKED] = f"{found.kind}:{signature}"
        return response
