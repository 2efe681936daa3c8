"""Scrapy's RobotsTxtMiddleware, with its robots.txt requests judged by the address guard as the
request that caused them is (docs/security.md).

Scrapy's middleware fetches ``/robots.txt`` of a host before the first request to it, with a
request of its own that carries none of that request's meta. A public page redirecting to
``http://10.0.0.5/`` had its hop refused with ``blocked_address``, but the robots.txt request,
judged as an input row, still reached 10.0.0.5. Here the robots.txt request carries the guard
context of the request that needs it (:func:`urlcheck.crawl.meta.guard_context`), and the
parsers are cached per host *and* context: a robots.txt refused after a public answer does not
stand for the one an input row to the same host may read.

Only :meth:`robot_parser` is replaced (Scrapy 2.19's, with those two changes); the rest is
Scrapy's. Off, as Scrapy's is, unless ``ROBOTSTXT_OBEY``.
"""

from __future__ import annotations

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
from urlcheck.crawl import meta as m

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
            try:
                response = await self.crawler.engine.download_async(robots)
            except BlockedAddressError as exc:
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
            self._guarded[key] = parser
            waiting.callback(parser)
        found = self._guarded[key]
        if isinstance(found, Deferred):
            return await maybe_deferred_to_future(found)
        return found  # type: ignore[no-any-return]
