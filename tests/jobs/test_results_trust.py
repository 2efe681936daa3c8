"""Issue 22 "Trust": results and rows a job can rely on. Real crawls in subprocesses against the
local site, on real files and filesystems (a small tmpfs for a full disk)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.jobs.crawls import SETTINGS, read_results, requested_rows, row_url, write_rows
from tests.processes import crawl_argv, run
from urlcheck.jobs.exitcodes import ExitCode

if TYPE_CHECKING:
    import subprocess

    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl


def crawl(csv: Path, jobdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy crawl check -a csv=CSV --jobdir JOBDIR ARGS`` run to its end."""
    return run(
        crawl_argv("-a", f"csv={csv}", "--jobdir", str(jobdir), *args, settings=SETTINGS),
        timeout=90,
    )


# --- point 7: a results path shared by two jobs ------------------------------------------------


def test_a_job_pointed_at_another_job_s_results_checks_every_row(
    tmp_path: Path, site: SiteServer
) -> None:
    """Job B with a new job directory and ``-a out=`` at job A's results took A's rows as done
    ("2 already done") and exited 0 without checking them. Now A's file is set aside as it was,
    and B checks each of its rows."""
    first = write_rows(tmp_path / "a.csv", [row_url(site, "share-a", r, "/") for r in (1, 2)])
    done = crawl(first, tmp_path / "job-a")
    assert done.returncode == ExitCode.FINISHED, done.stderr[-3000:]
    shared = tmp_path / "job-a" / "results.jsonl"
    a_lines = shared.read_bytes()
    assert len(read_results(shared)) == 2

    second = write_rows(tmp_path / "b.csv", [row_url(site, "share-b", r, "/") for r in (1, 2)])
    done = crawl(second, tmp_path / "job-b", "-a", f"out={shared}")
    assert done.returncode == ExitCode.FINISHED, done.stderr[-3000:]
    assert "is not this job's results" in done.stderr
    assert sorted(row for _, row in requested_rows(site, "share-b")) == [1, 2]
    results = read_results(shared)
    assert [(r["row"], r["url"]) for r in sorted(results, key=lambda r: r["row"])] == [
        (r, row_url(site, "share-b", r, "/")) for r in (1, 2)
    ]
    [aside] = (tmp_path / "job-a").glob("results.notthisjob-*.jsonl")
    assert aside.read_bytes() == a_lines  # job A's lines, as they were
