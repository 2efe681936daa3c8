"""A report from a job directory or results file, in one of the formats people read."""

from __future__ import annotations

from pathlib import Path

from urlcheck.check.manytoone import LandingTally
from urlcheck.reports.aggregate import Aggregate, ReportData
from urlcheck.reports.html import render_html
from urlcheck.reports.junit import JUnitWriter
from urlcheck.reports.markdown import render_markdown
from urlcheck.reports.source import ResultsSource

FORMATS = ("html", "markdown", "junit")
_SUFFIXES = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}


def output_format(output: str) -> tuple[Path, str]:
    """``FILE`` or ``FILE:FORMAT`` (as Scrapy's ``-o``); the format follows the suffix."""
    name, colon, fmt = output.rpartition(":")
    if colon and fmt in FORMATS and name:
        return Path(name), fmt
    path = Path(output)
    if path.suffix.lower() == ".xml":
        return path, "junit"
    return path, _SUFFIXES.get(path.suffix.lower(), "html")


def build_report(path: Path, *, failing_cap: int = 1000) -> ReportData:
    source = ResultsSource.open(path)
    proxies = source.proxies()
    aggregate = Aggregate(
        failing_cap=failing_cap, proxies=proxies is not None, many_to_one=source.many_to_one()
    )
    for row in source.rows():
        aggregate.add(row)
    data = aggregate.finish(
        source=str(source.path),
        bad_lines=source.bad_lines,
        learned=source.hosts(),
        proxies=proxies,
    )
    job = source.job()
    if job is not None:
        data.job_state, data.input_rows = job
    return data


def _many_to_one(source: ResultsSource) -> frozenset[int]:
    """The rows flagged many_to_one: a first pass over the results (it needs every row)."""
    thresholds = source.many_to_one()
    if thresholds is None:
        return frozenset()
    tally = LandingTally(*thresholds)
    for row in source.rows():
        tally.add_line(row)
    return tally.result().rows


def write_report(
    path: Path, output: Path, fmt: str, *, failing_cap: int = 1000, title: str | None = None
) -> int:
    """Write the report; returns the number of rows it covers."""
    output.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "junit":
        source = ResultsSource.open(path)
        rows = 0
        with output.open("wb") as out:
            writer = JUnitWriter(out, many_to_one=_many_to_one(source))
            for row in source.rows():
                rows += 1
                writer.add(row)
            writer.close()
        return rows
    data = build_report(path, failing_cap=failing_cap)
    title = title or "urlcheck report"
    text = (
        render_markdown(data, title=title) if fmt == "markdown" else render_html(data, title=title)
    )
    output.write_text(text, encoding="utf-8")
    return data.rows
