"""Exports survive resume (issue 16 point 5): ``-o out.csv`` on a job stopped with Ctrl-C and
resumed is one clean file covering every row of the job, once, in row order; so is a JSON lines
export; and the same -o on a run without a job is Scrapy's streaming export, unchanged."""

from __future__ import annotations

import csv as csvmodule
import json
import signal
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree

import openpyxl
import pytest

from tests.jobs.crawls import (
    Run,
    assert_exact,
    make_csv,
    read_results,
    row_url,
    wait_lines,
    write_rows,
)
from urlcheck.jobs.exitcodes import ExitCode

if TYPE_CHECKING:
    from pathlib import Path

    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl


def csv_rows(path: Path) -> list[dict[str, str]]:
    text = path.read_text(encoding="utf-8")
    assert text.count("row,url,") == 1, "the header appears more than once"
    return list(csvmodule.DictReader(text.splitlines()))


def test_exports_of_a_job_cover_every_row_once_across_runs(
    tmp_path: Path, site: SiteServer
) -> None:
    rows = 50
    work = tmp_path / "work"
    work.mkdir()
    urls = [
        row_url(site, "export", row, "/chain/2" if row % 7 == 0 else "/delay/0.2")
        for row in range(1, rows + 1)
    ]
    expected = [url.replace("/chain/2?", "/chain/0?") for url in urls]  # every row passes
    write_rows(work / "urls.csv", urls, expected)
    args: tuple[str, ...] = ("-a", "csv=urls.csv", "--jobdir", "job", "-o", "out.csv")
    args += ("-o", "out.jsonl")
    args += ("-o", "junit.xml:junit")
    args += ("-o", "out.xlsx", "-o", "excel.csv:excel")  # the format from the suffix, or named
    results = work / "job" / "results.jsonl"

    first = Run(work, *args)
    wait_lines(results, 12, first)
    first.process.send_signal(signal.SIGINT)
    assert first.wait() == ExitCode.PAUSED, first.stderr()[-3000:]
    done = {r["row"] for r in read_results(results)}
    exported = csv_rows(work / "out.csv")
    assert [int(r["row"]) for r in exported] == sorted(done)  # what is done, in row order

    second = Run(work, *args)
    assert second.wait() == ExitCode.FINISHED, second.stderr()[-3000:]
    by_row = {r["row"]: r for r in assert_exact(results, rows)}
    exported = csv_rows(work / "out.csv")
    assert [int(r["row"]) for r in exported] == list(range(1, rows + 1))
    for line in exported:
        assert line["url"] == by_row[int(line["row"])]["url"]
        assert line["final_status"] == str(by_row[int(line["row"])]["final_status"])
    lines = (work / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["row"] for line in lines] == list(range(1, rows + 1))
    assert f"Exporting {rows} rows of the job" in second.stderr()
    # The reports' formats go through the same machinery: one testcase per row of the job.
    junit = ElementTree.parse(work / "junit.xml").getroot()
    cases = junit.findall(".//testcase")
    assert len(cases) == rows, ElementTree.tostring(junit)[:500]
    assert not junit.findall(".//failure")
    # Excel's: the workbook and the Excel CSV cover the job too, in row order.
    sheet: Any = openpyxl.load_workbook(work / "out.xlsx")["results"]
    assert [r[0] for r in sheet.iter_rows(min_row=2, values_only=True)] == list(range(1, rows + 1))
    with (work / "excel.csv").open(encoding="utf-8-sig", newline="") as f:
        table = list(csvmodule.DictReader(f, delimiter=";"))
    assert [int(r["row"]) for r in table] == list(range(1, rows + 1))


def test_without_a_job_the_export_is_scrapys_streaming_one(
    tmp_path: Path, site: SiteServer
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    make_csv(work / "urls.csv", site, "export-nojob", 10, chains=False)
    (work / "out.xlsx").write_bytes(b"an earlier run's workbook")
    run = Run(work, "-a", "csv=urls.csv", "--no-job", "-o", "out.csv", "-o", "out.xlsx")
    assert run.wait() == ExitCode.FINISHED, run.stderr()[-3000:]
    assert sorted(int(r["row"]) for r in csv_rows(work / "out.csv")) == list(range(1, 11))
    # A workbook cannot be appended to: the earlier file is replaced.
    sheet: Any = openpyxl.load_workbook(work / "out.xlsx")["results"]
    assert sorted(r[0] for r in sheet.iter_rows(min_row=2, values_only=True)) == list(range(1, 11))
    assert "Exporting" not in run.stderr()
