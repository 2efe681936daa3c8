"""Progress: one line every ``URLCHECK_PROGRESS_INTERVAL`` seconds (30 by default; 0 turns it
off), the first after 5 s at most, with or without JOBDIR: rows done/total, rows per minute over
this run (time paused not counted), ETA, hosts with requests in the downloader and hosts in
back-off. With a terminal (``urlcheck check`` on a TTY, :mod:`urlcheck.crawl.terminal`) the same
figures also draw its progress bar, twice a second.

With a job (the runtime's ``job_context``), done/total are the job's, earlier runs included;
without, the rows the spider found already done plus those this run wrote.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import call_later, create_looping_call

from urlcheck.check.result import Result
from urlcheck.crawl import internals
from urlcheck.crawl.runtime import Runtime, runtime
from urlcheck.crawl.terminal import BAR_REFRESH
from urlcheck.jobs.progress import ProgressFigures, RunRate
from urlcheck.signals import job_paused, job_resumed

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall, CallLaterResult
    from twisted.internet.task import LoopingCall

logger = logging.getLogger(__name__)

FIRST_LINE_AFTER = 5.0  # seconds: a run that says nothing for 30 s looks stuck


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
        self._first: CallLaterResult | None = None
        self._bar: AsyncioLoopingCall | LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        found = runtime(crawler)
        if found.config.progress_interval == 0 and found.terminal is None:
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
        if self.interval:
            self._first = call_later(min(self.interval, FIRST_LINE_AFTER), self._start_lines)
        terminal = self.runtime.terminal
        if terminal is not None and terminal.bar:
            self._bar = create_looping_call(self.draw_bar)
            self._bar.start(BAR_REFRESH, now=True)

    def _start_lines(self) -> None:
        self._first = None
        self.log_progress()
        self._task = create_looping_call(self.log_progress)
        self._task.start(self.interval, now=False)

    def spider_closed(self) -> None:
        if self._first is not None:
            self._first.cancel()
        for task in (self._task, self._bar):
            if task is not None and task.running:
                task.stop()
        if self._bar is not None:
            self.draw_bar()  # the last figures stay on the screen

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

    def figures(self, *, active_hosts: int = 0, paused: bool = False) -> ProgressFigures | None:
        """What the line and the bar show, or None until the input is read."""
        rows = self.rows()
        if rows is None:
            return None
        done, total = rows
        now = self.clock()
        return ProgressFigures(
            done,
            total,
            rate=self.rate.rate(done, now),
            eta=None if paused else self.rate.eta(done, total, now),
            active_hosts=active_hosts,
            backoff_hosts=self.backoff_hosts(),
            paused=paused,
        )

    def line(self, *, active_hosts: int = 0, paused: bool = False) -> str | None:
        figures = self.figures(active_hosts=active_hosts, paused=paused)
        return None if figures is None else figures.line()

    def _now(self) -> ProgressFigures | None:
        engine = self.crawler.engine
        if engine is None:
            return None
        active = internals.active_hosts(engine.downloader)
        return self.figures(active_hosts=active, paused=engine.paused)

    def log_progress(self) -> None:
        figures = self._now()
        if figures is not None:
            logger.info("%s", figures.line())

    def draw_bar(self) -> None:
        terminal, figures = self.runtime.terminal, self._now()
        if terminal is not None and figures is not None:
            terminal.show(figures)
