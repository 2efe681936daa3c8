"""robots.txt's Crawl-delay as a host's least delay (urlcheck.extensions.crawldelay and
HostPace.ask), on a real crawler and Scrapy's own robots.txt parser."""

from __future__ import annotations

import logging

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import NotConfigured
from scrapy.robotstxt import ProtegoRobotParser
from scrapy.utils.test import get_crawler

from urlcheck.crawl.runtime import runtime
from urlcheck.extensions.crawldelay import CrawlDelay
from urlcheck.politeness.pace import HostPace


def test_a_host_asking_for_a_delay_never_goes_faster_learned_or_not() -> None:
    pace = HostPace(0.3, 10.0, ease_after=1)
    assert pace.ask("a.test", 2.0) == 2.0
    assert (pace.delay("a.test"), pace.asked("a.test"), pace.delay("b.test")) == (2.0, 2.0, 0.3)
    pace.too_fast("a.test")  # learned 0.6: the asked 2 s still stands
    assert pace.delay("a.test") == 2.0
    for _ in range(3):
        pace.too_fast("a.test")  # learned 4.8
    assert pace.delay("a.test") == 4.8
    assert pace.ask("c.test", 600.0) == 10.0  # at most the maximum


def crawl_delay(settings: dict[str, object]) -> tuple[CrawlDelay, object]:
    crawler = get_crawler(Spider, settings)
    crawler.spider = Spider("t")
    crawler.engine = crawler._create_engine()  # a real engine (its downloader), never started
    return CrawlDelay.from_crawler(crawler), crawler


def parsed(crawler: object, body: str) -> ProtegoRobotParser:
    return ProtegoRobotParser.from_crawler(crawler, body.encode())  # type: ignore[arg-type]


def test_off_unless_robots_txt_is_obeyed() -> None:
    with pytest.raises(NotConfigured) as off:
        crawl_delay({"ROBOTSTXT_OBEY": False})
    assert not off.value.args  # Scrapy warns "Disabled ..." only when there is a message


def test_the_delay_asked_of_our_user_agent_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    extension, crawler = crawl_delay({"ROBOTSTXT_OBEY": True, "USER_AGENT": "urlcheck/1"})
    body = "User-agent: urlcheck\nCrawl-delay: 2\n\nUser-agent: *\nCrawl-delay: 5\n"
    with caplog.at_level(logging.INFO, logger="urlcheck.extensions.crawldelay"):
        extension.robots_parsed(parsed(crawler, body), Request("http://a.test/page"))
    pace = runtime(crawler).backoff.pace  # type: ignore[arg-type]
    assert pace.delay("a.test") == 2.0
    assert crawler.stats.get_value("urlcheck/robots/crawl_delay/a.test") == 2.0  # type: ignore[attr-defined]
    assert "a.test asks for Crawl-delay 2 s in robots.txt" in caplog.text
    extension.robots_parsed(
        parsed(crawler, "User-agent: *\nDisallow:\n"), Request("http://b.test/")
    )
    assert pace.delay("b.test") == pace.floor  # asked for nothing


def test_a_delay_above_the_maximum_is_cut_to_it_and_said(caplog: pytest.LogCaptureFixture) -> None:
    extension, crawler = crawl_delay({"ROBOTSTXT_OBEY": True, "URLCHECK_HOST_DELAY_MAX": 4})
    with caplog.at_level(logging.WARNING, logger="urlcheck.extensions.crawldelay"):
        extension.robots_parsed(
            parsed(crawler, "User-agent: *\nCrawl-delay: 30\n"), Request("http://a.test/")
        )
    assert runtime(crawler).backoff.pace.delay("a.test") == 4.0  # type: ignore[arg-type]
    assert "a.test asks for Crawl-delay 30 s in robots.txt; its requests go 4 s apart" in (
        caplog.text
    )
