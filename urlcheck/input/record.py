"""One input row as every reader gives it (CSV, list, sitemap, workbook)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Record:
    row: int  # the input's own row number (a CSV's data row, a list's line, a sheet's row...)
    offset: int  # where the reader finds the record again (read_at): a byte offset
    url: str  # raw cell of the URL column
    expected: str | None  # raw cell of the expected-target column; None if no column or empty
    extra: dict[str, str]  # every other column by header name (header-less: col2, col3, ...)
    problem: str | None = None  # set when the row was malformed CSV and was read leniently
