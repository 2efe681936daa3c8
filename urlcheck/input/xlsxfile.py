"""An ``.xlsx`` workbook: the rows of its first sheet (or a named one), streamed.

Columns and header are the CSV's (:mod:`urlcheck.input.sniff`: the same names, the same header
detection); a record's row is the sheet's row number (the header's row counts, blank rows are
skipped but keep their numbers).

Why not openpyxl: its read-only mode was measured at 30 s of CPU for a 1,000,000-row sheet
(the CSV reader: 1.3 s), and it loads the whole shared-string table into memory (a million
distinct URLs are over 100 MB as Python strings). Here the sheet is read by pattern while it
is as plain as Excel and openpyxl write it (``_PlainRows``), else streamed with lxml's
``iterparse``, and the shared strings are kept in a temporary file, read back by offset.

A workbook is hostile input like a sitemap (:mod:`urlcheck.input.sitemap`): each part is read
through a cap on its decompressed size (a ZIP bomb), XML entities are never resolved, no DTD is
loaded and the network is never used.
"""

from __future__ import annotations

import codecs
import datetime as dt
import os
import posixpath
import re
import zipfile
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lxml import etree

from urlcheck.input.csvfile import record_builder
from urlcheck.input.errors import InputError
from urlcheck.input.files import open_input
from urlcheck.input.plainxml import ATTRS, PlainReader, as_parsed, character_data_ok, start_pattern
from urlcheck.input.plainxml import text as xml_text
from urlcheck.input.sharedstrings import SharedStrings
from urlcheck.input.sitemap import Readable, capped
from urlcheck.input.sniff import (
    EXPECTED_NAMES,
    URL_NAMES,
    WHITESPACE,
    find,
    header_names,
    is_header,
    name_key,
)
from urlcheck.input.spool import Spool

if TYPE_CHECKING:
    from urlcheck.input.record import Record

MAX_PART_BYTES = 1 << 30  # a part of the workbook, decompressed (a million rows: ~100 MB)
_HEADER_SAMPLE_ROWS = 50
_Build = Callable[[int, int, list[str], "str | None"], "Record"]

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_STRICT = "http://purl.oclc.org/ooxml/spreadsheetml/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
# Built-in number formats that show a date or a time (ECMA-376 18.8.30, and the CJK ones).
_DATE_FORMATS = {*range(14, 23), *range(27, 37), *range(45, 48), *range(50, 59)}
_QUOTED = re.compile(r'"[^"]*"|\[[^\]]*\]|\\.')
_EPOCH = dt.datetime(1899, 12, 30)  # the 1900 system, from 1 March 1900 on (below)
_EPOCH_1904 = dt.datetime(1904, 1, 1)  # a workbook's date1904 (old Excel for Mac)


def _parse(stream: Readable, tag: str | tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    return iter(
        etree.iterparse(
            stream,
            events=("end",),
            tag=tag,
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
        )
    )


_LETTERS = {chr(65 + i): i for i in range(26)}


def _column(ref: str | None, next_column: int) -> int:
    """0-based column of a cell reference such as ``AB12`` (``next_column`` without one)."""
    if not ref:
        return next_column
    letters = ref.rstrip("0123456789")
    one = _LETTERS.get(letters)
    if one is not None:
        return one
    n = 0
    for ch in letters.upper():
        if not "A" <= ch <= "Z":
            return next_column
        n = n * 26 + ord(ch) - 64
    return n - 1


def _inline_text(elem: Any) -> str:
    """An inline string's text: its ``<t>``, or its rich-text runs' (phonetic runs aside)."""
    parts = []
    for child in elem:
        tag = child.tag
        if tag.endswith("}t"):
            parts.append(child.text or "")
        elif tag.endswith("}r"):
            parts.extend(t.text or "" for t in child if t.tag.endswith("}t"))
    return "".join(parts)


_SI = re.compile(r"<si>(.*?)</si>|<si/>", re.DOTALL)
_PLAIN_SI = re.compile(r'<si><t(?: xml:space="preserve")?>([^<]*)</t></si>')
_PLAIN_T = re.compile(r'<t(?: xml:space="preserve")?>([^<]*)</t>')
_NOT_PLAIN = re.compile(r"<!|<\?(?!xml )|<[A-Za-z_][\w.\-]*:")  # DTD, CDATA, comment, PI, prefix
_STRING_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
)

