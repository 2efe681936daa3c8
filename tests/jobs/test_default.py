"""Every run is a job, and a job is its directory (issue 16 points 1 and 6), end to end with
real ``scrapy crawl check`` processes run from a directory of their own:

- no JOBDIR: the job lives in ``.urlcheck/jobs/<csv stem>-<hash>/``; Ctrl-C, then the same
  command resumes; ``--no-job`` runs without one (results.jsonl in the current directory);
- the job keeps its own copy of the CSV: it resumes with the CSV gone, from a copy of its
  directory elsewhere (as on another machine), and an edited CSV is refused with one line
  that says what to do.
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.jobs.crawls import (
    Run,
    assert_exact,
    make_csv,
    read_results,
    wait_lines,
)
from tests.processes import scrapy_job
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import JobMeta, JobState
from urlcheck.jobs.place import default_jobdir

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl


def test_a_run_without_jobdir_is_a_job_and_the_same_command_resumes(
    tmp_path: Path, site: SiteServer
) -> None:
    rows = 40
    work = tmp_path / "work"
    work.mkdir()
    csv = make_csv(work / "urls.csv", site, "default", rows)
    jobdir = default_jobdir(csv, work)
    assert jobdir.parent == work / ".urlcheck" / "jobs" and jobdir.name.startswith("urls-")
    results = jobdir / "results.jsonl"

    first = Run(work, "-a", "csv=urls.csv")
    wait_lines(results, 10, first)
    first.process.send_signal(signal.SIGINT)
    assert first.wait() == ExitCode.PAUSED, first.stderr()[-3000:]
    meta = JobMeta.load(jobdir)
    assert meta is not None and meta.state is JobState.PAUSED
    done = len(read_results(results))
    # `scrapy job status` takes the CSV for its default job.
    status = scrapy_job("status", "urls.csv", cwd=work)
    assert status.returncode == ExitCode.FINISHED, status.stderr
    assert f"job {jobdir}: paused" in status.stdout and f"{done:,} / {rows}" in status.stdout

    again = Run(work, "-a", "csv=urls.csv")
    assert again.wait() == ExitCode.FINISHED, again.stderr()[-3000:]
    assert f"{done} already done" in again.stderr()
    assert_exact(results, rows)
    assert not (work / "results.jsonl").exists()
    assert [p.name for p in (work / ".urlcheck" / "jobs").iterdir()] == [jobdir.name]

    # --no-job: no job directory, results where they always were without a job.
    plain = Run(work, "-a", "csv=urls.csv", "--no-job")
    assert plain.wait() == ExitCode.FINISHED, plain.stderr()[-3000:]
    assert_exact(work / "results.jsonl", rows)
    assert [p.name for p in (work / ".urlcheck" / "jobs").iterdir()] == [jobdir.name]
    # -a out= still puts the results where asked; the job records where.
    elsewhere = Run(work, "-a", "csv=urls.csv", "-a", "out=here.jsonl", "--jobdir", "outjob")
    assert elsewhere.wait() == ExitCode.FINISHED, elsewhere.stderr()[-3000:]
    assert_exact(work / "here.jsonl", rows)
    assert not (work / "outjob" / "results.jsonl").exists()
    # --jobdir names the job, as -s JOBDIR does.
    named = Run(work, "-a", "csv=urls.csv", "--jobdir", "mine")
    assert named.wait() == ExitCode.FINISHED, named.stderr()[-3000:]
    assert_exact(work / "mine" / "results.jsonl", rows)


def test_a_job_resumes_from_its_own_directory_alone(tmp_path: Path, site: SiteServer) -> None:
    rows = 40
    work = tmp_path / "work"
    work.mkdir()
    csv = make_csv(work / "urls.csv", site, "selfcontained", rows)
    original = csv.read_bytes()
    jobdir = work / "job"
    first = Run(work, "-a", "csv=urls.csv", "--jobdir", "job")
    wait_lines(jobdir / "results.jsonl", 10, first)
    first.process.send_signal(signal.SIGKILL)
    first.wait()
    assert (jobdir / "input.csv").read_bytes() == original

    # The user edits the CSV: refused, one line saying what to do, nothing touched.
    csv.write_bytes(original.replace(b"r=5\n", b"r=5&edited=1\n"))
    before = {p.name: p.read_bytes() for p in jobdir.iterdir() if p.name != "job.lock"}
    edited = Run(work, "-a", "csv=urls.csv", "--jobdir", "job")
    assert edited.wait() == ExitCode.INPUT_ERROR
    [line] = [x for x in edited.stderr().splitlines() if x.startswith("urlcheck: ")]
    assert "is not the CSV job" in line and "leave out -a csv" in line, line
    assert "scrapy job cancel" in line
    assert {p.name: p.read_bytes() for p in jobdir.iterdir() if p.name != "job.lock"} == before

    # The CSV is gone and the job directory moved to another place (another machine).
    csv.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.move(jobdir, elsewhere / "job")
    resumed = Run(elsewhere, "--jobdir", "job")
    assert resumed.wait() == ExitCode.FINISHED, resumed.stderr()[-3000:]
    assert_exact(elsewhere / "job" / "results.jsonl", rows)
    meta = JobMeta.load(elsewhere / "job")
    assert meta is not None and meta.state is JobState.DONE
    assert meta.input_path == str(csv)  # where the rows first came from, for the record

    # No CSV and no job copy: one clear line.
    missing = Run(elsewhere, "--jobdir", "nothing-here")
    assert missing.wait() == ExitCode.INPUT_ERROR
    assert "keeps its own copy" in missing.stderr()


def test_a_job_directory_that_cannot_be_made_is_one_line(tmp_path: Path, site: SiteServer) -> None:
    work = tmp_path / "work"
    work.mkdir()
    make_csv(work / "urls.csv", site, "nodir", 3)
    (work / "afile").write_text("not a directory")
    run = Run(work, "-a", "csv=urls.csv", "--jobdir", "afile/job")
    assert run.wait() == ExitCode.INPUT_ERROR
    [line] = [x for x in run.stderr().splitlines() if x.startswith("urlcheck: ")]
    assert "cannot create the job directory afile/job" in line and "--no-job" in line
    assert "Traceback" not in run.stderr()


def test_the_default_job_of_standard_input_and_of_a_sitemap_url(tmp_path):
    from urlcheck.jobs.place import default_jobdir

    stdin = default_jobdir("-", cwd=tmp_path)
    assert stdin.parent == tmp_path / ".urlcheck" / "jobs" and stdin.name.startswith("stdin-")
    remote = default_jobdir("https://a.example/sitemap_index.xml?page=2", cwd=tmp_path)
    assert remote.name.startswith("sitemap_index-")
    assert remote != default_jobdir("https://b.example/sitemap_index.xml?page=2", cwd=tmp_path)
    assert default_jobdir("https://a.example/", cwd=tmp_path).name.startswith("a-")
