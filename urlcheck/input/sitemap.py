"""A sitemap (sitemaps.org): a ``urlset`` whose ``<url>`` entries are the rows, or a
``sitemapindex`` naming the sitemaps that hold them; plain XML or gzip, in UTF-8 or UTF-16 (or
any encoding its XML declaration names that lxml knows).

Sitemaps are hostile input, read as such: streamed with lxml's ``iterparse`` (each entry
dropped once read, so memory stays flat), no DTD at all (a document declaring one is refused
before parsing, which rules out entity expansion and external entities; entities are not
resolved and the network is never used anyway), no huge-tree mode, and a gzip stream is cut at
:data:`MAX_SITEMAP_BYTES` decompressed (a gzip bomb ends with one line, not a full disk).

A row is the ``<url>``'s ordinal in the document, its URL the ``<loc>`` text, and its
``<lastmod>`` goes to the result's ``input``. A read cannot come back to an entry at a byte
offset (the stream may be compressed), so the streaming pass keeps its rows in a
:class:`~urlcheck.input.spool.Spool`.
"""

from __future__ import annotations

import bisect
import codecs
import gzip
import logging
import os
import re
import zlib
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from lxml import etree

from urlcheck.input.errors import InputError
from urlcheck.input.files import open_input, read_head
from urlcheck.input.plainxml import PlainReader, as_parsed, character_data_ok, start_pattern
from urlcheck.input.plainxml import text as xml_text
from urlcheck.input.record import Record, new_record
from urlcheck.input.sniff import SAMPLE_BYTES
from urlcheck.input.spool import Spool

logger = logging.getLogger(__name__)

# sitemaps.org allows 50 MB a sitemap; a local file may be larger (a million URLs is ~100 MB).
MAX_SITEMAP_BYTES = 1 << 30
MAX_CHILDREN = 50_000  # sitemaps.org: at most 50,000 sitemaps in an index
GZIP_MAGIC = b"\x1f\x8b"
URLSET, INDEX = "urlset", "sitemapindex"
_WHITESPACE = " \t\r\n"
# What may come before the root element: the XML declaration, comments, processing
# instructions and whitespace; a DOCTYPE is refused.
_PROLOG = re.compile(rb"(?:\s+|<\?.*?\?>|<!--.*?-->)*", re.DOTALL)
_HTML_DOCTYPE = re.compile(rb"<!DOCTYPE\s+html[\s>]", re.IGNORECASE)
_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.\-]*:)?([A-Za-z_][\w.\-]*)[\s/>]")
# How a UTF-16 document starts: its byte-order mark, or "<?" in one byte order
_UTF16_STARTS = (
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (b"<\x00?\x00", "utf-16-le"),
    (b"\x00<\x00?", "utf-16-be"),
)


# A sitemap as most sites write it: a urlset of <url> entries holding <loc>, <lastmod>,
# <changefreq> and <priority>, indented or not, read by pattern (`_PlainUrls`).
_URLSET_START = start_pattern("", "urlset")
_PLAIN_URL = re.compile(
    r"<url>\s*<loc>([^<]*)</loc>\s*(<lastmod>([^<]*)</lastmod>\s*)?"
    r"(<changefreq>[^<]*</changefreq>\s*)?(<priority>[^<]*</priority>\s*)?</url>"
)


def is_remote(arg: str | None) -> bool:
    """Whether an input argument, or a sitemap an index names, is an http(s) URL rather than
    a file's path (or a relative reference)."""
    if not arg:
        return False
    parts = urlsplit(arg)
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _Capped:
    """A decompressed stream that fails past ``limit`` bytes."""

    def __init__(self, stream: Readable, limit: int, name: str) -> None:
        self._stream = stream
        self._left = limit
        self._limit = limit
        self._name = name

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._stream.read(size if size >= 0 else self._left + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{self._name}: the gzip stream is damaged ({exc})") from None
        self._left -= len(data)
        if self._left < 0:
            raise InputError(f"{self._name}: over {self._limit:,} bytes once decompressed; refused")
        return data


def capped(stream: Readable, limit: int, name: str) -> Readable:
    """``stream`` (decompressing) as a stream that fails with InputError past ``limit`` bytes."""
    return _Capped(stream, limit, name)


def decompressed_head(head: bytes, name: str) -> bytes:
    """The first bytes of a gzip stream's content, for sniffing."""
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, SAMPLE_BYTES)
    except zlib.error as exc:
        raise InputError(f"{name}: a damaged gzip archive ({exc})") from None


