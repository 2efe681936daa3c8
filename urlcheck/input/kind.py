"""Which reader an input needs, found from its content (never its name), and opening it.

* a ZIP archive: an ``.xlsx`` workbook (:mod:`urlcheck.input.xlsxfile`);
* gzip, or XML whose root is ``urlset`` or ``sitemapindex``: a sitemap
  (:mod:`urlcheck.input.sitemap`);
* text whose lines hold one cell each and no header: a plain list (:mod:`urlcheck.input.listfile`);
* other text: a CSV (:mod:`urlcheck.input.csvfile`).

Anything else is refused with one line naming the file and what it looks like.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from urlcheck.input.csvfile import CsvSource
from urlcheck.input.errors import InputError
from urlcheck.input.files import read_head
from urlcheck.input.listfile import ListSource, list_entry
from urlcheck.input.sitemap import GZIP_MAGIC, SitemapSource, sitemap_root, xml_view
from urlcheck.input.sniff import (
    SAMPLE_BYTES,
    SAMPLE_LINES,
    is_header,
    line_decoder,
    looks_like_url,
    sniff_delimiter,
    sniff_encoding,
    transcoded,
)
from urlcheck.input.xlsxfile import XlsxSource

if TYPE_CHECKING:
    from urlcheck.input.record import Record

ZIP_MAGIC = b"PK\x03\x04"
_XML_START = re.compile(rb"\s*<")
_COMMENT = re.compile(r"\s*#(?![,;\t|])")
_BLANK_ROW = re.compile(r"[,;\t|\s]+")
_DELIMITER = re.compile(r"[,;|]")  # a tab is never a URL's: the URL is invalid with one
# Where a URL's query (``?ids=1,2``) or a path parameter (``;jsessionid=...``) starts.
_URL_PARAMETERS = re.compile(r"[?#]|;[\w.\-]+=")


class Source(Protocol):
    """What every reader offers the crawl: one streaming pass, then any record again."""

    kind: str

    def records(self, skip: Callable[[int], bool] | None = None) -> Iterator[Record]: ...

    def read_at(self, offset: int, row: int) -> Record: ...

    def close(self) -> None: ...


def looks_like_xml(head: bytes) -> bool:
    return _XML_START.match(xml_view(head)) is not None


def sniff_kind(head: bytes, name: str) -> str:
    """``"xlsx"``, ``"sitemap"``, ``"list"`` or ``"csv"`` for a file starting with ``head``."""
    if head.startswith(ZIP_MAGIC):
        return "xlsx"
    if head.startswith(GZIP_MAGIC) or looks_like_xml(head):
        sitemap_root(head, name)  # refuses XML that is no sitemap, and gzip that holds none
        return "sitemap"
    encoding, start = sniff_encoding(head, name)  # refuses binary files, one line each
    cut = len(head) >= SAMPLE_BYTES
    return "list" if _is_list(head[start:], encoding, cut=cut) else "csv"


def _is_list(body: bytes, encoding: str, *, cut: bool) -> bool:
    """One URL a line: no delimiter splits the lines, no quoted cell, no header (comment and
    blank lines aside)."""
    codec = transcoded(encoding)
    text = body.decode(codec, "replace") if codec else line_decoder(encoding)(body)
    lines = text.splitlines()[:SAMPLE_LINES]
    if cut and len(lines) > 1:
        lines.pop()  # the sample may end mid-line
    entries = [entry for entry in map(list_entry, lines) if entry is not None]
    if any(entry.startswith('"') for entry in entries):
        return False
    if any(_COMMENT.match(line) for line in lines):  # no CSV has those ("#,url" is a header)
        return True
    if not entries or all(_BLANK_ROW.fullmatch(entry) for entry in entries):
        return False  # delimiters only: a CSV's blank rows, which it refuses as such
    # A URL's own delimiters are no cells: such a line counts as the one cell it is.
    cells = [_DELIMITER.sub("_", entry) if _own_delimiters(entry) else entry for entry in entries]
    _, width = sniff_delimiter(cells, prefer_tab=bool(codec))
    if width >= 2:
        return False
    return not is_header([entries[0]], [[entry] for entry in entries[1:50]])


def _own_delimiters(entry: str) -> bool:
    """Whether the delimiters of a list's line are its URL's own: they are in its query or its
    path parameters (``https://a/?ids=1,2``, ``https://a/x;jsessionid=1``), and nothing they
    would cut off looks like a URL (``https://a/?x=1,https://b/`` is a CSV's two cells)."""
    found = _DELIMITER.search(entry)
    if found is None or any(char.isspace() for char in entry) or not looks_like_url(entry):
        return False
    parameters = _URL_PARAMETERS.search(entry)
    if parameters is None or parameters.start() > found.start():
        return False
    return not any(looks_like_url(cell) for cell in _DELIMITER.split(entry)[1:])


def open_source(path: str | os.PathLike[str], *, sheet: str | None = None) -> Source:
    """The reader for the input at ``path``, its kind found from its content; ``sheet`` names
    a workbook's sheet (else the first). Raises :class:`InputError` (one line) for a file none
    of them can read."""
    name = os.fspath(path)
    kind = sniff_kind(read_head(Path(path), name), name)
    if sheet is not None and kind != "xlsx":
        raise InputError(f"{name}: a sheet was named ({sheet!r}) but this is no .xlsx workbook")
    if kind == "xlsx":
        return XlsxSource(path, sheet=sheet)
    if kind == "list":
        return ListSource(path)
    if kind == "csv":
        return CsvSource(path)
    return SitemapSource(path)  # an index's sitemaps are fetched by the crawl
