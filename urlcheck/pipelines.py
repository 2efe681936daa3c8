"""Writes each row's result to results.jsonl the moment its chain ends.

One ``write`` of one whole line on an unbuffered file per row: O(1) per row, nothing held back
in memory, and after a crash at most the last line is torn (a resume repairs it).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, Self

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.crawler import Crawler


class _HasResultsPath(Protocol):
    @property
    def results_path(self) -> Path | None: ...


class ResultsPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._file: BinaryIO | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("URLCHECK_RESULTS_ENABLED", True):
            raise NotConfigured("URLCHECK_RESULTS_ENABLED is off")
        return cls(crawler)

    def _open(self) -> BinaryIO | None:
        spider: _HasResultsPath | None = self.crawler.spider  # type: ignore[assignment]
        path = getattr(spider, "results_path", None)
        if path is None:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("ab", buffering=0)
        return self._file

    def process_item(self, item: Any) -> Any:
        out = self._file or self._open()
        if out is not None:
            line = json.dumps(ItemAdapter(item).asdict(), ensure_ascii=False)
            out.write(line.encode("utf-8") + b"\n")
        return item

    def close_spider(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
