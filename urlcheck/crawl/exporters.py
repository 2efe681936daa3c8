"""Feed exports. For spreadsheets, ``-o results.csv`` gives flat columns, the chain as one
readable cell, and no cell that a spreadsheet would run as a formula (CSV injection);
``-o results.csv:excel`` is the same CSV as Excel opens it with a double click (a BOM, and the
delimiter of URLCHECK_EXCEL_DELIMITER); ``-o results.xlsx`` a workbook with a sheet per check
(:mod:`urlcheck.reports.xlsx`). For CI and tickets, ``-o report.md:markdown`` and
``-o junit.xml:junit`` (:mod:`urlcheck.reports`). Reference: docs/reports.md."""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING, Any, BinaryIO, Self

from itemadapter import ItemAdapter
from scrapy.exporters import BaseItemExporter, CsvItemExporter

from urlcheck.check.result import Result
from urlcheck.crawl.runtime import runtime
from urlcheck.reports.aggregate import Aggregate
from urlcheck.reports.chaintext import chain_text
from urlcheck.reports.junit import JUnitWriter

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from urlcheck.reports.xlsx import XlsxWriter

logger = logging.getLogger(__name__)

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: str) -> str:
    """Prefix a cell that starts like a formula with a quote (OWASP's CSV injection advice)."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def flatten(item: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in item.items():
        if key == "chain":
            flat[key] = chain_text(value)
        elif key == "final_page":  # the same columns on every row (the first row sets them)
            page = value if isinstance(value, dict) else {}
            for name in ("content_type", "title", "canonical"):
                flat[f"final_page.{name}"] = page.get(name)
            flat["final_page.robots"] = "; ".join(
                f"{entry.get('source')}: {', '.join(map(str, entry.get('directives') or ()))}"
                for entry in page.get("robots") or ()
                if isinstance(entry, dict)
            )
        elif key == "input" and isinstance(value, dict):
            for column, cell in value.items():
                flat[f"input.{column}"] = cell
        elif isinstance(value, list):
            flat[key] = "; ".join(str(v) for v in value)
        elif isinstance(value, bool):
            flat[key] = "true" if value else "false"
        else:
            flat[key] = value
    return flat


def as_dict(item: Any) -> dict[str, Any]:
    """A result (or any item) as results.jsonl has it."""
    return item.to_dict() if isinstance(item, Result) else ItemAdapter(item).asdict()


class SafeCsvItemExporter(CsvItemExporter):
    def export_item(self, item: Any) -> None:
        flat = flatten(as_dict(item))
        super().export_item(
            {k: neutralise(v) if isinstance(v, str) else v for k, v in flat.items()}
        )


class ExcelCsvItemExporter(SafeCsvItemExporter):
    """``-o results.csv:excel``: UTF-8 with a BOM (Excel reads it as UTF-8, not the locale's
    code page) and the delimiter Excel's locale expects (``;`` in most of Europe, where a comma
    is the decimal separator): URLCHECK_EXCEL_DELIMITER, or the feed's own
    ``item_export_kwargs: {"delimiter": ","}``."""

    @classmethod
    def from_crawler(cls, crawler: Crawler, file: io.BytesIO, **kwargs: Any) -> Self:
        if "delimiter" not in kwargs:
            kwargs["delimiter"] = runtime(crawler).config.excel_delimiter
        return cls(file, **kwargs)

    def __init__(self, file: io.BytesIO, **kwargs: Any) -> None:  # Scrapy's hint for a file
        kwargs["encoding"] = "utf-8-sig"  # whatever FEED_EXPORT_ENCODING says: the BOM
        super().__init__(file, **kwargs)


class _WriterExporter(BaseItemExporter):
    """A feed whose file a writer of result lines makes (``add`` each, ``close`` at the end)."""

    writer: XlsxWriter | JUnitWriter

    def export_item(self, item: Any) -> None:
        result = as_dict(item)
        if isinstance(result.get("row"), int):
            self.writer.add(result)

    def finish_exporting(self) -> None:
        self.writer.close()


class XlsxItemExporter(_WriterExporter):
    """``-o results.xlsx``: an Excel workbook, streamed (:mod:`urlcheck.reports.xlsx`)."""

    def __init__(self, file: BinaryIO, **kwargs: Any) -> None:
        super().__init__(dont_fail=True, **kwargs)
        _restart(file)
        # openpyxl (18 MB resident) is imported by a crawl that writes a workbook, not by every
        # crawl that loads the feed exporters (Scrapy loads them all when any feed is given)
        from urlcheck.reports.xlsx import XlsxWriter

        self.writer = XlsxWriter(file)


def _restart(file: BinaryIO) -> None:
    """A workbook is one zip file: one cannot be appended to another (a feed without
    ``overwrite`` opens its file for appending), so the file is emptied first."""
    try:
        if file.tell():
            logger.info(
                "%s: an .xlsx cannot be appended to: it is replaced",
                getattr(file, "name", "the feed"),
            )
            file.seek(0)
            file.truncate()
    except (AttributeError, OSError, io.UnsupportedOperation):
        pass  # a stream that cannot tell: a new file (a remote storage's temporary file)


class MarkdownItemExporter(BaseItemExporter):
    """``-o report.md:markdown``: the summary and the failing rows (docs/reports.md)."""

    def __init__(self, file: BinaryIO, **kwargs: Any) -> None:
        super().__init__(dont_fail=True, **kwargs)
        self.file = file
        self.aggregate = Aggregate()

    def export_item(self, item: Any) -> None:
        result = as_dict(item)
        if isinstance(result.get("row"), int):
            self.aggregate.add(result)

    def finish_exporting(self) -> None:
        from urlcheck.reports.markdown import render_markdown  # jinja2 on demand, as openpyxl

        self.file.write(render_markdown(self.aggregate.finish()).encode("utf-8"))


class JUnitItemExporter(_WriterExporter):
    """``-o junit.xml:junit``: one testcase per row with an expected target (docs/reports.md)."""

    def __init__(self, file: BinaryIO, **kwargs: Any) -> None:
        super().__init__(dont_fail=True, **kwargs)
        self.writer = JUnitWriter(file)
