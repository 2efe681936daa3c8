"""A spider middleware: a callback that raises still ends its row with a line.

Scrapy logs an exception raised by a callback (or by a spider middleware on its way) and drops
the response: the row would get no line. Closest to the spider (order 950), this middleware
turns the exception into the row's line with ``error: "internal_error"`` (the spider builds it
from the response's meta) and logs the traceback at ERROR: it is a bug in urlcheck, and the
crawl goes on.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self

from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class RowErrorsMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_spider_exception(
        self, response: Response, exception: Exception
    ) -> Iterable[Any] | None:
        build = runtime(self.crawler).row_error
        lines = build(response, exception) if build is not None else None
        if lines is None:
            return None  # not a row's response: Scrapy logs it as usual
        logger.error(
            "Internal error while handling %s; the row is recorded with internal_error",
            response.url,
            exc_info=exception,
        )
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("urlcheck/internal_errors")
        return lines
