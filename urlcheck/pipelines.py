"""Writes each row's result to results.jsonl the moment its chain ends.

One ``write`` of one whole line on an unbuffered file per row: O(1) per row, nothing held back
in memory, and after a crash at most the last line is torn (a resume repairs it).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, BinaryIO, Self

from scrapy.exceptions import NotConfigured

from urlcheck.check.result import Result
from urlcheck.crawl.runtime import runtime
from urlcheck.jobs.nofollow import open_nofollow

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class ResultsPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._file: BinaryIO | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not runtime(crawler).config.results_enabled:
            raise NotConfigured  # URLCHECK_RESULTS_ENABLED is off
        return cls(crawler)

    def _open(self) -> BinaryIO | None:
        path = runtime(self.crawler).results_path
        if path is None:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open_nofollow(path, "ab", buffering=0)  # never through a link
        return self._file

    def process_item(self, item: object) -> object:
        if isinstance(item, Result):
            out = self._file or self._open()
            if out is not None:
                out.write(item.to_json_line())
        return item

    def close_spider(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
