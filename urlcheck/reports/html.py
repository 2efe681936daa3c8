"""The self-contained HTML report: one file, CSS, script and SVG charts inline, no network.

A Content-Security-Policy in the page forbids every fetch, so the report opens offline and a
hostile URL in the results can neither load anything nor run (jinja2 escapes every value).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from urlcheck.check.result import STATUS_CLASSES

if TYPE_CHECKING:
    from urlcheck.reports.aggregate import ReportData

STATUS_COLOURS = {
    "2xx": "#2e7d32",
    "3xx": "#1565c0",
    "4xx": "#ef6c00",
    "5xx": "#c62828",
    "other": "#6a1b9a",
    "error": "#455a64",
}
VERDICT_COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "none": "#90a4ae"}


def format_number(value: float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _share(part: int, whole: int) -> str:
    return "-" if not whole else f"{100.0 * part / whole:.1f}%"


def _heat(rate: float | None, *, good_high: bool = True) -> str:
    """A background colour from red (bad) to green (good); grey without data."""
    if rate is None:
        return "#eceff1"
    good = rate if good_high else 1.0 - rate
    hue = round(120 * max(0.0, min(1.0, good)))
    return f"hsl({hue}, 65%, 78%)"


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("urlcheck.reports", "templates"),
        autoescape=select_autoescape(("html", "j2"), default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(number=format_number, percent=_percent, heat=_heat)
    env.globals.update(
        share=_share,
        status_colours=STATUS_COLOURS,
        verdict_colours=VERDICT_COLOURS,
        status_classes=STATUS_CLASSES,
    )
    return env


def render_html(
    data: ReportData, *, title: str = "urlcheck report", now: datetime | None = None
) -> str:
    generated = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    template = environment().get_template("report.html.j2")
    return template.render(data=data, title=title, generated=generated)
