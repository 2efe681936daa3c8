"""The Scrapy internals urlcheck relies on (urlcheck/crawl/internals.py) are still there.

If this fails after a Scrapy upgrade, its message names what moved; the pin in pyproject
(``scrapy<2.20``) exists for exactly this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from urlcheck.crawl import internals
from urlcheck.crawl.scheduling import PoliteHostQueue

if TYPE_CHECKING:
    from scrapy.core.engine import ExecutionEngine


def engine() -> ExecutionEngine:
    crawler = get_crawler(
        Spider, {"SCHEDULER_PRIORITY_QUEUE": "urlcheck.crawl.scheduling.PoliteHostQueue"}
    )
    crawler.spider = crawler._create_spider("internals")
    crawler.engine = crawler._create_engine()
    return crawler.engine


def test_every_internal_urlcheck_uses_is_present() -> None:
    eng = engine()
    internals.check(eng)  # raises naming what is missing
    downloader = eng.downloader
    assert list(internals.requests_in_downloader(downloader)) == []
    assert internals.slot_times(downloader, "nowhere.test") is None
    assert internals.default_concurrency(downloader) == 8
    assert internals.active_hosts(downloader) == 0
    internals.wake_engine(eng)  # no slot before the spider opens: a no-op, no error


def test_the_queue_reaches_the_downloader() -> None:
    eng = engine()
    from scrapy.squeues import FifoMemoryQueue

    queue = PoliteHostQueue(eng.crawler, FifoMemoryQueue, "q")
    assert internals.queue_downloader(queue) is eng.downloader


def test_a_missing_internal_is_named() -> None:
    eng = engine()
    del eng.downloader.active
    with pytest.raises(internals.ScrapyInternalsChangedError, match=r"Downloader\.active"):
        internals.check(eng)
