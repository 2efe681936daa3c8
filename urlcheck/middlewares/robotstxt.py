"""Scrapy's RobotsTxtMiddleware, with its robots.txt requests judged by the address guard as the
request that caused them is (docs/security.md).

Scrapy's middleware fetches ``/robots.txt`` of a host before the first request to it, with a
request of its own that carries none of that request's meta. A public page redirecting to
``http://10.0.0.5/`` had its hop refused with ``blocked_address``, but the robots.txt request,
judged as an input row, still reached 10.0.0.5. Here the robots.txt request carries the guard
context of the request that needs it (:func:`urlcheck.crawl.meta.guard_context`), and the
parsers are cached per host *and* context: a robots.txt refused after a public answer does not
stand for the one an input row to the same host may read.

The request that waited for robots.txt then waits the host's delay (the floor, the learned pace,
the robots.txt Crawl-delay) counted from the end of the robots.txt download, as the scheduler
counts it for every other request (:mod:`urlcheck.crawl.scheduling`). Scrapy's slot counts it from
the robots.txt *dispatch* only, and that request also opened the connection: the host saw the
first row's request 0.988 s after robots.txt asked for 1 s.

Only :meth:`robot_parser` is replaced (Scrapy 2.19's, with those changes); the rest is
Scrapy's. Off, as Scrapy's is, unless ``ROBOTSTXT_OBEY``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet.defer import Deferred

from urlcheck.check.addressguard import BlockedAddressError
from urlcheck.crawl import internals
from urlcheck.crawl import meta as m
from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)


class GuardedRobotsTxtMiddleware(RobotsTxtMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)  # NotConfigured unless ROBOTSTXT_OBEY
        self._parser_class: Any = load_object(crawler.settings.get("ROBOTSTXT_PARSER"))
        # (netloc, the guard context as sorted items) -> its parser, or the wait for it
        self._guarded: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}

    async def robot_parser(self, request: Request) -> RobotParser | None:
        context = m.guard_context(request.meta)
        url = urlparse_cached(request)
        key = (url.netloc, tuple(sorted(context.items())))
        if key not in self._guarded:
            waiting: Deferred[RobotParser | None] = Deferred()
            self._guarded[key] = waiting
            robots = Request(
                f"{url.scheme}://{url.netloc}/robots.txt",
                priority=self.DOWNLOAD_PRIORITY,
                meta={"dont_obey_robotstxt": True, **context},
                callback=NO_CALLBACK,
            )
            parser: RobotParser | None = None
            stats = self.crawler.stats
            assert stats is not None
            reached = True  # the host may have seen the robots.txt request
            try:
                response = await self.crawler.engine.download_async(robots)
            except BlockedAddressError as exc:
                reached = False
                logger.debug("robots.txt not requested: %s", exc)
                stats.inc_value("robotstxt/blocked_address")
            except IgnoreRequest:
                pass
            except Exception as exc:
                logger.exception(
                    "Error downloading %(request)s: %(f_exception)s",
                    {"request": robots, "f_exception": exc},
                    extra={"spider": self.crawler.spider},
                )
                stats.inc_value(f"robotstxt/exception_count/{type(exc)}")
            else:
                stats.inc_value("robotstxt/response_count")
                stats.inc_value(f"robotstxt/response_status_count/{response.status}")
                parser = build_from_crawler(self._parser_class, self.crawler, response.body)
                await self.crawler.signals.send_catch_log_async(
                    signal=signals.robots_parsed, robotparser=parser, request=request
                )
            stats.inc_value("robotstxt/request_count")
            if reached:
                await self._host_delay_after_robots(request)
            self._guarded[key] = parser
            waiting.callback(parser)
        found = self._guarded[key]
        if isinstance(found, Deferred):
            return await maybe_deferred_to_future(found)
        return found  # type: ignore[no-any-return]

    async def _host_delay_after_robots(self, request: Request) -> None:
        """Wait out the host's delay from now, the end of its robots.txt download (the
        Crawl-delay robots.txt asked for is known: ``robots_parsed`` has been sent)."""
        engine = self.crawler.engine
        assert engine is not None
        host = internals.slot_key(engine.downloader, request)
        backoff = runtime(self.crawler).backoff
        await asyncio.sleep(max(backoff.config.delay_floor, backoff.pace.delay(host)))