# A sheet as Excel (and LibreOffice, openpyxl) writes it: rows of cells with their attributes
# in that order, each cell a formula and a value or an inline string at most.


def _cell_pattern(group: str) -> str:
    """A plain ``<c>``; ``group`` opens its column, style, type, ``<v>``, value and inline
    string groups: ``"("`` to capture them, ``"(?:"`` not to."""
    g = group
    return (
        rf'<c(?: r="{g}[A-Z]{{1,3}})\d+")?(?: s="{g}\d+)")?(?: t="{g}[A-Za-z]+)")?(?:/>|>'
        rf"(?:<f{ATTRS}(?:/>|>[^<]*</f>))?"
        rf'(?:{g}<v>){g}[^<]*)</v>|<is><t(?: xml:space="preserve")?>{g}[^<]*)</t></is>)?</c>)'
    )


_PLAIN_CELL = re.compile(_cell_pattern("("))
_PLAIN_ROW = re.compile(rf'<row r="(\d+)"{ATTRS}(?:(/)>|>((?:{_cell_pattern("(?:")})*)</row>)')
_SHEET_START = start_pattern(
    rf'<worksheet xmlns="{re.escape(_MAIN)}"{ATTRS}>(?:[^<]|<(?![!?]))*?', "sheetData"
)


def _rich_text(inner: str) -> str | None:
    """The text of an ``<si>`` that is more than one ``<t>`` (rich-text runs, phonetic runs),
    parsed on its own; None when it does not parse."""
    try:
        elem = etree.fromstring(f'<si xmlns="{_MAIN}">{inner}</si>', _STRING_PARSER)
    except etree.XMLSyntaxError:
        return None
    return _inline_text(elem)


def _is_date_format(code: str) -> bool:
    plain = _QUOTED.sub("", code).lower()
    return plain != "general" and any(ch in plain for ch in "dmyhs")


def _serial_to_text(value: str, epoch: dt.datetime) -> str:
    """An Excel date serial number as ISO 8601, in the workbook's date system (``epoch``)."""
    try:
        days = float(value)
        if 0 <= days < 1:  # a time of day alone (a time format): no day to show
            when = dt.datetime.min + dt.timedelta(days=days)
            return when.time().replace(microsecond=0).isoformat()
        if epoch is _EPOCH and days < 60:
            days += 1  # Excel's 1900 has a 29 February that never was (60): 1 is 1 January
        when = epoch + dt.timedelta(days=days)
    except (ValueError, OverflowError):
        return value
    if days == int(days):
        return when.date().isoformat()
    return when.replace(microsecond=0).isoformat()


def _place(cells: list[str], at: int, text: str) -> None:
    """Put a cell's text in column ``at`` (0-based): Excel leaves empty cells out."""
    if at > len(cells):
        cells.extend([""] * (at - len(cells)))
        cells.append(text)
    elif at == len(cells):
        cells.append(text)
    else:
        cells[at] = text


def _blank(cells: list[str]) -> bool:
    """A row of empty or blank cells: skipped, its number kept."""
    first = cells[0] if cells else ""
    return (not first or first.isspace()) and not "".join(cells).strip(WHITESPACE)


