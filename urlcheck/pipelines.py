"""Writes each row's result to results.jsonl the moment its chain ends.

One ``write`` of one whole line on an unbuffered file per row: O(1) per row, nothing held back
in memory, and after a crash at most the last line is torn (a resume repairs it).

A write that fails (a full disk: :mod:`urlcheck.crawl.writefailure`) is undone (the file is cut
back to its last whole line, so no torn line is left behind) and stops the crawl; from then on
no line is written, so the rows still in hand stay not done, for the next run.
"""

from __future__ import annotations

import contextlib
import errno
import os
from typing import TYPE_CHECKING, BinaryIO, Self

from scrapy.exceptions import DropItem, NotConfigured

from urlcheck.check.result import Result
from urlcheck.crawl.runtime import runtime
from urlcheck.crawl.writefailure import describe, write_failed
from urlcheck.jobs.inuse import hold_for_writing
from urlcheck.jobs.nofollow import open_nofollow

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.crawler import Crawler


class ResultsPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._file: BinaryIO | None = None
        self._size = 0  # the file's length: where the next line starts

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not runtime(crawler).config.results_enabled:
            raise NotConfigured  # URLCHECK_RESULTS_ENABLED is off
        return cls(crawler)

    def _open(self, path: Path) -> BinaryIO:
        path.parent.mkdir(parents=True, exist_ok=True)
        out = open_nofollow(path, "ab", buffering=0)  # never through a link
        if not hold_for_writing(out.fileno()):  # another job's crawl writes it (-a out=)
            out.close()
            raise OSError(errno.EWOULDBLOCK, "another crawl is writing it")
        self._file = out
        self._size = os.fstat(out.fileno()).st_size
        return out

    def process_item(self, item: object) -> object:
        if not isinstance(item, Result):
            return item
        rt = runtime(self.crawler)
        path = rt.results_path
        if path is None:
            return item
        if rt.write_failure is not None:
            raise DropItem(f"row {item.row} not written: {rt.write_failure.error}", "DEBUG")
        line = item.to_json_line()
        try:
            out = self._file or self._open(path)
            view, written = memoryview(line), 0
            while written < len(line):  # a short write is how a filling disk begins
                n = out.write(view[written:])
                if not n:
                    raise OSError(errno.EIO, "the write wrote nothing")
                written += n
        except OSError as exc:
            self._cut_back()
            write_failed(self.crawler, path, exc)
            raise DropItem(f"row {item.row} not written: {describe(exc)}", "DEBUG") from None
        self._size += len(line)
        return item

    def _cut_back(self) -> None:
        """Remove the part of a line a failed write left (truncating needs no room)."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._file.fileno(), self._size)

    def close_spider(self) -> None:
        if self._file is not None:
            try:
                os.fsync(self._file.fileno())
            except OSError as exc:
                path = runtime(self.crawler).results_path
                if path is not None:
                    write_failed(self.crawler, path, exc)
            finally:
                self._file.close()
                self._file = None
