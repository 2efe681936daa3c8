"""Writes each row's result to results.jsonl the moment its chain ends.

One whole line per row through the shared :class:`~urlcheck.jobs.resultswriter.ResultsWriter`
(never through a link, under the writer's lock): O(1) per row, nothing held back in memory,
and after a crash at most the last line is torn (a resume repairs it).

A write that fails (a full disk: :mod:`urlcheck.crawl.writefailure`) is undone by the writer
(no torn line is left behind) and stops the crawl; from then on no line is written, so the rows
still in hand stay not done, for the next run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from scrapy.exceptions import DropItem, NotConfigured

from urlcheck.check.result import Result
from urlcheck.crawl.runtime import runtime
from urlcheck.crawl.writefailure import describe, write_failed
from urlcheck.jobs.resultswriter import ResultsWriter

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class ResultsPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._writer: ResultsWriter | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not runtime(crawler).config.results_enabled:
            raise NotConfigured  # URLCHECK_RESULTS_ENABLED is off
        return cls(crawler)

    def process_item(self, item: object) -> object:
        if not isinstance(item, Result):
            return item
        rt = runtime(self.crawler)
        path = rt.results_path
        if path is None:
            return item
        if rt.write_failure is not None:
            raise DropItem(f"row {item.row} not written: {rt.write_failure.error}", "DEBUG")
        try:
            if self._writer is None:
                self._writer = ResultsWriter.open(path)
            self._writer.write(item.to_json_line())
        except OSError as exc:
            write_failed(self.crawler, path, exc)
            raise DropItem(f"row {item.row} not written: {describe(exc)}", "DEBUG") from None
        return item

    def close_spider(self) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        try:
            writer.sync()
        except OSError as exc:
            write_failed(self.crawler, writer.path, exc)
        finally:
            writer.close()
