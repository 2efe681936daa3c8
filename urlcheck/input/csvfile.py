"""The CSV reader: sniffs a spreadsheet export once, then streams its rows with byte offsets.

Every record carries the byte offset where it starts, so the feeder can index a million rows in
compact arrays and come back for any one of them later with ``read_at`` (rows are fed host by
host, not in file order). The guesses about the file are :mod:`urlcheck.input.sniff`'s, its
physical lines :mod:`urlcheck.input.lines`'; here the lines become records: only lines
containing a quote go through the ``csv`` module, because a quoted field may span several lines.
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import os
from collections.abc import Callable, Generator, Iterator
from itertools import accumulate, compress, islice, repeat
from pathlib import Path
from typing import TypeVar

from urlcheck.input.errors import InputError
from urlcheck.input.files import ReopenedInput, open_input, read_head
from urlcheck.input.lines import CHUNK, MAX_LINE, UNREAD, Feed, Lines, physical_lines
from urlcheck.input.record import TOO_LONG, Record
from urlcheck.input.sniff import (
    EXPECTED_NAMES,
    SAMPLE_BYTES,
    SAMPLE_LINES,
    URL_NAMES,
    WHITESPACE,
    check_text,
    find,
    header_names,
    is_header,
    line_decoder,
    name_key,
    sniff_delimiter,
    sniff_encoding,
    spaces_before_quotes,
    transcoded,
)

logger = logging.getLogger(__name__)

__all__ = ["CsvSource", "InputError", "Record", "sha256_file"]

_HEADER_SAMPLE_ROWS = 50
_FIRST_READ = 4096  # read_at starts small: it is called once per row, at random places
# csv's default limit (128 Ki characters) rejects a long cell; a cell may be as long as a line.
_FIELD_LIMIT = MAX_LINE
_QUOTE = b'"'

T = TypeVar("T")
_Build = Callable[[int, int, list[str], "str | None"], T]


def too_long(size: int) -> str:
    return f"{TOO_LONG} ({size} bytes, at most {MAX_LINE}): not read"


def sha256_file(path: Path) -> str:
    """SHA-256 (hex) of a file's bytes, read in chunks: an input's identity, which a job keeps
    to know its CSV again."""
    with path.open("rb") as f:
        return _sha256(f)


def _sha256(f: io.BufferedReader) -> str:
    return hashlib.file_digest(f, "sha256").hexdigest()


class CsvSource(ReopenedInput):
    """One CSV file of URLs: sniffed on construction, then streamed with ``records()``."""

    kind = "csv"
    path: Path
    encoding: str
    delimiter: str
    has_header: bool
    header: list[str]
    url_column: str | int
    expected_column: str | None

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._name = os.fspath(path)
        self._handle: io.BufferedReader | None = None
        if csv.field_size_limit() < _FIELD_LIMIT:
            csv.field_size_limit(_FIELD_LIMIT)
        head = self._read_head()
        self.encoding, self._start = sniff_encoding(head, self._name)
        self._codec = transcoded(self.encoding)
        self._decode = line_decoder(self.encoding)
        sample = self._sample_lines()
        if not any(line.strip(WHITESPACE) for line in sample):
            raise InputError(f"{self._name}: the file is empty")
        check_text(sample, self.encoding, self._name)
        self.delimiter, width = sniff_delimiter(sample, prefer_tab=bool(self._codec))
        self._skipinitialspace = spaces_before_quotes(sample, self.delimiter)
        self._blank_bytes = (WHITESPACE + self.delimiter).encode("ascii")
        with self._open() as f:
            head_records = list(
                islice(
                    self._scan(
                        f, self._start, 0, skip=None, build=_cells_at, first_read=CHUNK, warn=False
                    ),
                    _HEADER_SAMPLE_ROWS,
                )
            )
        if not head_records:
            raise InputError(f"{self._name}: the file has no rows, only blank lines")
        first = [cell.strip(WHITESPACE + "\ufeff") for cell in head_records[0][1]]
        # (a first line over the limit has no cells: a data row that can't be read)
        self.has_header = bool(first) and is_header(first, [cells for _, cells in head_records[1:]])
        if self.has_header:
            if len(head_records) < 2:
                raise InputError(f"{self._name}: the file has a header but no data rows")
            self._data_offset = head_records[1][0]
            self._set_columns(first)
        else:
            self._data_offset = head_records[0][0]
            self._set_headerless_columns(width)

    def __repr__(self) -> str:
        return (
            f"CsvSource({self._name!r}, encoding={self.encoding!r}, "
            f"delimiter={self.delimiter!r}, has_header={self.has_header})"
        )

    # --- public -----------------------------------------------------------------------------------

    def records(
        self, skip: Callable[[int], bool] | None = None, *, skip_flags: bytes | None = None
    ) -> Iterator[Record]:
        """Yield the data rows in file order, streaming.

        ``skip(row)`` returning true means: count that row but don't build its Record (resume).
        ``skip_flags``, instead: row ``r`` is skipped when ``skip_flags[r]`` is 1 (rows past its
        end are not); whole chunks of unquoted lines are then skipped without a loop per line.
        """
        with self._open() as f:
            if skip_flags is not None:
                offset, row = self._data_offset, 0
                if not self._codec:
                    offset, row = yield from self._skip_unquoted(f, skip_flags)
                flags, size = skip_flags, len(skip_flags)
                skip = lambda r: r < size and flags[r] == 1  # noqa: E731
            else:
                offset, row = self._data_offset, 0
            yield from self._scan(
                f, offset, row, skip=skip, build=self._build, first_read=CHUNK, warn=True
            )

    def urls(self) -> Iterator[str]:
        """Each data row's URL cell in file order (``""`` for a row that can't be read), without
        building records: half the cost of :meth:`records` when the URL is all that is needed."""
        index = self._url_index

        def url_of(row: int, offset: int, cells: list[str], problem: str | None) -> str:
            return cells[index] if index < len(cells) else ""

        with self._open() as f:
            yield from self._scan(
                f, self._data_offset, 0, skip=None, build=url_of, first_read=CHUNK, warn=False
            )

    def _skip_unquoted(
        self, f: io.BufferedReader, flags: bytes
    ) -> Generator[Record, None, tuple[int, int]]:
        """The records of the rows ``flags`` doesn't skip, from the data's start on, a chunk
        of whole lines at a time while the chunks hold no quote; returns where the per-line
        scan goes on: the offset of the first chunk with a quote (or of an unfinished last
        line), and the rows counted before it.

        Each line of such a chunk is a record unless it is blank (the per-line scan's rules),
        so the rows to read are found by slicing: no Python loop over the rows skipped.
        """
        offset, row = self._data_offset, 0
        size = len(flags)
        blank, decode, delimiter = self._blank_bytes, self._decode, self.delimiter
        strip_initial = self._skipinitialspace
        f.seek(offset)
        carry = b""
        while row < size:
            chunk = f.read(CHUNK)
            buf = carry + chunk if carry else chunk
            cut = buf.rfind(b"\n") + 1
            if not chunk or not cut or _QUOTE in buf[:cut]:
                break  # the end, a line longer than a chunk, or a quote: line by line
            body, carry = buf[:cut], buf[cut:]
            lines = body.splitlines(keepends=True)
            starts = list(accumulate(map(len, lines), initial=offset))
            kept = list(compress(range(len(lines)), map(bytes.strip, lines, repeat(blank))))
            first = row + 1  # the row of lines[kept[0]]
            end = min(row + len(kept) + 1, size)
            at = flags.find(0, first, end)
            while at >= 0:
                i = kept[at - first]
                cells = decode(lines[i]).rstrip("\r\n").split(delimiter)
                if strip_initial:
                    cells = [cell.lstrip(" ") for cell in cells]
                yield self._build(at, starts[i], cells, None)
                at = flags.find(0, at + 1, end)
            for r in range(end, row + len(kept) + 1):  # past the flags: none skipped
                i = kept[r - first]
                cells = decode(lines[i]).rstrip("\r\n").split(delimiter)
                if strip_initial:
                    cells = [cell.lstrip(" ") for cell in cells]
                yield self._build(r, starts[i], cells, None)
            row += len(kept)
            offset += len(body)
        return offset, row

    def read_at(self, offset: int, row: int) -> Record:
        """Parse the one record starting at ``offset`` (an offset ``records()`` gave)."""
        if self._handle is None:
            self._handle = self._open()
        if offset >= self._data_offset and self._line_starts_at(self._handle, offset):
            found = next(
                self._scan(
                    self._handle,
                    offset,
                    row - 1,
                    skip=None,
                    build=self._build,
                    first_read=_FIRST_READ,
                    warn=False,
                ),
                None,
            )
            if found is not None and found.offset == offset:
                return found
        raise InputError(
            f"{self._name}: no row starts at byte {offset}; has the file changed since it was read?"
        )

    def _line_starts_at(self, f: io.BufferedReader, offset: int) -> bool:
        if offset == self._start:
            return True
        unit = 2 if self._codec else 1
        f.seek(offset - unit)
        before = f.read(unit).decode(self._codec or "latin-1", "replace")
        return before in ("\n", "\r")

    def checksum(self) -> str:
        """SHA-256 (hex) of the file's bytes, read in chunks (see :func:`sha256_file`)."""
        with self._open() as f:
            return _sha256(f)

    # --- reading the head -------------------------------------------------------------------------

    def _open(self) -> io.BufferedReader:
        return open_input(self.path, self._name)

    def _read_head(self) -> bytes:
        return read_head(self.path, self._name)

    def _sample_lines(self) -> list[str]:
        lines: list[str] = []
        size = 0
        with self._open() as f:
            for n, raw in self._lines(f, self._start, SAMPLE_BYTES):
                lines.append(self._decode(raw))
                size += n
                if size >= SAMPLE_BYTES or len(lines) >= SAMPLE_LINES:
                    break
        return lines

    # --- columns ----------------------------------------------------------------------------------

    def _set_columns(self, first: list[str]) -> None:
        names = header_names(first)
        keys = [name_key(cell) for cell in first]
        url_index = find(keys, URL_NAMES)
        self._url_index = 0 if url_index is None else url_index
        self._expected_index = find(keys, EXPECTED_NAMES)
        self.header = names
        self.url_column = names[self._url_index]
        self.expected_column = None if self._expected_index is None else names[self._expected_index]
        self._width = len(names)
        self._extras = [
            (i, name)
            for i, name in enumerate(names)
            if i not in (self._url_index, self._expected_index)
        ]
        self._build = record_builder(
            self._url_index, self._expected_index, self._extras, self._width
        )

    def _set_headerless_columns(self, width: int) -> None:
        self.header = []
        self.url_column = 0
        self.expected_column = None
        self._url_index = 0
        self._expected_index = None
        self._width = max(width, 1)
        self._extras = [(i, f"col{i + 1}") for i in range(1, self._width)]
        self._build = record_builder(0, None, self._extras, self._width)

    # --- scanning ---------------------------------------------------------------------------------

    def _lines(self, f: io.BufferedReader, offset: int, first_read: int) -> Lines:
        return physical_lines(f, offset, first_read, self._codec, self._name)

    def _scan(
        self,
        f: io.BufferedReader,
        offset: int,
        row: int,
        *,
        skip: Callable[[int], bool] | None,
        build: _Build[T],
        first_read: int,
        warn: bool,
    ) -> Iterator[T]:
        """Records from ``offset`` on, numbered after ``row``, each built by ``build``.

        A line without a quote is a whole record, split here; a line with one goes to the csv
        module with the lines that follow. The csv module runs strict, so that a quote left
        open stops at the first line that doesn't fit (a lenient reader would run on to the end
        of the file). A malformed record is read from its first line alone, leniently, and
        scanning goes on from the next line: one bad row never swallows the rows after it.
        """
        delimiter = self.delimiter
        strip_initial = self._skipinitialspace
        blank = self._blank_bytes
        decode = self._decode
        while True:
            lines = self._lines(f, offset, first_read)
            # One reader per pass: the feed hands it each quoted record's first line, then
            # the following lines while a quoted field stays open.
            feed = Feed(lines, decode)
            reader = csv.reader(
                feed,
                delimiter=delimiter,
                quotechar='"',
                doublequote=True,
                skipinitialspace=strip_initial,
                strict=True,
            )
            restart = False
            for size, raw in lines:
                start = offset
                offset += size
                if _QUOTE not in raw:
                    if not raw.strip(blank):
                        if raw is not UNREAD:
                            continue
                        row += 1  # a line over the limit: a row all the same, without cells
                        if skip is None or not skip(row):
                            unread = too_long(size)
                            if warn:
                                logger.warning(
                                    "%s: row %d (byte %d): %s", self._name, row, start, unread
                                )
                            yield build(row, start, [], unread)
                        continue
                    row += 1
                    if skip is not None and skip(row):
                        continue
                    cells = decode(raw).rstrip("\r\n").split(delimiter)
                    if strip_initial:
                        cells = [cell.lstrip(" ") for cell in cells]
                    yield build(row, start, cells, None)
                    continue
                feed.pending = decode(raw)
                feed.offset = offset
                problem = None
                try:
                    cells = next(reader, [])
                except csv.Error as exc:
                    if feed.offset == offset and not feed.eof:
                        # A quirk within one line, such as "a"b: read that line leniently.
                        cells = self._salvage(decode(raw))
                    else:
                        problem = _problem(str(exc))
                if feed.eof:
                    problem = _UNCLOSED
                if problem is None:
                    offset = feed.offset
                else:
                    cells = self._salvage(decode(raw))
                    offset = start + size
                    restart = True
                if any(cell.strip(WHITESPACE) for cell in cells):
                    row += 1
                    if skip is None or not skip(row):
                        if problem is not None and warn:
                            logger.warning(
                                "%s: row %d (byte %d): %s", self._name, row, start, problem
                            )
                        yield build(row, start, cells, problem)
                if restart:
                    break
            if not restart:
                return

    def _salvage(self, line: str) -> list[str]:
        line = line.rstrip("\r\n")
        try:
            return next(
                csv.reader(
                    [line],
                    delimiter=self.delimiter,
                    quotechar='"',
                    doublequote=True,
                    skipinitialspace=self._skipinitialspace,
                    strict=False,
                ),
                [],
            )
        except csv.Error:
            return line.split(self.delimiter)


_UNCLOSED = "a quoted field is never closed; read from its first line only"


def _problem(csv_error: str) -> str:
    if "field limit" in csv_error:
        return "a field is over the size limit; read from its first line only"
    return _UNCLOSED  # a quote closed in the wrong place: it was opened by mistake


# A frozen dataclass sets each field through object.__setattr__: measured at 1.35 s per million
# records, a third of a full pass. Setting the slots directly gives the same object in 0.46 s.
_new_record = object.__new__
_RECORD_SLOTS = tuple(
    Record.__dict__[name].__set__
    for name in ("row", "offset", "url", "expected", "extra", "problem")
)


def record_builder(
    url_index: int, expected_index: int | None, extras: list[tuple[int, str]], width: int
) -> Callable[[int, int, list[str], str | None], Record]:
    set_row, set_offset, set_url, set_expected, set_extra, set_problem = _RECORD_SLOTS
    columns = tuple(extras)
    ei = -1 if expected_index is None else expected_index

    def build(row: int, offset: int, cells: list[str], problem: str | None) -> Record:
        n = len(cells)
        if n == width:
            url = cells[url_index]
            expected = cells[ei] if ei >= 0 else None
            extra = {key: cells[i] for i, key in columns} if columns else {}
        else:
            url = cells[url_index] if url_index < n else ""
            expected = cells[ei] if 0 <= ei < n else None
            extra = {key: cells[i] if i < n else "" for i, key in columns}
            # Cells past the header are mostly stray trailing delimiters: keep only real ones.
            for i in range(width, n):
                if cells[i].strip(WHITESPACE):
                    extra.setdefault(f"col{i + 1}", cells[i])
        if expected is not None and not expected.strip(WHITESPACE):
            expected = None
        record: Record = _new_record(Record)
        set_row(record, row)
        set_offset(record, offset)
        set_url(record, url)
        set_expected(record, expected)
        set_extra(record, extra)
        set_problem(record, problem)
        return record

    return build


def _cells_at(
    row: int, offset: int, cells: list[str], problem: str | None
) -> tuple[int, list[str]]:
    return offset, cells
