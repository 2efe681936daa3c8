"""Which rows were fed to the crawl and which have their line: the proof that no row was dropped.

Scrapy components may drop a request without an answer (a spider middleware filtering the
callback's output, a downloader middleware's ``IgnoreRequest`` lost on the way, a callback that
raises). urlcheck turns each known case into a line with a clear error; this ledger is the net
under all of them. The spider marks each row *fed* when it hands out its first request and
*open* until its line is built; the line is *written* when the item reaches the end of the
pipelines. Rows still open when nothing is left in the crawl were dropped by something; at the
end, a row fed without a written line is a gap, reported loudly.

One bit per row for fed and written (a million rows cost 250 KB) and the open rows' tasks (at
most ``URLCHECK_ROWS_AHEAD``).
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class _Bits:
    def __init__(self) -> None:
        self._bits = bytearray()

    def add(self, n: int) -> None:
        byte = n >> 3
        if byte >= len(self._bits):
            self._bits.extend(bytes(byte + 1 - len(self._bits) + 1024))
        self._bits[byte] |= 1 << (n & 7)

    def __contains__(self, n: int) -> bool:
        byte = n >> 3
        return byte < len(self._bits) and bool(self._bits[byte] & (1 << (n & 7)))


class RowLedger(Generic[T]):
    def __init__(self) -> None:
        self._fed = _Bits()
        self._written = _Bits()
        self._open: dict[int, T] = {}
        self.fed_count = 0
        self.written_count = 0
        self._highest = 0

    def fed(self, row: int, task: T | None = None) -> None:
        """Row ``row`` has been handed to the crawl; ``task`` is kept until it is finished."""
        if row not in self._fed:
            self._fed.add(row)
            self.fed_count += 1
            self._highest = max(self._highest, row)
        if task is not None:
            self._open[row] = task

    def finished(self, row: int) -> None:
        """Row ``row`` has its line (on its way to the pipelines)."""
        self._open.pop(row, None)

    def written(self, row: int) -> None:
        """Row ``row``'s line went through every pipeline."""
        if row in self._fed and row not in self._written:
            self._written.add(row)
            self.written_count += 1

    def has_open(self) -> bool:
        return bool(self._open)

    def open_tasks(self) -> dict[int, T]:
        return dict(self._open)

    def missing(self, limit: int = 20) -> tuple[int, list[int]]:
        """How many rows were fed without a written line, and the first ``limit`` of them."""
        count = self.fed_count - self.written_count
        first: list[int] = []
        if count:
            for row in range(self._highest + 1):
                if row in self._fed and row not in self._written:
                    first.append(row)
                    if len(first) >= limit:
                        break
        return count, first
