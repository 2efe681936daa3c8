"""A plain list of URLs: one a line, ``#`` starts a comment line, blank lines are skipped.

A record's row is its line number in the file (comments and blank lines counted), its offset the
byte where the line starts. Encodings are the CSV reader's
(:func:`~urlcheck.input.sniff.sniff_encoding`).
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Callable, Generator
from contextlib import closing
from pathlib import Path

from urlcheck.input.csvfile import too_long
from urlcheck.input.errors import InputError
from urlcheck.input.files import ReopenedInput, open_input, read_head
from urlcheck.input.lines import CHUNK, UNREAD, physical_lines
from urlcheck.input.record import Record
from urlcheck.input.sniff import WHITESPACE, line_decoder, sniff_encoding, transcoded

logger = logging.getLogger(__name__)

_FIRST_READ = 4096
_STRIP = WHITESPACE + "\ufeff"


def list_entry(line: str) -> str | None:
    """The URL a list's line holds, or None for a blank or comment line."""
    text = line.strip(_STRIP)
    return text if text and not text.startswith("#") else None


class ListSource(ReopenedInput):
    """One list of URLs: ``records()`` streams it, ``read_at`` reads one line again."""

    kind = "list"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._name = os.fspath(path)
        self._handle: io.BufferedReader | None = None
        head = read_head(self.path, self._name)
        self.encoding, self._start = sniff_encoding(head, self._name)
        self._codec = transcoded(self.encoding)
        self._decode = line_decoder(self.encoding)
        with closing(self.records()) as records:
            first = next(records, None)
        if first is None:
            raise InputError(f"{self._name}: the list holds no URL, only blank or # lines")

    def __repr__(self) -> str:
        return f"ListSource({self._name!r}, encoding={self.encoding!r})"

    def records(self, skip: Callable[[int], bool] | None = None) -> Generator[Record]:
        decode = self._decode
        with open_input(self.path, self._name) as f:
            offset = self._start
            line = 0
            for size, raw in physical_lines(f, offset, CHUNK, self._codec, self._name):
                start = offset
                offset += size
                line += 1
                if skip is not None and skip(line):
                    continue
                if raw is UNREAD:  # over the line limit: a row all the same, as in a CSV
                    logger.warning(
                        "%s: line %d (byte %d): %s", self._name, line, start, too_long(size)
                    )
                    yield _unread(line, start, size)
                    continue
                url = list_entry(decode(raw))
                if url is not None:
                    yield Record(line, start, url, None, {})

    def read_at(self, offset: int, row: int) -> Record:
        if self._handle is None:
            self._handle = open_input(self.path, self._name)
        if offset >= self._start:
            lines = physical_lines(self._handle, offset, _FIRST_READ, self._codec, self._name)
            found = next(lines, None)
            if found is not None and found[1] is UNREAD and self._line_starts_at(offset):
                return _unread(row, offset, found[0])
            url = None if found is None else list_entry(self._decode(found[1]))
            if url is not None and self._line_starts_at(offset):
                return Record(row, offset, url, None, {})
        raise InputError(
            f"{self._name}: no URL starts at byte {offset}; has the file changed since it was read?"
        )

    def _line_starts_at(self, offset: int) -> bool:
        if offset == self._start:
            return True
        assert self._handle is not None
        unit = 2 if self._codec else 1
        self._handle.seek(offset - unit)
        before = self._handle.read(unit).decode(self._codec or "latin-1", "replace")
        return before in ("\n", "\r")


def _unread(row: int, offset: int, size: int) -> Record:
    """A line over the limit: no URL read, its row's result an ``invalid_row`` line."""
    return Record(row, offset, "", None, {}, too_long(size))
