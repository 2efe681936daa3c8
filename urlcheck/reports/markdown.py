"""The Markdown report: the summary and the failing rows, for a pull request or a ticket."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jinja2 import Environment, PackageLoader, StrictUndefined

from urlcheck.check.printable import printable
from urlcheck.check.result import STATUS_CLASSES
from urlcheck.reports.html import format_number

if TYPE_CHECKING:
    from urlcheck.reports.aggregate import ReportData


def cell(value: object) -> str:
    """Text that cannot break out of a Markdown table cell or start markup, nor reach a
    terminal that shows the file as anything but visible characters."""
    text = printable(" ".join(str(value).split()))
    for char in ("\\", "|", "`", "*", "_", "[", "]", "<", ">"):
        text = text.replace(char, "\\" + char)
    return text


def render_markdown(data: ReportData, *, title: str = "urlcheck report") -> str:
    env = Environment(
        loader=PackageLoader("urlcheck.reports", "templates"),
        autoescape=False,  # noqa: S701 - Markdown, escaped by the cell filter
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(number=format_number, cell=cell)
    env.globals.update(status_classes=STATUS_CLASSES)
    return env.get_template("report.md.j2").render(data=data, title=printable(title))
