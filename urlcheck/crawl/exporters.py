"""Feed exports. For spreadsheets, ``-o results.csv`` gives flat columns, the chain as one
readable cell, and no cell that a spreadsheet would run as a formula (CSV injection). For CI
and tickets, ``-o report.md:markdown`` and ``-o junit.xml:junit`` (:mod:`urlcheck.reports`)."""

from __future__ import annotations

from typing import Any, BinaryIO

from itemadapter import ItemAdapter
from scrapy.exporters import BaseItemExporter, CsvItemExporter

from urlcheck.check.result import Result
from urlcheck.reports.aggregate import Aggregate
from urlcheck.reports.chaintext import chain_text
from urlcheck.reports.junit import JUnitWriter
from urlcheck.reports.markdown import render_markdown

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
        self.file.write(render_markdown(self.aggregate.finish()).encode("utf-8"))


class JUnitItemExporter(BaseItemExporter):
    """``-o junit.xml:junit``: one testcase per row with an expected target (docs/reports.md)."""

    def __init__(self, file: BinaryIO, **kwargs: Any) -> None:
        super().__init__(dont_fail=True, **kwargs)
        self.writer = JUnitWriter(file)

    def export_item(self, item: Any) -> None:
        result = as_dict(item)
        if isinstance(result.get("row"), int):
            self.writer.add(result)

    def finish_exporting(self) -> None:
        self.writer.close()
