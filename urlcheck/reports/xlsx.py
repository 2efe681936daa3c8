"""Results as an Excel workbook, written as a stream (``-o results.xlsx``, docs/reports.md).

openpyxl's write-only mode spools each sheet's rows to a temporary file and zips them at the
end, so a million rows never sit in memory. Sheets: ``results`` (one line per row, the chain as
one readable cell, the input columns as ``input.NAME``), ``checks`` (each check code with its
count and sheet), then one sheet per check code found in the rows' ``reasons`` and
``warnings``, listing the rows that have it. The codes are taken from the rows as they come,
so a check added later gets its sheet without a change here.

Every cell is a value, never a formula: text is written as a string cell (a URL or a title
starting with ``=``, ``+``, ``-`` or ``@`` is kept as it is, and marked as text so that editing
the cell does not turn it into a formula either), characters XML cannot hold are escaped, and
text is cut at Excel's 32,767 characters per cell. A sheet holds at most Excel's 1,048,576
rows: the rest continue in ``results (2)``, ``results (3)``...
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

from urlcheck.check.result import FIELDS
from urlcheck.reports.chaintext import chain_text

EXCEL_MAX_ROWS = 1_048_576
EXCEL_MAX_CELL = 32_767
MAX_CHECK_SHEETS = 100  # codes beyond this many are counted on the checks sheet only

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# XML 1.0 cannot hold these (openpyxl refuses them), nor UTF-8 a lone surrogate.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_NOT_IN_SHEET_NAME = re.compile(r"[\[\]:*?/\\']")
_TRUNCATED = "… [cut]"
_BOLD = Font(bold=True)

# The columns of a check's sheet: enough to act on the row without the results sheet.
CHECK_COLUMNS: tuple[str, ...] = (
    "row",
    "url",
    "expected",
    "status",
    "final_status",
    "final_url",
    "verdict",
    "error",
    "reasons",
    "warnings",
    "chain",
)


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}" if ord(match.group()) < 0x100 else "\ufffd"


def cell_text(value: str) -> str:
    """``value`` as a sheet can hold it: no XML-illegal character, at most 32,767 characters."""
    text = _NOT_XML.sub(_escape, value)
    if len(text) > EXCEL_MAX_CELL:
        text = text[: EXCEL_MAX_CELL - len(_TRUNCATED)] + _TRUNCATED
    return text


def cell_value(key: str, value: Any) -> Any:
    """A result field as a cell value: numbers and booleans as such, lists joined, the chain as
    one line of text, everything else text."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if key == "chain" and isinstance(value, list):
        return cell_text(chain_text(value))
    if isinstance(value, (list, tuple)):
        return cell_text("; ".join(str(v) for v in value))
    return cell_text(str(value))


def columns_of(result: Mapping[str, Any]) -> list[str]:
    """The results sheet's columns: the record's fields, then the row's input columns."""
    names = [name for name in FIELDS if name != "input"]
    extra = result.get("input")
    if isinstance(extra, Mapping):
        names.extend(f"input.{column}" for column in extra)
    return names


def field_of(result: Mapping[str, Any], column: str) -> Any:
    if column.startswith("input."):
        extra = result.get("input")
        return extra.get(column[6:]) if isinstance(extra, Mapping) else None
    return result.get(column)


def sheet_name(code: str, taken: set[str]) -> str:
    """A valid, unused sheet name for ``code`` (31 characters, none of ``[]:*?/\\'``)."""
    base = _NOT_IN_SHEET_NAME.sub("_", _NOT_XML.sub("_", code)).strip() or "check"
    name, n = base[:31], 1
    while name.lower() in taken or name.lower() == "history":
        n += 1
        suffix = f" ({n})"
        name = base[: 31 - len(suffix)] + suffix
    taken.add(name.lower())
    return name


