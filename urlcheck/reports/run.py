"""``scrapy job report`` and ``scrapy job diff`` as operations: paths in, a file written, a line
on ``out`` or a problem on ``err``, and the exit code (docs/reports.md)."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import TextIO

from urlcheck.check.printable import printable
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.reports.build import output_format, write_report
from urlcheck.reports.diff import DiffSummary, diff, format_change, format_summary
from urlcheck.reports.source import SourceError

# `scrapy job diff`'s exit code when something regressed (pass -> fail, 2xx -> 4xx/5xx, new error)
DIFF_REGRESSED = 1


def run_report(
    path: Path, output: str | None, *, out: TextIO, err: TextIO, title: str | None = None
) -> int:
    """``scrapy job report PATH [-o FILE[:FORMAT]]``: HTML by default, next to the results."""
    try:
        default = (path if path.is_dir() else path.parent) / "report.html"
        target, fmt = output_format(output) if output else (default, "html")
        rows = write_report(path, target, fmt, title=title)
    except (SourceError, OSError) as exc:
        err.write(f"urlcheck: {printable(exc)}\n")
        return ExitCode.INPUT_ERROR
    out.write(f"{fmt} report of {rows:,} rows written to {printable(target)}\n")
    return ExitCode.FINISHED


def run_diff(old: Path, new: Path, output: str | None, *, out: TextIO, err: TextIO) -> int:
    """``scrapy job diff OLD NEW [-o FILE]``: changed rows in row order, as a table (and JSON
    lines)."""
    try:
        changes = diff(old, new)  # both checked before the output file is made
        with Path(output).open("w", encoding="utf-8") if output else nullcontext() as lines:
            regressed = False
            for change in changes:
                if isinstance(change, DiffSummary):
                    out.write(format_summary(change) + "\n")
                    regressed = change.regressed > 0
                    continue
                out.write(format_change(change) + "\n")
                if lines is not None:
                    lines.write(json.dumps(change.to_dict(), ensure_ascii=False) + "\n")
    except (SourceError, OSError, ValueError) as exc:
        err.write(f"urlcheck: {printable(exc)}\n")
        return ExitCode.INPUT_ERROR
    return DIFF_REGRESSED if regressed else ExitCode.FINISHED
