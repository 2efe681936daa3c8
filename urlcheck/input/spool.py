"""Rows of an input that cannot be read again at a byte offset (a sitemap, a workbook, a
decompressed stream), kept in a temporary file while the crawl needs them.

The streaming pass appends each row's cells as one line and its record's offset is that line's;
``read_at`` reads the line back. A line is ``=`` and the cells joined by tabs, or, when a cell
holds a tab or a line feed, the cells as JSON (measured: the tab line costs half of the JSON
one, and nearly every row takes it). Only rows the pass yields are written (a resume's done
rows are not), so the file holds what is left to check, on disk rather than in memory.
"""

from __future__ import annotations

import json
import tempfile
from typing import IO

_dumps = json.JSONEncoder(separators=(",", ":")).encode  # ASCII: lone surrogates survive
_loads = json.loads


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


class Spool:
    __slots__ = ("_file", "_pending", "_size")

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (gone once closed)
        self._pending: list[str] = []  # written 512 lines at a time
        self._size = 0

    def reset(self) -> None:
        """Start over (a new streaming pass): earlier offsets are no longer valid."""
        self._pending.clear()
        self._file.seek(0)
        self._file.truncate()
        self._size = 0

    def add(self, cells: list[str]) -> int:
        """Keep ``cells``; returns the offset to read them back at."""
        line = "\t".join(cells)
        plain = "\n" not in line and line.count("\t") == len(cells) - 1
        line = f"={line}" if plain else _dumps(cells)  # JSON: ASCII
        # add_line, inlined (a million calls)
        offset = self._size
        self._size = offset + (len(line) if line.isascii() else len(_utf8(line))) + 1
        pending = self._pending
        pending.append(line)
        if len(pending) >= 512:
            self._flush()
        return offset

    def add_line(self, line: str) -> int:
        """Keep a line :meth:`add` would make (for a reader that makes it faster itself)."""
        offset = self._size
        # the size in bytes: an ASCII line (nearly all) is as long as its text
        self._size = offset + (len(line) if line.isascii() else len(_utf8(line))) + 1
        pending = self._pending
        pending.append(line)
        if len(pending) >= 512:
            self._flush()
        return offset

    def _flush(self) -> None:
        self._file.seek(0, 2)
        self._file.write(_utf8("\n".join(self._pending) + "\n"))
        self._pending.clear()

    def get(self, offset: int) -> list[str] | None:
        """The cells kept at ``offset``, or None when no row starts there."""
        if self._pending:
            self._flush()
            self._file.flush()
        if not 0 <= offset < self._size:
            return None
        if offset:
            self._file.seek(offset - 1)
            if self._file.read(1) != b"\n":
                return None
        self._file.seek(offset)
        line = self._file.readline()
        if line.startswith(b"="):
            return line[1:-1].decode("utf-8", "surrogatepass").split("\t")
        cells = _loads(line)
        return cells if isinstance(cells, list) else None

    def close(self) -> None:
        self._pending.clear()
        self._file.close()

    def __del__(self) -> None:
        # a reader dropped without close(): its spool goes with it, without a ResourceWarning
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()
