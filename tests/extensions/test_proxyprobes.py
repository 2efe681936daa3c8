"""The proxy pool's probes (urlcheck.extensions.proxyprobes) on a real crawler, a real pool in
memory and the real download handler: a probe of one of the crawl's URLs is judged by the
address guard as the request it was taken from."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from urlcheck.check.addressguard import BlockedAddressError
from urlcheck.crawl import meta as m
from urlcheck.crawl.downloadhandler import GuardedHTTPDownloadHandler
from urlcheck.crawl.runtime import runtime
from urlcheck.extensions.proxyprobes import ProxyProbes
from urlcheck.middlewares.proxy import ProxyPoolMiddleware

PRIVATE = "http://10.1.2.3/next"  # where a public page redirected


def probes() -> tuple[ProxyProbes, ProxyPoolMiddleware]:
    crawler = get_crawler(Spider, {"URLCHECK_PROXIES": ["http://127.0.0.11:3128"]})
    crawler.spider = Spider("probes")
    middleware = build_from_crawler(ProxyPoolMiddleware, crawler)
    extension = ProxyProbes.from_crawler(crawler)
    extension.pool = runtime(crawler).proxy_pool
    return extension, middleware


@pytest.mark.parametrize("after_public", [True, False])
@deferred_f_from_coro_f
async def test_a_probe_target_keeps_the_guard_context_of_its_request(after_public) -> None:
    extension, middleware = probes()
    hop = Request(PRIVATE, meta={m.AFTER_PUBLIC: True} if after_public else {})
    extension._scheduled(hop)
    assert extension.pool is not None
    [task] = extension.pool.due_probes(now=1e12)
    assert task.control_url == PRIVATE
    probe = extension.probe_request(task)
    assert bool(probe.meta.get(m.AFTER_PUBLIC)) is after_public
    await middleware.process_request(probe)  # through the probed proxy, as the crawl sends it
    assert probe.meta["proxy"] == "http://127.0.0.11:3128"
    handler = GuardedHTTPDownloadHandler(middleware.crawler)
    try:
        if after_public:  # refused before the proxy is asked: a literal is judged here
            with pytest.raises(BlockedAddressError, match=r"10\.1\.2\.3 is private"):
                await handler.download_request(probe)
    finally:
        await handler.close()
