"""Progress: one line every ``URLCHECK_PROGRESS_INTERVAL`` seconds (30 by default; 0 turns it
off), with or without JOBDIR: rows done/total, rows per minute over this run (time paused
not counted), ETA, hosts with requests in the downloader and hosts in back-off.

With a job (the runtime's ``job_context``), done/total are the job's, earlier runs included;
without, the rows the spider found already done plus those this run wrote.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from urlcheck.check.result import Result
from urlcheck.crawl import internals
from urlcheck.crawl.runtime import Runtime, runtime
from urlcheck.jobs.progress import RunRate, format_progress
from urlcheck.signals import job_paused, job_resumed

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

logger = logging.getLogger(__name__)


class Progress:
    def __init__(
        self, crawler: Crawler, runtime: Runtime, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.interval = runtime.config.progress_interval
        self.clock = clock
        self.scraped = 0  # result rows written by this run
        self.rate = RunRate(0, clock())
        self._before: int | None = None  # rows done before this run, once known
        self._task: AsyncioLoopingCall | LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        found = runtime(crawler)
        if found.config.progress_interval == 0:
            raise NotConfigured
        extension = cls(crawler, found)
        connect = crawler.signals.connect
        connect(extension.spider_opened, signal=signals.spider_opened)
        connect(extension.spider_closed, signal=signals.spider_closed)
        connect(extension.item_scraped, signal=signals.item_scraped)
        connect(extension.paused, signal=job_paused)
        connect(extension.resumed, signal=job_resumed)
        return extension

    def spider_opened(self) -> None:
        self.rate = RunRate(0, self.clock())
        self._task = create_looping_call(self.log_progress)
        self._task.start(self.interval, now=False)

    def spider_closed(self) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()

    def item_scraped(self, item: object) -> None:
        if isinstance(item, Result):
            self.scraped += 1

    def paused(self) -> None:
        self.rate.pause(self.clock())

    def resumed(self) -> None:
        self.rate.resume(self.clock())

    def rows(self) -> tuple[int, int] | None:
        """(done, total), or None until the spider has read its input."""
        rt = self.runtime
        context = rt.job_context
        if context is not None:
            done, total = context.done_rows, context.total_rows
            if self._before is None:
                self._before = done - self.scraped
        else:
            results, total = rt.results, rt.total_rows
            if results is None or not total:
                return None
            if self._before is None:
                self._before = len(results.done)
            done = self._before + self.scraped
        self.rate.done_at_start = self._before
        return done, total

    def backoff_hosts(self) -> int:
        context = self.runtime.job_context
        if context is not None:
            return len(context.paused_hosts())
        return len(self.runtime.backoff.paused())

    def line(self, *, active_hosts: int = 0, paused: bool = False) -> str | None:
        rows = self.rows()
        if rows is None:
            return None
        done, total = rows
        now = self.clock()
        return format_progress(
            done,
            total,
            rate=self.rate.rate(done, now),
            eta=None if paused else self.rate.eta(done, total, now),
            active_hosts=active_hosts,
            backoff_hosts=self.backoff_hosts(),
            paused=paused,
        )

    def log_progress(self) -> None:
        engine = self.crawler.engine
        active = internals.active_hosts(engine.downloader)
        line = self.line(active_hosts=active, paused=engine.paused)
        if line is not None:
            logger.info("%s", line)
