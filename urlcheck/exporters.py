"""Feed exports. For spreadsheets, ``-o results.csv`` gives flat columns, the chain as one
readable cell, and no cell that a spreadsheet would run as a formula (CSV injection). For CI
and tickets, ``-o report.md:markdown`` and ``-o junit.xml:junit`` (:mod:`urlcheck.reports`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, BinaryIO

from itemadapter import ItemAdapter
from scrapy.exporters import BaseItemExporter, CsvItemExporter

from urlcheck.results import Result

if TYPE_CHECKING:
    from urlcheck.results import Hop

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: str) -> str:
    """Prefix a cell that starts like a formula with a quote (OWASP's CSV injection advice)."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def chain_cell(chain: list[Hop] | list[dict[str, Any]]) -> str:
    steps = []
    for entry in chain:
        status = entry.get("status")
        steps.append(
            f"{status if status is not None else entry.get('error', 'error')} {entry['url']}"
        )
    return " -> ".join(steps)


def flatten(item: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in item.items():
        if key == "chain":
            flat[key] = chain_cell(value)
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
        from urlcheck.reports.aggregate import Aggregate  # reports import this module

        self.file = file
        self.aggregate = Aggregate()

    def export_item(self, item: Any) -> None:
        result = as_dict(item)
        if isinstance(result.get("row"), int):
            self.aggregate.add(result)

    def finish_exporting(self) -> None:
        from urlcheck.reports.markdown import render_markdown

        self.file.write(render_markdown(self.aggregate.finish()).encode("utf-8"))


class JUnitItemExporter(BaseItemExporter):
    """``-o junit.xml:junit``: one testcase per row with an expected target (docs/reports.md)."""

    def __init__(self, file: BinaryIO, **kwargs: Any) -> None:
        super().__init__(dont_fail=True, **kwargs)
        from urlcheck.reports.junit import JUnitWriter  # reports import this module

        self.writer = JUnitWriter(file)

    def export_item(self, item: Any) -> None:
        result = as_dict(item)
        if isinstance(result.get("row"), int):
            self.writer.add(result)

    def finish_exporting(self) -> None:
        self.writer.close()
