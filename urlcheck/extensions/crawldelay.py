"""robots.txt's ``Crawl-delay``, honoured: with ``ROBOTSTXT_OBEY`` on, Scrapy fetches a host's
robots.txt before the first request to it; a Crawl-delay there for our user agent becomes that
host's least delay between requests for the rest of the run (at most ``URLCHECK_HOST_DELAY_MAX``).

It reads the parser Scrapy hands to its ``robots_parsed`` signal (``RobotParser.crawl_delay``,
Scrapy 2.18+). The host's download slot gets the delay at once, so the request that waited for
robots.txt keeps it too, as AutoThrottle sets a slot's delay; the learned pace
(:mod:`urlcheck.politeness.pace`) keeps it after Scrapy drops the idle slot, and in distributed
mode each completion sends it to the job's Redis with the process's delay.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured

from urlcheck.crawl import internals
from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)


class CrawlDelay:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.pace = runtime(crawler).backoff.pace
        settings = crawler.settings
        self.agent: str = settings.get("ROBOTSTXT_USER_AGENT") or ""
        self.default_agent: str = settings.get("USER_AGENT") or "Scrapy"

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured  # ROBOTSTXT_OBEY is off (the default): no robots.txt to read
        extension = cls(crawler)
        crawler.signals.connect(extension.robots_parsed, signal=signals.robots_parsed)
        return extension

    def robots_parsed(self, robotparser: RobotParser, request: Request) -> None:
        # The user agent Scrapy's RobotsTxtMiddleware asks `allowed` for.
        agent = self.agent or request.headers.get(b"User-Agent") or self.default_agent
        asked = robotparser.crawl_delay(agent)
        if not asked or asked <= 0:
            return
        engine = self.crawler.engine
        assert engine is not None
        host = internals.slot_key(engine.downloader, request)
        granted = self.pace.ask(host, asked)
        internals.raise_slot_delay(engine.downloader, host, granted)
        assert self.crawler.stats is not None
        self.crawler.stats.set_value(f"urlcheck/robots/crawl_delay/{host}", granted)
        if granted < asked:
            logger.warning(
                "%s asks for Crawl-delay %g s in robots.txt; its requests go %g s apart "
                "(URLCHECK_HOST_DELAY_MAX; raise it to honour the whole delay)",
                host,
                asked,
                granted,
            )
        else:
            logger.info(
                "%s asks for Crawl-delay %g s in robots.txt: its requests go that far apart",
                host,
                asked,
            )