def xml_view(head: bytes) -> bytes:
    """The start of a document as ASCII-compatible bytes, for the sniffers: without a UTF-8
    byte-order mark, and re-encoded when it is UTF-16, told by its byte-order mark or, without
    one, by ``<?xml`` in UTF-16 (the XML spec's detection, appendix F). lxml reads all of
    these itself; only the sniffing needs the view."""
    if head.startswith(codecs.BOM_UTF8):
        return head[3:]
    codec = next((c for mark, c in _UTF16_STARTS if head.startswith(mark)), None)
    if codec is None:
        return head
    body = head[2:] if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else head
    # a head cut mid-character (or mid-pair) loses that character only
    return body[: len(body) & ~1].decode(codec, "ignore").encode()


def root_name(head: bytes, name: str) -> str | None:
    """The root element's local name of an XML document starting with ``head`` (None when it
    is not XML); refuses a DTD (a sitemap has none: it is where entity bombs live)."""
    body = xml_view(head)
    start = _PROLOG.match(body)
    rest = body[start.end() if start else 0 :]
    if _HTML_DOCTYPE.match(rest):  # every HTML page's first line: no sitemap, nor a DTD to fear
        return "html"
    if rest.startswith((b"<!DOCTYPE", b"<!ENTITY")):
        raise InputError(f"{name}: an XML document with a DTD; a sitemap has none, refused")
    found = _ROOT.match(rest)
    return found.group(1).decode("ascii") if found else None


def sitemap_root(head: bytes, name: str) -> str:
    """``"urlset"`` or ``"sitemapindex"`` for a (possibly gzipped) document starting with
    ``head``; refuses anything else in one line."""
    gz = head.startswith(GZIP_MAGIC)
    body = decompressed_head(head, name) if gz else head
    root = root_name(body, name)
    if root in (URLSET, INDEX):
        return root
    if gz:
        raise InputError(f"{name}: a gzip archive that holds no sitemap")
    what = "an HTML page" if root and root.lower() == "html" else "XML"
    found = f" (its root is <{root}>)" if root else ""
    raise InputError(
        f"{name}: {what}{found}, not a sitemap (<urlset> or <sitemapindex>) nor a list of URLs"
    )


def _iterparse(stream: Readable, tag: str) -> Iterator[tuple[str, Any]]:
    """The ``tag`` elements (``url`` or ``sitemap``, any namespace), each once complete."""
    return iter(
        etree.iterparse(
            stream,
            events=("end",),
            tag=f"{{*}}{tag}",
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
            remove_blank_text=True,  # the indentation between elements: 12 % faster, measured
        )
    )


def _entries(stream: Readable, tag: str) -> Iterator[tuple[int, Any]]:
    """(ordinal, element) of each ``tag`` entry (``url`` or ``sitemap``) once it is complete;
    what was read before it is dropped a batch at a time (measured: faster than an entry at a
    time), so memory stays flat."""
    root = None
    for n, (_, elem) in enumerate(_iterparse(stream, tag), 1):
        yield n, elem
        if root is None:
            root = elem.getroottree().getroot()
        elif not n & 4095:
            del root[:-1]  # all but the last child: the entry just read, or one still open


def _fields(elem: Any, tag: str) -> tuple[str, str]:
    """The child tag names of ``<loc>`` and ``<lastmod>`` in ``elem``'s namespace."""
    ns = elem.tag[: -len(tag)]
    return f"{ns}loc", f"{ns}lastmod"


