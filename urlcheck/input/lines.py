"""A CSV file as physical lines with their sizes in bytes, so every record knows its offset.

The file is never loaded whole: it is read in chunks and split into lines (CRLF, LF or CR). A
UTF-16 file is decoded and each line re-encoded as UTF-8, its size still counted in the file's
own bytes. A line over :data:`MAX_LINE` is not read: it stands in as :data:`UNREAD`, a row of
its own that has no cells (so that the rows after it keep their numbers).
"""

from __future__ import annotations

import codecs
import io
import logging
from collections.abc import Callable, Iterator

logger = logging.getLogger(__name__)

CHUNK = 256 * 1024  # read size of a full pass
# csv's default limit (128 Ki characters) rejects a long cell; no limit at all would let one
# unterminated quote pull a whole file into memory. Physical lines are capped the same way.
MAX_LINE = 32 * 1024 * 1024

Lines = Iterator[tuple[int, bytes]]


def physical_lines(
    f: io.BufferedReader, offset: int, first_read: int, codec: str, name: str
) -> Lines:
    """(size in the file, line) from ``offset`` on; ``codec`` is ``""`` for an ASCII-compatible
    file, else the UTF-16 codec its lines are transcoded from."""
    if codec:
        return text_lines(f, offset, first_read, codec, name)
    return byte_lines(f, offset, first_read, name)


class Feed:
    """Lines for the csv module: a quoted record's first line, then the lines after it."""

    __slots__ = ("_decode", "_lines", "eof", "offset", "pending")

    def __init__(self, lines: Lines, decode: Callable[[bytes], str]) -> None:
        self._lines = lines
        self._decode = decode
        self.pending: str | None = None
        self.offset = 0
        self.eof = False

    def __iter__(self) -> Feed:
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


def _first_break(chunk: bytes) -> int:
    """Index just past the first line break in ``chunk``, or -1."""
    ends = [i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0]
    if not ends:
        return -1
    i = min(ends)
    return i + 2 if chunk[i : i + 2] == b"\r\n" else i + 1


class _Unread(bytes):
    """The stand-in for a line over the limit: told apart from a blank line by identity."""


UNREAD: bytes = _Unread(b"\n")


def _skipped(name: str, size: int) -> tuple[int, bytes]:
    # A line this long is no CSV row anyone wrote, but it is a row: the reader gives it a
    # record of its own (an invalid_row result) rather than renumbering the rows after it.
    return size, UNREAD


def _read_to_break(f: io.BufferedReader) -> tuple[int, bytes]:
    """Read on to the end of a line too long to hold: (bytes read up to and including the
    first line break, what follows the break in the last chunk read)."""
    dropped = 0
    while chunk := f.read(CHUNK):
        cut = _first_break(chunk)
        if cut >= 0:
            return dropped + cut, chunk[cut:]
        dropped += len(chunk)
    return dropped, b""


def byte_lines(f: io.BufferedReader, offset: int, first_read: int, name: str) -> Lines:
    """(size, line) for each physical line of an ASCII-compatible file; CRLF, LF or CR."""
    f.seek(offset)
    read_size = first_read
    carry = b""
    # The chunks of a line longer than a chunk, kept apart until it ends: gluing each to the
    # carry took quadratic time (6 s for one 32 MiB line).
    held: list[bytes] = []
    held_size = 0
    pending = b""
    while True:
        chunk = pending or f.read(read_size)
        pending = b""
        read_size = min(read_size * 4, CHUNK)
        if carry and not carry.endswith(b"\r") and chunk and _first_break(chunk) < 0:
            held.append(chunk)
            held_size += len(chunk)
            if len(carry) + held_size > MAX_LINE:  # don't hold it: read on to its end
                dropped, pending = _read_to_break(f)
                yield _skipped(name, len(carry) + held_size + dropped)
                carry, held, held_size = b"", [], 0
            continue
        if held:
            carry = b"".join([carry, *held])
            held, held_size = [], 0
        if not chunk:
            if carry:
                yield _skipped(name, len(carry)) if len(carry) > MAX_LINE else (len(carry), carry)
            return
        buf = carry + chunk if carry else chunk
        # bytes.splitlines breaks at \n, \r and \r\n only (str.splitlines knows many more).
        lines = buf.splitlines(keepends=True)
        carry = lines.pop()
        if carry.endswith(b"\n"):  # complete (one ending in \r may go on as \r\n)
            lines.append(carry)
            carry = b""
        if lines and max(map(len, lines)) > MAX_LINE:
            for line in lines:
                yield _skipped(name, len(line)) if len(line) > MAX_LINE else (len(line), line)
        else:
            yield from zip(map(len, lines), lines, strict=True)
        if len(carry) > MAX_LINE:  # don't hold it: read on to its end
            dropped, pending = _read_to_break(f)
            yield _skipped(name, len(carry) + dropped)
            carry = b""


def text_lines(f: io.BufferedReader, offset: int, first_read: int, codec: str, name: str) -> Lines:
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
        read_size = min(read_size * 4, CHUNK)
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
            if size > MAX_LINE:
                dropped = 0
                yield _skipped(name, size)
            else:
                yield size, line.encode("utf-8", "surrogatepass")
        if not chunk:
            return
        if len(carry) * 2 > MAX_LINE:  # at least that many bytes: don't hold it
            dropped += len(carry.encode(codec, "surrogatepass"))
            carry = ""
