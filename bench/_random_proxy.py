"""The baseline of bench/proxies.py: a uniformly random proxy per request, no memory.

It replaces urlcheck's ProxyPoolMiddleware (same priority, 580) and does everything else the
same way, so that the bench measures the choice of proxy and nothing else: the same captcha and
block detection (urlcheck.check.detection), the same retry through another (random) proxy with
Scrapy's get_retry_request and URLCHECK_PROXY_BLOCK_RETRIES, and the same m.BLOCKED mark
when it gives up, from which the spider records ``error: "blocked"``.

Settings: URLCHECK_PROXIES / URLCHECK_PROXY_FILE (read as the pool reads them) and
BENCH_RANDOM_PROXY_SEED (an int, for a repeatable sequence of choices).
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING, Self

from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.exceptions import NotConfigured

from urlcheck.check.detection import detect, header_map
from urlcheck.config.proxies import ProxySettings
from urlcheck.crawl import meta as m

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from urlcheck.proxypool import Proxy

_AUTH = b"Proxy-Authorization"


class RandomProxyMiddleware:
    def __init__(self, crawler: Crawler, settings: ProxySettings, seed: int | None) -> None:
        self.crawler = crawler
        self.proxies: tuple[Proxy, ...] = settings.proxies
        self.block_retries = settings.block_retries
        self.random = random.Random(seed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = ProxySettings.from_settings(crawler.settings)
        if settings is None:
            raise NotConfigured
        seed = crawler.settings.get("BENCH_RANDOM_PROXY_SEED")
        return cls(crawler, settings, None if seed in (None, "") else int(seed))

    def process_request(self, request: Request) -> None:
        proxy = self.random.choice(self.proxies)
        # As the pool does: nothing an earlier proxy of this request left may remain.
        request.headers.pop(_AUTH, None)
        request.meta.pop("_auth_proxy", None)
        request.meta["proxy"] = proxy.url
        request.meta[m.PROXY] = proxy.display
        if proxy.auth_header:
            request.headers[_AUTH] = proxy.auth_header
            request.meta["_auth_proxy"] = proxy.url
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("urlcheck/proxy/assigned")

    def process_response(self, request: Request, response: Response) -> Request | Response:
        found = detect(
            response.status, header_map(response.headers.items()), response.body, response.url
        )
        kind = found.kind or ("block" if response.status == 407 else None)
        if kind is None:
            return response
        signature = found.signature or "proxy_auth"
        assert self.crawler.stats is not None and self.crawler.spider is not None
        self.crawler.stats.inc_value(f"urlcheck/proxy/{kind}/{signature}")
        retry = get_retry_request(
            request,
            spider=self.crawler.spider,
            reason=f"proxy_{kind}",
            max_retry_times=self.block_retries,
            give_up_log_level=logging.INFO,
            stats_base_key="urlcheck/proxy/retry",
        )
        if retry is not None:
            return retry
        request.meta[m.BLOCKED] = f"{kind}:{signature}"
        return response