class _PlainUrls(PlainReader[tuple[str | None, str | None]]):
    """A urlset's entries read by pattern (:mod:`urlcheck.input.plainxml`), as (loc, lastmod)
    (None: no lastmod), while it is as plain as most sites write it: bench/inputs.py's million
    entries take 2.3 s of CPU where lxml's ``iterparse`` took 2.7 to 2.8 s. At the first sign of
    anything else (an extension such as images or hreflang links, a prefix, a comment, CDATA,
    children in another order), lxml reads on past the ``read`` entries."""

    def __init__(self, stream: Readable) -> None:
        super().__init__(stream, _URLSET_START, "urlset", "</url>")

    def parse(self, chunk: str) -> list[tuple[str | None, str | None]] | None:
        if not character_data_ok(chunk):
            return None
        chunk, exact = as_parsed(chunk)
        found = _PLAIN_URL.findall(chunk)
        n = len(found)
        if not n or n != chunk.count("<url"):
            return None
        # Every tag of the chunk is in an entry read: nothing else was skipped over.
        _, lastmods, _, freqs, priorities = zip(*found, strict=True)
        optional = 3 * n - lastmods.count("") - freqs.count("") - priorities.count("")
        if chunk.count("<") != 4 * n + 2 * optional:
            return None
        self.read += n
        if exact:
            return [(loc, raw if element else None) for loc, element, raw, _, _ in found]
        return [
            (
                xml_text(loc) if "&" in loc else loc,
                None if not element else xml_text(raw) if "&" in raw else raw,
            )
            for loc, element, raw, _, _ in found
        ]


