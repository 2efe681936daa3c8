"""The CSV reader: sniffs a spreadsheet export once, then streams its rows with byte offsets.

Every record carries the byte offset where it starts, so the feeder can index a million rows in
compact arrays and come back for any one of them later with ``read_at`` (rows are fed host by
host, not in file order). The file is never loaded whole: it is read in chunks and split into
physical lines; only lines containing a quote go through the ``csv`` module, because a quoted
field may span several lines.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TypeVar

logger = logging.getLogger(__name__)

__all__ = ["CsvSource", "InputError", "Record"]

URL_NAMES = ("url", "address", "source", "from", "old", "old_url")
EXPECTED_NAMES = ("expected", "target", "to", "destination", "new", "new_url", "redirect")
DELIMITERS = (",", ";", "\t", "|")

_SAMPLE_BYTES = 64 * 1024  # what the encoding and delimiter are guessed from
_SAMPLE_LINES = 500
_HEADER_SAMPLE_ROWS = 50
_CHUNK = 256 * 1024  # read size of a full pass
_FIRST_READ = 4096  # read_at starts small: it is called once per row, at random places
# csv's default limit (128 Ki characters) rejects a long cell; no limit at all would let one
# unterminated quote pull a whole file into memory. Physical lines are capped the same way.
_FIELD_LIMIT = 32 * 1024 * 1024
_MAX_LINE = 32 * 1024 * 1024

_WHITESPACE = " \t\r\n\x0b\x0c"
_QUOTE = b'"'
_BOMS_UTF32 = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
_MAGIC = (
    (b"PK\x03\x04", "a ZIP archive (an .xlsx or .ods workbook?)"),
    (b"\xd0\xcf\x11\xe0", "an old Excel .xls workbook"),
    (b"\x89PNG", "a PNG image"),
    (b"GIF8", "a GIF image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"%PDF", "a PDF document"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
)
# C0 controls other than tab, LF, VT, FF, CR and the DOS end-of-file mark (0x1A).
_CONTROL_BYTES = bytes([*range(1, 9), 0x0E, 0x0F, *range(0x10, 0x1A), *range(0x1B, 0x20)])
_CONTROL_CHARS = re.compile("[\x00-\x08\x0e-\x19\x1b-\x1f]")
_SPACES_THEN_QUOTE = re.compile(' +"')
_NAME_SEPARATORS = re.compile(r"[\s\-]+")
_LOOKS_LIKE_URL = re.compile(
    r"""\s*(?:
        [a-z][a-z0-9+.\-]*://                                # scheme://
        | (?:mailto|javascript|data|tel|file):               # schemes without //
        | //                                                 # protocol-relative
        | (?:[^\W_][\w\-]*\.)+[^\W\d_][\w\-]+\.?(?::\d+)?(?:[/?\#]|\s*$)   # host.tld[/...]
        | \d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:[/?\#]|\s*$)   # IPv4
    )""",
    re.IGNORECASE | re.VERBOSE,
)

T = TypeVar("T")
_Build = Callable[[int, int, list[str], "str | None"], T]


def _latin1_for_undefined(exc: UnicodeError) -> tuple[str, int]:
    # cp1252 leaves 0x81, 0x8D, 0x8F, 0x90, 0x9D undefined; latin-1 (as browsers do) maps them.
    assert isinstance(exc, UnicodeDecodeError)
    return exc.object[exc.start : exc.end].decode("latin-1"), exc.end


codecs.register_error("urlcheck-latin1", _latin1_for_undefined)


def _decode_8bit(raw: bytes) -> str:
    # Line by line, so a file that is UTF-8 except for a few pasted cp1252 lines reads right.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "urlcheck-latin1")


def _decode_transcoded(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogatepass")


class InputError(Exception):
    """The input file cannot be used; the message names the file and the problem."""


@dataclass(frozen=True, slots=True)
class Record:
    row: int  # 1-based data row number (header and blank lines not counted)
    offset: int  # byte offset in the file where the record starts (for read_at)
    url: str  # raw cell of the URL column
    expected: str | None  # raw cell of the expected-target column; None if no column or empty
    extra: dict[str, str]  # every other column by header name (header-less: col2, col3, ...)
    problem: str | None = None  # set when the row was malformed CSV and was read leniently


class CsvSource:
    """One CSV file of URLs: sniffed on construction, then streamed with ``records()``."""

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
        self.encoding, self._start = self._sniff_encoding(head)
        if self.encoding.startswith("utf-16"):
            self._codec = self.encoding
            self._decode: Callable[[bytes], str] = _decode_transcoded
        else:
            self._codec = ""
            self._decode = _decode_8bit
        sample = self._sample_lines()
        if not any(line.strip(_WHITESPACE) for line in sample):
            raise InputError(f"{self._name}: the file is empty")
        self._check_text(sample)
        self.delimiter, width = _sniff_delimiter(sample, prefer_tab=bool(self._codec))
        self._skipinitialspace = _spaces_before_quotes(sample, self.delimiter)
        self._blank_bytes = (_WHITESPACE + self.delimiter).encode("ascii")
        with self._open() as f:
            head_records = list(
                islice(
                    self._scan(
                        f, self._start, 0, skip=None, build=_cells_at, first_read=_CHUNK, warn=False
                    ),
                    _HEADER_SAMPLE_ROWS,
                )
            )
        if not head_records:
            raise InputError(f"{self._name}: the file has no rows, only blank lines")
        first = [cell.strip(_WHITESPACE + "\ufeff") for cell in head_records[0][1]]
        self.has_header = _is_header(first, [cells for _, cells in head_records[1:]])
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

    def records(self, skip: Callable[[int], bool] | None = None) -> Iterator[Record]:
        """Yield the data rows in file order, streaming.

        ``skip(row)`` returning true means: count that row but don't build its Record (resume).
        """
        with self._open() as f:
            yield from self._scan(
                f, self._data_offset, 0, skip=skip, build=self._build, first_read=_CHUNK, warn=True
            )

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
        """SHA-256 (hex) of the file's bytes, read in chunks."""
        with self._open() as f:
            return hashlib.file_digest(f, "sha256").hexdigest()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> CsvSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        # read_at keeps one handle open across calls; never leave it to a ResourceWarning.
        handle = getattr(self, "_handle", None)
        if handle is not None:
            handle.close()

    # --- sniffing ---------------------------------------------------------------------------------

    def _open(self) -> io.BufferedReader:
        try:
            return self.path.open("rb")
        except FileNotFoundError:
            raise InputError(f"{self._name}: no such file") from None
        except IsADirectoryError:
            raise InputError(f"{self._name}: is a directory, not a CSV file") from None
        except PermissionError:
            if _is_dir(self.path):  # what Windows says for a directory
                raise InputError(f"{self._name}: is a directory, not a CSV file") from None
            raise InputError(f"{self._name}: permission denied") from None
        except OSError as exc:
            raise InputError(f"{self._name}: cannot open the file ({exc.strerror})") from None

    def _read_head(self) -> bytes:
        with self._open() as f:
            try:
                head = f.read(_SAMPLE_BYTES)
            except OSError as exc:
                raise InputError(f"{self._name}: cannot read the file ({exc.strerror})") from None
        if not head:
            raise InputError(f"{self._name}: the file is empty")
        return head

    def _sniff_encoding(self, head: bytes) -> tuple[str, int]:
        """Return (encoding, byte offset after the byte-order mark)."""
        if head.startswith(_BOMS_UTF32):
            raise self._unsupported("UTF-32 text")
        if head.startswith(codecs.BOM_UTF8):
            self._reject_binary(head[3:])
            return "utf-8-sig", 3
        for bom, name in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
            if head.startswith(bom):
                body = head[2:]
                try:
                    codecs.getincrementaldecoder(name)().decode(body, len(head) < _SAMPLE_BYTES)
                except UnicodeDecodeError as exc:
                    raise self._unsupported(
                        f"not valid UTF-16: {exc.reason} at byte {exc.start + 2}"
                    ) from None
                return name, 2
        self._reject_binary(head)
        try:
            codecs.getincrementaldecoder("utf-8")().decode(head, len(head) < _SAMPLE_BYTES)
        except UnicodeDecodeError:
            return "cp1252", 0
        return "utf-8", 0

    def _unsupported(self, what: str) -> InputError:
        return InputError(
            f"{self._name}: unreadable text encoding ({what}); save the file as UTF-8 CSV"
        )

    def _reject_binary(self, head: bytes) -> None:
        for magic, what in _MAGIC:
            if head.startswith(magic):
                raise InputError(f"{self._name}: not a CSV text file, it looks like {what}")
        if b"\x00" in head:
            # Mostly-ASCII text in UTF-32 or UTF-16 has NULs in fixed byte positions.
            quad = head[: len(head) // 4 * 4][:4096]
            s0, s1, s2, s3 = (_nul_share(quad[i::4]) for i in range(4))
            if len(quad) >= 8 and (
                (s0 < 0.1 and s2 > 0.9 and s3 > 0.9) or (s3 < 0.1 and s0 > 0.9 and s1 > 0.9)
            ):
                raise self._unsupported("UTF-32 text")
            pairs = head[: len(head) // 2 * 2][:4096]
            low, high = sorted((_nul_share(pairs[0::2]), _nul_share(pairs[1::2])))
            if len(pairs) >= 4 and low < 0.02 and high > 0.3:
                raise self._unsupported("UTF-16 without a byte-order mark")
            raise InputError(f"{self._name}: not a CSV text file, it contains binary data")
        if len(head.translate(None, _CONTROL_BYTES)) < len(head) * 0.95:
            raise InputError(f"{self._name}: not a CSV text file, it contains binary data")

    def _check_text(self, sample: list[str]) -> None:
        text = "".join(sample)[:_SAMPLE_BYTES]
        if self._codec and _CONTROL_CHARS.search(text) is not None:
            # UTF-16 that decodes to control characters was not UTF-16 to begin with.
            raise self._unsupported(f"not {self.encoding.upper()} text despite its byte-order mark")
        if self.encoding in ("utf-8", "utf-8-sig"):
            return
        visible = [c for c in text if not c.isspace()]
        in_ascii = sum(1 for c in visible if c.isascii())
        # URLs are ASCII whatever the language of the other columns. Text read in the wrong
        # encoding (EBCDIC, UTF-8 behind a UTF-16 byte-order mark) has next to no ASCII left;
        # UTF-16 may hold long CJK columns, so only single-byte text must be mostly ASCII.
        if visible and in_ascii < (0.01 if self._codec else 0.5) * len(visible):
            raise self._unsupported("not UTF-8, UTF-16 or Windows-1252 text")

    def _sample_lines(self) -> list[str]:
        lines: list[str] = []
        size = 0
        with self._open() as f:
            for n, raw in self._lines(f, self._start, _SAMPLE_BYTES):
                lines.append(self._decode(raw))
                size += n
                if size >= _SAMPLE_BYTES or len(lines) >= _SAMPLE_LINES:
                    break
        return lines

    # --- columns ----------------------------------------------------------------------------------

    def _set_columns(self, first: list[str]) -> None:
        names: list[str] = []
        seen: set[str] = set()
        for i, cell in enumerate(first):
            name = cell or f"col{i + 1}"
            k = 1
            while name in seen:
                name = f"{cell or f'col{i + 1}'}.{k}"
                k += 1
            seen.add(name)
            names.append(name)
        keys = [_name_key(cell) for cell in first]
        url_index = _find(keys, URL_NAMES)
        self._url_index = 0 if url_index is None else url_index
        self._expected_index = _find(keys, EXPECTED_NAMES)
        self.header = names
        self.url_column = names[self._url_index]
        self.expected_column = None if self._expected_index is None else names[self._expected_index]
        self._width = len(names)
        self._extras = [
            (i, name)
            for i, name in enumerate(names)
            if i not in (self._url_index, self._expected_index)
        ]
        self._build = _record_builder(
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
        self._build = _record_builder(0, None, self._extras, self._width)

    # --- scanning ---------------------------------------------------------------------------------

    def _lines(
        self, f: io.BufferedReader, offset: int, first_read: int
    ) -> Iterator[tuple[int, bytes]]:
        if self._codec:
            return _text_lines(f, offset, first_read, self._codec, self._name)
        return _byte_lines(f, offset, first_read, self._name)

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
            feed = _Feed(lines, decode)
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
                if any(cell.strip(_WHITESPACE) for cell in cells):
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


class _Feed:
    """Lines for the csv module: a quoted record's first line, then the lines after it."""

    __slots__ = ("_decode", "_lines", "eof", "offset", "pending")

    def __init__(self, lines: Iterator[tuple[int, bytes]], decode: Callable[[bytes], str]) -> None:
        self._lines = lines
        self._decode = decode
        self.pending: str | None = None
        self.offset = 0
        self.eof = False

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> str:
        line = self.pending
        if line is not None:
            self.pending = None
            return line
        try:
            size, raw = next(self._lines)
        except StopIteration:
            # The csv module only asks past the last line while a quoted field is open.
            self.eof = True
            raise
        self.offset += size
        return self._decode(raw)


# A frozen dataclass sets each field through object.__setattr__: measured at 1.35 s per million
# records, a third of a full pass. Setting the slots directly gives the same object in 0.46 s.
_new_record = object.__new__
_RECORD_SLOTS = tuple(
    Record.__dict__[name].__set__
    for name in ("row", "offset", "url", "expected", "extra", "problem")
)


def _record_builder(
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
                if cells[i].strip(_WHITESPACE):
                    extra.setdefault(f"col{i + 1}", cells[i])
        if expected is not None and not expected.strip(_WHITESPACE):
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


def _first_break(chunk: bytes) -> int:
    """Index just past the first line break in ``chunk``, or -1."""
    ends = [i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0]
    if not ends:
        return -1
    i = min(ends)
    return i + 2 if chunk[i : i + 2] == b"\r\n" else i + 1


def _skipped(name: str, size: int) -> tuple[int, bytes]:
    # A line this long is no CSV row anyone wrote; it stands in as a blank line of that size.
    logger.warning("%s: skipped a line of %d bytes (over the line limit)", name, size)
    return size, b"\n"


def _byte_lines(
    f: io.BufferedReader, offset: int, first_read: int, name: str
) -> Iterator[tuple[int, bytes]]:
    """(size, line) for each physical line of an ASCII-compatible file; CRLF, LF or CR."""
    f.seek(offset)
    read_size = first_read
    carry = b""
    pending = b""
    while True:
        chunk = pending or f.read(read_size)
        pending = b""
        read_size = min(read_size * 4, _CHUNK)
        if not chunk:
            if carry:
                yield _skipped(name, len(carry)) if len(carry) > _MAX_LINE else (len(carry), carry)
            return
        buf = carry + chunk if carry else chunk
        # bytes.splitlines breaks at \n, \r and \r\n only (str.splitlines knows many more).
        lines = buf.splitlines(keepends=True)
        carry = lines.pop()
        if carry.endswith(b"\n"):  # complete (one ending in \r may go on as \r\n)
            lines.append(carry)
            carry = b""
        if lines and max(map(len, lines)) > _MAX_LINE:
            for line in lines:
                yield _skipped(name, len(line)) if len(line) > _MAX_LINE else (len(line), line)
        else:
            yield from zip(map(len, lines), lines, strict=True)
        if len(carry) > _MAX_LINE:  # don't hold it: read on to its end
            dropped = len(carry)
            carry = b""
            while chunk := f.read(_CHUNK):
                cut = _first_break(chunk)
                if cut >= 0:
                    dropped += cut
                    pending = chunk[cut:]
                    break
                dropped += len(chunk)
            yield _skipped(name, dropped)


def _text_lines(
    f: io.BufferedReader, offset: int, first_read: int, codec: str, name: str
) -> Iterator[tuple[int, bytes]]:
    """(size in the file, line re-encoded as UTF-8) for each physical line of a UTF-16 file.

    UTF-16 cannot be split on b"\\n" (it is 0A 00 in LE, and 0A can be half of another
    character), so the file is decoded in chunks and each line is re-encoded to count its bytes.
    """
    f.seek(offset)
    decoder = codecs.getincrementaldecoder(codec)("surrogatepass")
    read_size = first_read
    carry = ""
    dropped = 0  # bytes of an over-long line whose start was not kept
    while True:
        chunk = f.read(read_size)
        read_size = min(read_size * 4, _CHUNK)
        try:
            text = decoder.decode(chunk, not chunk)
        except UnicodeDecodeError:  # a dangling odd byte at the very end
            text = ""
        if carry:
            text = carry + text
            carry = ""
        lines: list[str] = []
        if not chunk:
            if text or dropped:
                lines.append(text)
        else:
            for part in text.splitlines(keepends=True):
                # str.splitlines also breaks at \v, \f, \x1c-\x1e, \x85, \u2028, \u2029: glue.
                if part.endswith(("\n", "\r")):
                    lines.append(carry + part)
                    carry = ""
                else:
                    carry += part
        for line in lines:
            size = len(line.encode(codec, "surrogatepass")) + dropped
            if size > _MAX_LINE:
                dropped = 0
                yield _skipped(name, size)
            else:
                yield size, line.encode("utf-8", "surrogatepass")
        if not chunk:
            return
        if len(carry) * 2 > _MAX_LINE:  # at least that many bytes: don't hold it
            dropped += len(carry.encode(codec, "surrogatepass"))
            carry = ""


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _nul_share(data: bytes) -> float:
    return data.count(0) / len(data) if data else 0.0


def _name_key(cell: str) -> str:
    return _NAME_SEPARATORS.sub("_", cell.strip(_WHITESPACE + "\ufeff").lower())


def _find(keys: list[str], names: tuple[str, ...]) -> int | None:
    for i, key in enumerate(keys):
        if key in names:
            return i
    return None


def _looks_like_url(cell: str) -> bool:
    return _LOOKS_LIKE_URL.match(cell) is not None


def _is_header(first: list[str], rows: list[list[str]]) -> bool:
    """Whether the first record names the columns rather than holding a URL."""
    keys = [_name_key(cell) for cell in first]
    url_index = _find(keys, URL_NAMES)
    if url_index is not None or _find(keys, EXPECTED_NAMES) is not None:
        # A known name where a URL would be is a header; "https://a/,new" is a data row.
        return not _looks_like_url(first[url_index or 0])
    if _looks_like_url(first[0]):
        return False
    # Unknown names: a header if the first column holds URLs below its first cell.
    votes = [_looks_like_url(cells[0]) for cells in rows if cells]
    return bool(votes) and 2 * sum(votes) > len(votes)


def _spaces_before_quotes(lines: list[str], delimiter: str) -> bool:
    """Whether quoted cells follow the delimiter after a space, as in ``a, "b,c"``."""
    # Only hand-written files do this: a CSV writer quotes any cell holding a quote, so an
    # unquoted cell never starts with spaces and a quote otherwise.
    try:
        for cells in csv.reader(lines, delimiter=delimiter, quotechar='"', strict=False):
            if any(_SPACES_THEN_QUOTE.match(cell) for cell in cells):
                return True
    except csv.Error:
        pass
    return False


def _sniff_delimiter(lines: list[str], *, prefer_tab: bool) -> tuple[str, int]:
    """The delimiter and the usual number of cells per row in the sample."""
    order = ("\t", ",", ";", "|") if prefer_tab else DELIMITERS
    best, best_score, best_width = ",", 0.0, 1
    for delimiter in order:
        rows: list[list[str]] = []
        try:
            for cells in csv.reader(lines, delimiter=delimiter, quotechar='"', strict=False):
                if any(cell.strip(_WHITESPACE) for cell in cells):
                    rows.append(cells)
        except csv.Error:
            pass
        if not rows:
            continue
        width, count = Counter(len(cells) for cells in rows).most_common(1)[0]
        if width < 2:
            continue
        score = count / len(rows)
        keys = [_name_key(cell) for cell in rows[0]]
        if _find(keys, URL_NAMES) is not None or _find(keys, EXPECTED_NAMES) is not None:
            score += 1.0  # the header splits into names we know
        if score > best_score:
            best, best_score, best_width = delimiter, score, width
    return best, best_width