class _PlainRows(PlainReader[tuple[int, list[str]]]):
    """A sheet's non-blank rows read by pattern (:mod:`urlcheck.input.plainxml`), as (sheet
    row number, cells as text), for a sheet as Excel or openpyxl writes it: bench/inputs.py's
    million rows take 5.4 s of CPU where lxml's ``iterparse`` took 7.2 s (the CSV reader:
    1.4 s; the bound: 5 times that). At the first sign of anything else (a comment, rich
    text, attributes in another order, whitespace between elements), lxml reads on past the
    ``read`` rows."""

    def __init__(
        self, stream: Readable, get: Callable[[int], str], dates: set[int], epoch: dt.datetime
    ) -> None:
        super().__init__(stream, _SHEET_START, "sheetData", "</row>")
        self._get = get
        self._dates = dates
        self._epoch = epoch

    def parse(self, chunk: str) -> list[tuple[int, list[str]]] | None:
        """The non-blank rows of ``chunk`` (whole rows); None when it is not all plain."""
        if not character_data_ok(chunk):
            return None
        rows = _PLAIN_ROW.findall(chunk)
        # Every tag of the chunk is in a row read: nothing else was skipped over.
        tags = sum(2 + body.count("<") for _, _, body in rows) - sum(1 for _, e, _ in rows if e)
        if tags != chunk.count("<"):
            return None
        get, dates, letters = self._get, self._dates, _LETTERS
        found = []
        for number, _, body in rows:
            if not body:
                continue
            cells: list[str] = []
            for column, style, kind, v, value, inline in _PLAIN_CELL.findall(body):
                if kind == "s":
                    try:
                        text = get(int(value))
                    except ValueError:
                        text = ""
                elif kind == "inlineStr":  # as openpyxl (and so pandas) writes text
                    text = xml_text(inline) if "&" in inline or "\r" in inline else inline
                elif not v:
                    text = ""
                else:
                    text = xml_text(value) if "&" in value or "\r" in value else value
                    if kind == "b":
                        text = "TRUE" if text == "1" else "FALSE"
                    elif dates and kind in ("", "n") and style and int(style) in dates:
                        text = _serial_to_text(text, self._epoch)
                at = len(cells)
                if column:
                    at = letters.get(column, -1)
                    if at < 0:
                        at = _column(column, len(cells))
                if at == len(cells):
                    cells.append(text)
                else:
                    _place(cells, at, text)
            if not _blank(cells):
                found.append((int(number), cells))
        self.read += len(rows)
        return found


