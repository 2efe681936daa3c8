"""XML read by pattern while it is as plain as the programs that write it most: a workbook's
sheet as Excel writes it, a sitemap as a CMS does. A reader takes the document in chunks of
whole entries (`PlainReader`), reads each with its own patterns, and at the first chunk that
is not plain (a comment, CDATA, a DTD, a prefix, an attribute order or child it does not know)
hands over to lxml, which reads the document from its start, past the entries already read.
Patterns never resolve an entity or load anything: what they do not know, lxml reads, with
its guards.
"""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterator

    from urlcheck.input.sitemap import Readable

T = TypeVar("T")

__all__ = ["ATTRS", "PlainReader", "as_parsed", "character_data_ok", "start_pattern", "text"]

# Attributes as plain writers write them: double quotes, no "<" or "&" in a value.
ATTRS = r'(?: [\w:.-]+="[^"<&]*")*'
REFERENCE = re.compile(r"&(#x[0-9A-Fa-f]{1,6}|#[0-9]{1,7}|amp|lt|gt|quot|apos);")
_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
# What no character data may hold: "]]>" and the characters XML 1.0 leaves out. Looked for one
# by one (a substring search each): 8 times faster than one pattern, measured on a sitemap.
_REFUSED = ("]]>", *map(chr, [*range(9), 0xB, 0xC, *range(0xE, 0x20), 0xFFFE, 0xFFFF]))
# What a reader is sure of: a document in UTF-8 (or declared so), no DTD before its entries.
DECLARATION = (
    r'(?:<\?xml version="1\.0"(?: encoding="(?i:utf-8)")?(?: standalone="(?:yes|no)")?\s*\?>)?'
)
READ = 1 << 16  # measured on a workbook: faster than 1 MiB reads, and 13 MB less at the peak
MAX_ENTRY_CHARS = 1 << 20  # an entry (or a start) longer than this goes to lxml: memory stays flat


def text(raw: str) -> str:
    """Character data as an XML parser reads it: line ends LF, then references replaced (a
    ``&#13;`` is a carriage return the parser keeps)."""
    if "\r" in raw:
        raw = lf(raw)
    if "&" in raw:  # &amp; (a URL's query) alone is the usual case: faster
        if raw.count("&") == raw.count("&amp;"):
            raw = raw.replace("&amp;", "&")
        else:
            raw = REFERENCE.sub(_unescape, raw)
    return raw


def as_parsed(chunk: str) -> tuple[str, bool]:
    """``chunk`` with line ends LF and, when ``&amp;`` is its only reference (a URL's query),
    that replaced, and whether its character data now reads as a parser reads it: then a
    reader takes its texts as they are, where it would convert each (measured: 0.8 s of a
    million-URL sitemap's 2.4 s). Tags are untouched: neither holds a line end or an ``&``
    in a plain document."""
    if "\r" in chunk:
        chunk = lf(chunk)
    if "&" not in chunk:
        return chunk, True
    if chunk.count("&") == chunk.count("&amp;"):
        return chunk.replace("&amp;", "&"), True
    return chunk, False


def lf(data: str) -> str:
    return data.replace("\r\n", "\n").replace("\r", "\n")


def _unescape(found: re.Match[str]) -> str:
    ref = found.group(1)
    if ref[0] != "#":
        return _ENTITIES[ref]
    code = int(ref[2:], 16) if ref[1] == "x" else int(ref[1:])
    return chr(code) if 0 < code <= 0x10FFFF else found.group(0)


def character_data_ok(chunk: str) -> bool:
    """Nothing in ``chunk`` a parser refuses in character data: every ``&`` starts a reference
    it knows without a DTD, to a character XML allows; no ``]]>``, no control character."""
    if any(refused in chunk for refused in _REFUSED):
        return False
    if "&" not in chunk:
        return True
    refs = REFERENCE.findall(chunk)
    if len(refs) != chunk.count("&"):
        return False
    return "&#" not in chunk or all(_allowed(ref) for ref in refs if ref[0] == "#")


def _allowed(ref: str) -> bool:
    """A numeric reference to a character XML 1.0 allows."""
    code = int(ref[2:], 16) if ref[1] == "x" else int(ref[1:])
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def start_pattern(before: str, container: str) -> re.Pattern[str]:
    """The start of a plain document up to its container's start tag (group 1: ``/`` when
    the container is empty): the declaration, then ``before`` (a pattern: what comes between
    it and the container; the root's start tag when the container is not the root)."""
    return re.compile(rf"{DECLARATION}\s*{before}<{container}{ATTRS}(/?)>")


class PlainReader(Generic[T]):
    """The entries of a document, read by pattern a chunk of whole entries at a time, while
    the document starts as ``start`` (`start_pattern`) says, the container is ``container``
    and each entry ends with ``close``. A subclass reads a chunk (`parse`): its entries, and
    how many elements it read (``read``), or None when the chunk is not plain. The batches
    end there, at a document cut short, at bytes that are not UTF-8 and at an entry over
    `MAX_ENTRY_CHARS`: lxml reads on from there and says what is wrong. ``finished``: the
    container's end was reached (the rest of the document is not read)."""

    def __init__(
        self, stream: Readable, start: re.Pattern[str], container: str, close: str
    ) -> None:
        self._stream = stream
        self._start = start
        self._opening = f"<{container}"
        self._end = f"</{container}>"
        self._close = close
        self.read = 0
        self.finished = False

    def parse(self, chunk: str) -> list[T] | None:
        raise NotImplementedError

    def batches(self) -> Iterator[list[T]]:
        """The entries, a chunk's at a time."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        buffer = ""
        started = False
        close, end, tail = self._close, self._end, len(self._close)
        while True:
            data = self._stream.read(READ)
            try:
                buffer += decoder.decode(data, not data)
            except UnicodeDecodeError:
                return
            if not started:
                if self._opening not in buffer and data and len(buffer) < MAX_ENTRY_CHARS:
                    continue
                found = self._start.match(buffer)
                if found is None:
                    return
                if found.group(1):  # an empty container
                    self.finished = True
                    return
                started, buffer = True, buffer[found.end() :]
            stop = buffer.find(end)
            if stop >= 0:
                chunk = buffer[:stop]
            elif not data:
                return  # cut short
            else:
                cut = buffer.rfind(close) + tail
                if cut < tail:  # no entry ends yet
                    if len(buffer) > MAX_ENTRY_CHARS:
                        return
                    continue
                chunk, buffer = buffer[:cut], buffer[cut:]
            batch = self.parse(chunk)
            if batch is None:
                return
            yield batch
            if stop >= 0:
                self.finished = True
                return
