"""Feed export for spreadsheets: ``-o results.csv`` gives flat columns, the chain as one
readable cell, and no cell that a spreadsheet would run as a formula (CSV injection)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exporters import CsvItemExporter

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


class SafeCsvItemExporter(CsvItemExporter):
    def export_item(self, item: Any) -> None:
        data = item.to_dict() if isinstance(item, Result) else ItemAdapter(item).asdict()
        flat = flatten(data)
        super().export_item(
            {k: neutralise(v) if isinstance(v, str) else v for k, v in flat.items()}
        )
