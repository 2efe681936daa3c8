"""A workbook's shared-string table (:mod:`urlcheck.input.xlsxfile`), kept where it costs
least: a list while it is small, else UTF-8 in a temporary file read back by offset through a
few cached blocks, so that a million distinct URLs stay out of memory."""

from __future__ import annotations

import os
import tempfile
from array import array
from typing import IO

__all__ = ["SharedStrings"]

_IN_MEMORY_STRINGS = 4 << 20  # a shared-string table up to this size stays in memory
_BLOCK_BITS = 18
_BLOCK = 1 << _BLOCK_BITS  # the shared strings are read back 256 KiB at a time
_BLOCKS = 16  # blocks kept: 4 MiB


class SharedStrings:
    """The shared-string table: a list when small, else UTF-8 in a temporary file read back by
    offset, through a few cached blocks (a million distinct URLs stay out of memory; Excel
    numbers strings as they first appear, so a sheet read in order reads the file in order)."""

    def __init__(self) -> None:
        self._list: list[str] | None = []
        self._file: IO[bytes] | None = None
        self._offsets = array("q", [0])
        self._size = 0
        self._blocks: dict[int, str | bytes] = {}

    def add(self, text: str) -> None:
        if self._list is not None:
            self._list.append(text)
            self._size += len(text)
            if self._size > _IN_MEMORY_STRINGS:
                self._to_file()
            return
        assert self._file is not None
        data = text.encode("utf-8", "surrogatepass")
        self._file.write(data)
        self._offsets.append(self._offsets[-1] + len(data))

    def extend(self, texts: list[str]) -> None:
        """``add`` for each of ``texts``, written to the file at once."""
        if self._list is not None:
            for text in texts:
                self.add(text)
            return
        assert self._file is not None
        offsets = self._offsets
        end = offsets[-1]
        joined = "".join(texts)
        if joined.isascii():
            for text in texts:
                end += len(text)
                offsets.append(end)
            self._file.write(joined.encode("ascii"))
            return
        for text in texts:
            end += len(text.encode("utf-8", "surrogatepass"))
            offsets.append(end)
        self._file.write(joined.encode("utf-8", "surrogatepass"))

    def _to_file(self) -> None:
        assert self._list is not None
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (gone once closed)
        strings, self._list = self._list, None
        for text in strings:
            self.add(text)

    def done(self) -> None:
        if self._file is not None:
            self._file.flush()

    def get(self, index: int) -> str:
        strings = self._list
        if strings is not None:
            try:
                return strings[index]
            except IndexError:
                return ""
        offsets = self._offsets
        try:
            start, end = offsets[index], offsets[index + 1]
        except IndexError:
            return ""
        block = start >> _BLOCK_BITS
        base = block << _BLOCK_BITS
        if end - base <= _BLOCK:
            data = self._blocks.get(block)
            if data is None:
                data = self._read_block(block)
            if isinstance(data, str):  # an ASCII block, decoded once: offsets are indexes
                return data[start - base : end - base]
            return data[start - base : end - base].decode("utf-8", "surrogatepass")
        assert self._file is not None
        return os.pread(self._file.fileno(), end - start, start).decode("utf-8", "surrogatepass")

    def _read_block(self, block: int) -> str | bytes:
        assert self._file is not None
        blocks = self._blocks
        if len(blocks) >= _BLOCKS:
            del blocks[next(iter(blocks))]  # the oldest
        data = os.pread(self._file.fileno(), _BLOCK, block << _BLOCK_BITS)
        blocks[block] = found = data.decode("ascii") if data.isascii() else data
        return found

    def close(self) -> None:
        self._blocks.clear()
        if self._file is not None:
            self._file.close()
            self._file = None

    def __del__(self) -> None:
        self.close()