class SitemapSource:
    """One sitemap file, or the documents of an index (``parts``), read as one input."""

    kind = "sitemap"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        parts: Sequence[Path] = (),
        max_bytes: int = MAX_SITEMAP_BYTES,
    ) -> None:
        self.path = Path(path)
        self._max_bytes = max_bytes
        self._name = os.fspath(path)
        self.root = sitemap_root(read_head(self.path, self._name), self._name)
        self.sitemaps: list[str] = self._children() if self.root == INDEX else []
        self._parts = list(parts) if self.root == INDEX else [self.path]
        self._starts: list[int] = []  # the first row of each part, found by records()
        if self.root == URLSET:
            self._refuse_without_entries()
        self._spool = Spool()

    def __repr__(self) -> str:
        return f"SitemapSource({self._name!r}, root={self.root!r})"

    def with_parts(self, parts: Sequence[Path]) -> SitemapSource:
        """This index, its rows read from ``parts``: the files of its sitemaps (fetched by the
        crawl), in the index's order; rows are numbered across them."""
        self._parts = list(parts)
        return self

    def part_of(self, row: int) -> int:
        """The index in ``parts`` of the document ``row`` was read from (after records())."""
        return max(bisect.bisect_right(self._starts, row) - 1, 0)

    def _open(self, path: Path, stack: ExitStack) -> Readable:
        name = os.fspath(path)
        f = stack.enter_context(open_input(path, name, "a sitemap"))
        if f.peek(2)[:2] == GZIP_MAGIC:
            unzipped = stack.enter_context(gzip.GzipFile(fileobj=f, mode="rb"))
            return capped(unzipped, self._max_bytes, name)
        return f

    def _bad_xml(self, path: Path, exc: etree.XMLSyntaxError) -> None:
        # A document that stops being well-formed ends there; the entries before it are kept.
        logger.warning(
            "%s: not well-formed XML at line %d (%s); the entries after it are not read",
            path,
            getattr(exc, "lineno", 0),
            exc.msg,
        )

    def _refuse_without_entries(self) -> None:
        """A sitemap with no ``<url>`` to read is refused, as a CSV without rows is: the run
        would end "finished", exit 0, having checked nothing (blank lines before ``<?xml``, as
        some CMS plugins write, stop lxml before the first entry)."""
        with ExitStack() as stack:
            try:
                for _ in _iterparse(self._open(self.path, stack), "url"):
                    return
            except etree.XMLSyntaxError as exc:
                raise InputError(
                    f"{self._name}: not well-formed XML at line {getattr(exc, 'lineno', 0)} "
                    f"({exc.msg}); no <url> entry could be read"
                ) from None
        raise InputError(f"{self._name}: the sitemap holds no <url> entry")

    def _children(self) -> list[str]:
        children: list[str] = []
        with ExitStack() as stack:
            try:
                for n, elem in _entries(self._open(self.path, stack), "sitemap"):
                    if n > MAX_CHILDREN:
                        logger.warning(
                            "%s: over %d sitemaps in the index; the rest are not read",
                            self._name,
                            MAX_CHILDREN,
                        )
                        break
                    loc = elem.findtext(_fields(elem, "sitemap")[0])
                    if loc and loc.strip(_WHITESPACE):
                        children.append(loc.strip(_WHITESPACE))
            except etree.XMLSyntaxError as exc:
                self._bad_xml(self.path, exc)
        return children

    def records(self, skip: Callable[[int], bool] | None = None) -> Generator[Record]:
        """The ``<url>`` entries of every document, numbered in order across them."""
        self._spool.reset()
        row = 0
        self._starts = []
        record = self._record
        for part in self._parts:
            first = row + 1
            self._starts.append(first)
            with ExitStack() as stack:
                plain = _PlainUrls(self._open(part, stack))
                for batch in plain.batches():
                    for loc, lastmod in batch:
                        row += 1
                        if skip is None or not skip(row):
                            yield record(row, loc, lastmod)
                if plain.finished:
                    continue
            past, row = row, first - 1  # lxml reads the document again, past those
            loc_tag = lastmod_tag = ""
            with ExitStack() as stack:
                try:
                    # One loop: it runs a million times for a sitemap lxml reads (one with
                    # extensions, say); the record is made where the pattern path makes it.
                    root = None
                    for _, elem in _iterparse(self._open(part, stack), "url"):
                        row += 1
                        if root is None:  # a document's first entry: its namespace (or none)
                            root = elem.getroottree().getroot()
                            loc_tag, lastmod_tag = _fields(elem, "url")
                        elif not row & 4095:  # as in _entries: entries read, dropped in batches
                            del root[:-1]
                        if row <= past or (skip is not None and skip(row)):
                            continue
                        loc = lastmod = None
                        for child in elem:
                            child_tag = child.tag
                            if child_tag == loc_tag:
                                if loc is None:
                                    loc = child.text
                            elif child_tag == lastmod_tag and lastmod is None:
                                lastmod = child.text
                        yield record(row, loc, lastmod)
                except etree.XMLSyntaxError as exc:
                    self._bad_xml(part, exc)

    def _record(self, row: int, loc: str | None, lastmod: str | None) -> Record:
        """The record of entry ``row``, kept in the spool."""
        url = loc.strip(_WHITESPACE) if loc else ""
        if lastmod is None or not (lastmod := lastmod.strip(_WHITESPACE)):
            spool = self._spool
            offset = spool.add([url]) if "\n" in url or "\t" in url else spool.add_line(f"={url}")
            return new_record(row, offset, url, None, {})
        both = f"={url}\t{lastmod}"
        if "\n" in both or "\t" in url or "\t" in lastmod:
            offset = self._spool.add([url, lastmod])
        else:
            offset = self._spool.add_line(both)  # Spool.add's line, made here: faster
        return new_record(row, offset, url, None, {"lastmod": lastmod})

    def read_at(self, offset: int, row: int) -> Record:
        cells = self._spool.get(offset)
        if not cells:
            raise InputError(f"{self._name}: no entry kept at {offset} (read the records first)")
        return Record(row, offset, cells[0], None, _extra(cells))

    def close(self) -> None:
        self._spool.close()

    def __enter__(self) -> SitemapSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _extra(cells: list[str]) -> dict[str, str]:
    return {"lastmod": cells[1]} if len(cells) > 1 else {}