class _Sheet:
    """One logical sheet: a bold header, then rows, continued on a new sheet when full."""

    def __init__(
        self, writer: XlsxWriter, name: str, header: Sequence[str], *, first: bool = False
    ) -> None:
        self.writer = writer
        self.name = name
        self.header = list(header)
        self.rows = 0  # data rows, over every part
        self._parts = 0
        self._room = 0
        self._sheet: WriteOnlyWorksheet | None = None
        self._next_part(0 if first else None)

    def append(self, values: Iterable[Any]) -> None:
        if self._room == 0:
            self.finish()
            self._next_part(None)
        assert self._sheet is not None
        self._sheet.append([self.writer.cell(self._sheet, value) for value in values])
        self._room -= 1
        self.rows += 1

    def _next_part(self, index: int | None) -> None:
        self._parts += 1
        title = self.name if self._parts == 1 else f"{self.name[:24]} ({self._parts})"
        sheet = self._sheet = self.writer.book.create_sheet(title, index)
        assert isinstance(sheet, WriteOnlyWorksheet)
        header = [WriteOnlyCell(sheet, cell_text(text)) for text in self.header]
        for cell in header:
            cell.font = _BOLD
        sheet.freeze_panes = "A2"  # the header stays in view
        sheet.append(header)
        self._room = EXCEL_MAX_ROWS - 1

    def finish(self) -> None:
        """A filter on every column of the part being written (set once its length is known)."""
        if self._sheet is not None and self.header:
            last = get_column_letter(len(self.header))
            # A write-only sheet has it (types-openpyxl does not say so)
            auto_filter = self._sheet.auto_filter  # type: ignore[attr-defined]
            auto_filter.ref = f"A1:{last}{EXCEL_MAX_ROWS - self._room}"


class XlsxWriter:
    """``add`` each result (as results.jsonl has it), then ``close`` to write the workbook."""

    def __init__(self, out: IO[bytes], *, max_check_sheets: int = MAX_CHECK_SHEETS) -> None:
        self.out = out
        self.max_check_sheets = max_check_sheets
        self.book = Workbook(write_only=True)
        self._taken: set[str] = {"results", "checks"}
        self._results: _Sheet | None = None
        self._columns: list[str] = []
        # Created now so that it comes before the checks' own sheets; its rows are written at
        # the end, when the counts are known.
        self._summary = _Sheet(self, "checks", ("check", "kind", "rows", "sheet"))
        self._checks: dict[tuple[str, str], _Sheet | None] = {}  # (kind, code) -> its sheet
        self._counts: dict[tuple[str, str], int] = {}

    @staticmethod
    def cell(sheet: WriteOnlyWorksheet, value: Any) -> Any:
        if isinstance(value, str) and value.startswith(_FORMULA_START):
            # A string cell whatever openpyxl guesses ("=..." is a formula to it), marked as
            # text in Excel (the quote prefix) so that editing it does not make it one either.
            cell = WriteOnlyCell(sheet, value)
            cell.data_type = "s"
            cell.quotePrefix = True
            return cell
        return value

    def add(self, result: Mapping[str, Any]) -> None:
        if self._results is None:
            self._columns = columns_of(result)
            self._results = _Sheet(self, "results", self._columns, first=True)
        self._results.append(cell_value(c, field_of(result, c)) for c in self._columns)
        for kind in ("reasons", "warnings"):
            codes = result.get(kind)
            if isinstance(codes, list):
                for code in dict.fromkeys(str(c) for c in codes):
                    self._check_row(kind, code, result)

    def _check_row(self, kind: str, code: str, result: Mapping[str, Any]) -> None:
        key = (kind, code)
        self._counts[key] = self._counts.get(key, 0) + 1
        if key not in self._checks:
            sheets = sum(1 for sheet in self._checks.values() if sheet is not None)
            self._checks[key] = (
                _Sheet(self, sheet_name(code, self._taken), CHECK_COLUMNS)
                if sheets < self.max_check_sheets
                else None
            )
        sheet = self._checks[key]
        if sheet is not None:
            sheet.append(cell_value(c, result.get(c)) for c in CHECK_COLUMNS)

    def close(self) -> None:
        if self._results is None:  # no rows: the header alone
            self._results = _Sheet(self, "results", columns_of({}), first=True)
        order = sorted(self._counts.items(), key=lambda item: (-item[1], item[0]))
        for (kind, code), n in order:
            sheet = self._checks[kind, code]
            name = None if sheet is None else sheet.name
            self._summary.append((cell_text(code), kind.removesuffix("s"), n, name))
        for sheet in (self._results, self._summary, *self._checks.values()):
            if sheet is not None:
                sheet.finish()
        # Through a temporary file: a zip is written with seeks back to its headers, which a
        # feed's file may not allow (opened for appending, or a stream).
        with tempfile.TemporaryFile() as spool:
            self.book.save(spool)
            spool.seek(0)
            shutil.copyfileobj(spool, self.out)
