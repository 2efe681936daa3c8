"""A job's results as files to download: CSV, an Excel workbook, JSON lines, the HTML report,
Markdown, JUnit.

Each is made from results.jsonl up to the end of its last whole line when asked (a running
job's file keeps growing; the answer's length is fixed). Every download is an attachment; the
HTML report, the one with a script of its own, also gets ``Content-Security-Policy: sandbox``
so that even opened in place it runs in an origin of its own. The report names its source by
the job's name, never by a server path.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from urlcheck.serve.results import whole_lines

FORMATS = {
    "csv": ("results.csv", "text/csv; charset=utf-8"),
    "xlsx": (
        "results.xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
    "jsonl": ("results.jsonl", "application/x-ndjson; charset=utf-8"),
    "html": ("report.html", "text/html; charset=utf-8"),
    "md": ("report.md", "text/markdown; charset=utf-8"),
    "junit": ("junit.xml", "application/xml; charset=utf-8"),
}
SANDBOX_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def disposition(job_name: str, fmt: str) -> str:
    """``attachment`` with an ASCII file name and the UTF-8 one (RFC 6266)."""
    suffix = FORMATS[fmt][0]
    full = f"{job_name}-{suffix}"
    plain = unicodedata.normalize("NFKD", full).encode("ascii", "ignore").decode("ascii")
    ascii_name = _UNSAFE.sub("_", plain).strip("._-") or suffix
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(full, safe='')}"


def whole_lines_end(path: Path) -> int:
    """The end of the last whole line of ``path`` now (0 when there is none)."""
    try:
        size = path.stat().st_size
    except OSError:
        return 0
    with path.open("rb") as source:
        position = size
        while position > 0:
            start = max(0, position - (1 << 16))
            source.seek(start)
            chunk = source.read(position - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                return start + newline + 1
            position = start
    return 0


def jsonl(path: Path) -> Iterator[bytes]:
    end = whole_lines_end(path)
    for _, line in whole_lines(path, 0, end):
        yield line


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    for line in jsonl(path):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            yield row


def csv_rows(path: Path) -> Iterator[bytes]:
    """The results as the crawl's ``-o results.csv`` writes them: flat columns, the chain as
    one cell, no cell a spreadsheet would run as a formula."""
    from urlcheck.crawl.exporters import flatten, neutralise

    buffer = io.StringIO()
    writer: csv.DictWriter[str] | None = None
    for row in _rows(path):
        flat = {k: neutralise(v) if isinstance(v, str) else v for k, v in flatten(row).items()}
        if writer is None:
            writer = csv.DictWriter(buffer, fieldnames=list(flat), extrasaction="ignore")
            writer.writeheader()
        writer.writerow(flat)
        if buffer.tell() > 1 << 16:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode("utf-8")


def xlsx_file(path: Path) -> Iterator[bytes]:
    """The results as the crawl's ``-o results.xlsx`` writes them (urlcheck.reports.xlsx),
    made in a temporary file, then sent in chunks."""
    import tempfile

    from urlcheck.reports.xlsx import XlsxWriter

    with tempfile.TemporaryFile() as spool:
        writer = XlsxWriter(spool)
        for row in _rows(path):
            if isinstance(row.get("row"), int):
                writer.add(row)
        writer.close()
        spool.seek(0)
        while chunk := spool.read(1 << 16):
            yield chunk


def report(jobdir: Path, results: Path, fmt: str, title: str) -> bytes:
    """The HTML or Markdown report, or the JUnit XML, of the job's results."""
    from urlcheck.reports.build import build_report
    from urlcheck.reports.html import render_html
    from urlcheck.reports.junit import JUnitWriter
    from urlcheck.reports.markdown import render_markdown
    from urlcheck.reports.source import ResultsSource

    source = results if results.parent != jobdir else jobdir
    if fmt == "junit":
        out = io.BytesIO()
        writer = JUnitWriter(out)
        for row in ResultsSource.open(source).rows():
            writer.add(row)
        writer.close()
        return out.getvalue()
    data = build_report(source)
    data.source = title  # never the server's path
    if fmt == "md":
        return render_markdown(data, title=title).encode("utf-8")
    return render_html(data, title=title).encode("utf-8")