class XlsxSource:
    """One sheet of an ``.xlsx`` workbook, as input rows."""

    kind = "xlsx"
    header: list[str]
    has_header: bool
    url_column: str | int
    expected_column: str | None

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sheet: str | None = None,
        max_bytes: int = MAX_PART_BYTES,
    ) -> None:
        self.path = Path(path)
        self._name = os.fspath(path)
        self._max_bytes = max_bytes
        self._spool = Spool()
        self._strings: SharedStrings | None = None
        with self._zip() as book:
            workbook = self._workbook_part(book)
            sheets = self._sheets(book, workbook)
            if not sheets:
                raise InputError(f"{self._name}: the workbook has no sheet")
            if sheet is None:
                self.sheet, self._sheet_part = sheets[0]
            else:
                found = [part for name, part in sheets if name == sheet]
                if not found:
                    names = ", ".join(repr(name) for name, _ in sheets)
                    raise InputError(f"{self._name}: no sheet named {sheet!r} (sheets: {names})")
                self.sheet, self._sheet_part = sheet, found[0]
            self._strings_part, self._styles_part = self._parts_of(book, workbook)
            self._dates = self._date_styles(book)
            self._epoch = self._date_system(book, workbook)
            self._set_columns(book)

    def __repr__(self) -> str:
        return f"XlsxSource({self._name!r}, sheet={self.sheet!r}, has_header={self.has_header})"

    # --- the package --------------------------------------------------------------------------

    @contextmanager
    def _zip(self) -> Iterator[zipfile.ZipFile]:
        with open_input(self.path, self._name, "a workbook") as f:
            try:
                book = zipfile.ZipFile(f)
            except (zipfile.BadZipFile, OSError) as exc:
                raise InputError(f"{self._name}: a damaged ZIP archive ({exc})") from None
            with book:
                yield book

    def _open_part(self, book: zipfile.ZipFile, part: str, stack: ExitStack) -> Readable:
        try:
            stream = stack.enter_context(book.open(part))
        except KeyError:
            raise InputError(f"{self._name}: the workbook has no part {part}") from None
        return capped(stream, self._max_bytes, f"{self._name} ({part})")

    def _xml(self, book: zipfile.ZipFile, part: str, tag: str | tuple[str, ...]) -> list[Any]:
        """The ``tag`` elements of a small part (workbook, relationships, styles)."""
        with ExitStack() as stack:
            try:
                return [elem for _, elem in _parse(self._open_part(book, part, stack), tag)]
            except etree.XMLSyntaxError as exc:
                raise InputError(f"{self._name}: a damaged workbook ({part}: {exc.msg})") from None

    def _relations(self, book: zipfile.ZipFile, part: str) -> list[tuple[str, str, str]]:
        """(id, type, part name) of each relationship of ``part``."""
        folder, name = posixpath.split(part)
        rels = posixpath.join(folder, "_rels", f"{name}.rels")
        if rels not in book.NameToInfo:
            return []
        found = []
        for elem in self._xml(book, rels, f"{{{_PKG_REL}}}Relationship"):
            target = elem.get("Target", "")
            if elem.get("TargetMode") == "External":
                continue
            target = (
                target.lstrip("/")
                if target.startswith("/")
                else posixpath.normpath(posixpath.join(folder, target))
            )
            found.append((elem.get("Id", ""), elem.get("Type", ""), target))
        return found

    def _workbook_part(self, book: zipfile.ZipFile) -> str:
        for _, kind, target in self._relations(book, ""):
            if kind.endswith("/officeDocument"):
                return target
        if "xl/workbook.xml" in book.NameToInfo:
            return "xl/workbook.xml"
        raise InputError(
            f"{self._name}: a ZIP archive that is no .xlsx workbook (an .ods or .docx?)"
        )

    def _sheets(self, book: zipfile.ZipFile, workbook: str) -> list[tuple[str, str]]:
        """(name, part) of each worksheet, in the workbook's order."""
        targets = {rid: target for rid, _, target in self._relations(book, workbook)}
        sheets = []
        for elem in self._xml(book, workbook, (f"{{{_MAIN}}}sheet", f"{{{_STRICT}}}sheet")):
            rid = elem.get(f"{{{_REL}}}id") or elem.get(
                "{http://purl.oclc.org/ooxml/officeDocument/relationships}id"
            )
            target = targets.get(rid or "")
            if target and target in book.NameToInfo:
                sheets.append((elem.get("name", ""), target))
        return sheets

    def _date_system(self, book: zipfile.ZipFile, workbook: str) -> dt.datetime:
        """Day 0 of the workbook's dates: 1904-01-01 when it says ``date1904``."""
        tags = (f"{{{_MAIN}}}workbookPr", f"{{{_STRICT}}}workbookPr")
        for elem in self._xml(book, workbook, tags):
            if elem.get("date1904", "").lower() in ("1", "true"):
                return _EPOCH_1904
        return _EPOCH

    def _parts_of(self, book: zipfile.ZipFile, workbook: str) -> tuple[str | None, str | None]:
        strings = styles = None
        for _, kind, target in self._relations(book, workbook):
            if kind.endswith("/sharedStrings") and target in book.NameToInfo:
                strings = target
            elif kind.endswith("/styles") and target in book.NameToInfo:
                styles = target
        return strings, styles

    def _date_styles(self, book: zipfile.ZipFile) -> set[int]:
        """The cell styles (``s`` attribute) whose number format shows a date."""
        if self._styles_part is None:
            return set()
        custom: dict[int, str] = {}
        dates: set[int] = set()
        tags = (f"{{{_MAIN}}}numFmt", f"{{{_MAIN}}}cellXfs")
        for elem in self._xml(book, self._styles_part, tags):
            if elem.tag.endswith("numFmt"):
                custom[int(elem.get("numFmtId", "0"))] = elem.get("formatCode", "")
                continue
            for i, xf in enumerate(elem):
                fmt = int(xf.get("numFmtId", "0"))
                if fmt in custom:
                    if _is_date_format(custom[fmt]):
                        dates.add(i)
                elif fmt in _DATE_FORMATS:
                    dates.add(i)
        return dates

    def _load_strings(self, book: zipfile.ZipFile) -> SharedStrings:
        """The shared-string table: read by pattern when it is as plain as Excel writes it
        (measured: 3 times faster than parsing it), else, or at the first sign of anything
        else (CDATA, comments, prefixes), parsed by lxml from its start."""
        strings = SharedStrings()
        if self._strings_part is None:
            return strings
        with ExitStack() as stack:
            if self._plain_strings(self._open_part(book, self._strings_part, stack), strings):
                strings.done()
                return strings
        strings = SharedStrings()
        si = f"{{{_MAIN}}}si"
        with ExitStack() as stack:
            stream = self._open_part(book, self._strings_part, stack)
            root = None
            try:
                for n, (_, elem) in enumerate(_parse(stream, si), 1):
                    strings.add(_inline_text(elem))
                    if root is None:
                        root = elem.getparent()
                    elif not n & 4095:
                        del root[:-1]
            except etree.XMLSyntaxError as exc:
                raise InputError(
                    f"{self._name}: a damaged workbook ({self._strings_part}: {exc.msg})"
                ) from None
        strings.done()
        return strings

    def _plain_strings(self, stream: Readable, strings: SharedStrings) -> bool:
        """Fill ``strings`` from a table of ``<si><t>text</t></si>`` entries; False (and
        ``strings`` to be dropped) as soon as the table holds anything else."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        buffer = ""
        started = False
        while True:
            data = stream.read(1 << 20)
            try:
                buffer += decoder.decode(data, not data)
            except UnicodeDecodeError:
                return False
            if not started:
                if "<sst" not in buffer and data:
                    continue
                head, _, _ = buffer.partition("<sst")
                if _NOT_PLAIN.search(head) or '<sst xmlns="' + _MAIN + '"' not in buffer:
                    return False
                started = True
            limit = len(buffer) if not data else buffer.rfind("</si>") + 5
            chunk = buffer[:limit]
            if _NOT_PLAIN.search(chunk):
                return False
            # Nearly always every entry is one plain <t>: all read by one findall.
            parsed, exact = as_parsed(chunk)
            texts = _PLAIN_SI.findall(parsed if exact else chunk)
            if len(texts) == chunk.count("<si>") + chunk.count("<si/>"):
                if not exact:
                    texts = [
                        xml_text(text) if "&" in text or "\r" in text else text for text in texts
                    ]
            else:
                texts = []
                for found in _SI.finditer(chunk):
                    inner = found.group(1)
                    if inner is None:  # <si/>
                        texts.append("")
                        continue
                    plain = _PLAIN_T.fullmatch(inner)
                    text = _rich_text(inner) if plain is None else xml_text(plain.group(1))
                    if text is None:
                        return False
                    texts.append(text)
            strings.extend(texts)
            buffer = buffer[limit:]
            if not data:
                return True

    # --- rows ---------------------------------------------------------------------------------

    def _rows(
        self,
        book: zipfile.ZipFile,
        strings: SharedStrings,
        build: _Build | None = None,
        skip: Callable[[int], bool] | None = None,
    ) -> Generator[Any]:
        """(sheet row number, cells as text) of every row holding a non-blank cell; with
        ``build``, the records of the data rows instead (built here, in the one loop that runs a
        million times: measured faster than a second generator on top)."""
        header_row = self._header_row if build is not None else 0
        add = self._spool.add
        row_tag, v_tag, is_tag = (f"{{{_MAIN}}}{tag}" for tag in ("row", "v", "is"))
        dates, epoch = self._dates, self._epoch
        get = strings.get
        letters, digits = _LETTERS, "0123456789"
        with ExitStack() as stack:
            plain = _PlainRows(self._open_part(book, self._sheet_part, stack), get, dates, epoch)
            for batch in plain.batches():
                for number, row in batch:
                    if build is None:
                        yield number, row
                    elif number > header_row and (skip is None or not skip(number)):
                        yield build(number, add(row), row, None)
            if plain.finished:
                return
        read = plain.read  # lxml reads on past them
        with ExitStack() as stack:
            stream = self._open_part(book, self._sheet_part, stack)
            number = 0
            try:
                # One loop, inlined: it runs a million times for a large sheet.
                for n, (_, elem) in enumerate(_parse(stream, row_tag), 1):
                    if not n & 4095:
                        # rows are children of sheetData: drop those read, keep the open one
                        data = elem.getparent()
                        if data is not None:
                            del data[:-1]
                    try:
                        number = int(elem.get("r"))
                    except (TypeError, ValueError):
                        number += 1
                    if n <= read:
                        continue
                    width = len(elem)
                    if not width:
                        continue
                    # Excel leaves empty cells out; when the last cell is in column `width`,
                    # none was left out and the cells need not be placed one by one. (A last
                    # cell without a reference proves nothing: the one before may have one.)
                    ref = elem[width - 1].get("r")
                    dense = ref is not None and letters.get(ref.rstrip(digits)) == width - 1
                    cells: list[str] = []
                    for c in elem:  # <c> only, by the schema
                        kind = c.get("t")
                        if kind == "s":  # a shared string: its one child is <v>, its index
                            try:
                                text = get(int(c[0].text))
                            except (IndexError, TypeError, ValueError):
                                text = ""
                        else:
                            text = ""
                            try:
                                value = c[0]  # <v>, or a formula <f> before it
                            except IndexError:  # a cell with a style and no value
                                value = None
                            if value is not None and value.tag != v_tag:
                                value = c.find(is_tag if kind == "inlineStr" else v_tag)
                            if value is None:
                                pass
                            elif kind == "inlineStr":
                                text = _inline_text(value)
                            else:
                                text = value.text or ""
                                if kind == "b":
                                    text = "TRUE" if text == "1" else "FALSE"
                                elif dates and kind in (None, "n"):
                                    style = c.get("s")
                                    if style and style.isdigit() and int(style) in dates:
                                        text = _serial_to_text(text, epoch)
                        if dense:
                            cells.append(text)
                            continue
                        ref = c.get("r")
                        at = letters.get(ref.rstrip(digits)) if ref else None  # A to Z: inlined
                        if at is None:
                            at = _column(ref, len(cells))
                        if at == len(cells):
                            cells.append(text)
                        else:
                            _place(cells, at, text)
                    if _blank(cells):
                        continue
                    if build is None:
                        yield number, cells
                    elif number > header_row and (skip is None or not skip(number)):
                        yield build(number, add(cells), cells, None)
            except etree.XMLSyntaxError as exc:
                raise InputError(
                    f"{self._name}: a damaged workbook ({self._sheet_part}: {exc.msg})"
                ) from None

    def _set_columns(self, book: zipfile.ZipFile) -> None:
        strings = self._strings = self._load_strings(book)
        sample = []
        rows = self._rows(book, strings)
        try:
            for found in rows:
                sample.append(found)
                if len(sample) >= _HEADER_SAMPLE_ROWS:
                    break
        finally:
            rows.close()
        if not sample:
            raise InputError(f"{self._name}: the sheet {self.sheet!r} has no rows")
        first = [cell.strip(WHITESPACE) for cell in sample[0][1]]
        self.has_header = is_header(first, [cells for _, cells in sample[1:]])
        if self.has_header:
            if len(sample) < 2:
                raise InputError(
                    f"{self._name}: the sheet {self.sheet!r} has a header but no data rows"
                )
            self._header_row = sample[0][0]
            names = header_names(first)
            keys = [name_key(cell) for cell in first]
            url_index = find(keys, URL_NAMES)
            url_index = 0 if url_index is None else url_index
            expected_index = find(keys, EXPECTED_NAMES)
            self.header = names
            self.url_column = names[url_index]
            self.expected_column = None if expected_index is None else names[expected_index]
        else:
            self._header_row = 0
            width = max(len(cells) for _, cells in sample)
            names = [f"col{i + 1}" for i in range(width)]
            url_index, expected_index = 0, None
            self.header = []
            self.url_column = 0
            self.expected_column = None
        extras = [(i, name) for i, name in enumerate(names) if i not in (url_index, expected_index)]
        self._build = record_builder(url_index, expected_index, extras, len(names))

    # --- public -------------------------------------------------------------------------------

    def records(self, skip: Callable[[int], bool] | None = None) -> Generator[Record]:
        """The sheet's data rows in order, each numbered as the sheet numbers it."""
        self._spool.reset()
        build = self._build
        with self._zip() as book:
            strings = self._strings or self._load_strings(book)
            yield from self._rows(book, strings, build, skip)

    def read_at(self, offset: int, row: int) -> Record:
        cells = self._spool.get(offset)
        if cells is None:
            raise InputError(f"{self._name}: no row kept at {offset} (read the records first)")
        return self._build(row, offset, cells, None)

    def close(self) -> None:
        self._spool.close()
        if self._strings is not None:
            self._strings.close()

    def __enter__(self) -> XlsxSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
