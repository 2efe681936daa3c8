"""Jobs end to end: real ``scrapy crawl check`` subprocesses on a JOBDIR against the local site,
stopped with SIGKILL, SIGINT, SIGINT twice, ``scrapy job pause|resume|cancel``, run twice at
once, resumed with a changed CSV, and run again when finished (cron). Every check compares the
result file row by row with the CSV: each row exactly once, every line valid JSON.
"""

from __future__ import annotations

import io
import json
import signal
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.jobs.crawls import (
    Crawl,
    assert_exact,
    assert_no_duplicates,
    make_csv,
    meta_of,
    read_results,
    requested_rows,
    row_url,
    run_crawl,
    write_rows,
)
from tests.processes import scrapy_job
from urlcheck.clock import parse_utc_iso
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import Control, JobState
from urlcheck.jobs.steer import steer

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl


# --- SIGKILL ---------------------------------------------------------------------------------


def test_sigkill_at_several_points_then_resume_is_exact(tmp_path: Path, site: SiteServer) -> None:
    rows = 90
    csv = make_csv(tmp_path / "in.csv", site, "kill", rows)
    jobdir = tmp_path / "job"
    results_path = jobdir / "results.jsonl"
    for threshold in (10, 35, 60):
        crawl = Crawl(csv, jobdir)
        crawl.wait_lines(threshold)
        crawl.signal(signal.SIGKILL)
        assert crawl.wait() == -signal.SIGKILL
        # What a kill leaves: whole lines, no row twice; the job still reads as processing.
        assert_no_duplicates(read_results(results_path))
        assert meta_of(jobdir).state is JobState.PROCESSING
    # A torn write: the last line loses its second half and its newline.
    data = results_path.read_bytes()
    head, last = data[: data.rindex(b"\n", 0, -1) + 1], data[data.rindex(b"\n", 0, -1) + 1 :]
    torn_row = json.loads(last)["row"]
    torn = last[: len(last) // 2]
    results_path.write_bytes(head + torn)

    crawl = Crawl(csv, jobdir)
    assert crawl.wait() == ExitCode.FINISHED, crawl.stderr()[-3000:]
    assert "ends with a torn line" in crawl.stderr()
    results = assert_exact(results_path, rows)
    assert (jobdir / "results.jsonl.dropped").read_bytes() == torn + b"\n"
    [redone] = [r for r in results if r["row"] == torn_row]
    assert redone["final_status"] == 200
    assert results_path.read_bytes().count(b'{"row": %d, ' % torn_row) == 1
    # Chains cut off mid-way were restarted from their first URL and completed.
    for result in results:
        if result["row"] % 7 == 0:
            assert result["hops"] == 2 and "/chain/0?" in result["final_url"], result
    meta = meta_of(jobdir)
    assert (meta.state, meta.done_rows, meta.total_rows) == (JobState.DONE, rows, rows)


# --- SIGINT ----------------------------------------------------------------------------------


def test_one_sigint_pauses_and_resume_completes(tmp_path: Path, site: SiteServer) -> None:
    rows = 80
    csv = make_csv(tmp_path / "in.csv", site, "int1", rows)
    jobdir = tmp_path / "job"
    crawl = Crawl(csv, jobdir)
    crawl.wait_lines(20)
    crawl.signal(signal.SIGINT)
    assert crawl.wait(timeout=20) == ExitCode.PAUSED, crawl.stderr()[-3000:]
    meta = meta_of(jobdir)
    assert meta.state is JobState.PAUSED and meta.finish_reason == "shutdown"
    done = assert_no_duplicates(read_results(jobdir / "results.jsonl"))
    assert meta.done_rows == len(done) < rows

    resume = Crawl(csv, jobdir)
    assert resume.wait() == ExitCode.FINISHED, resume.stderr()[-3000:]
    assert f"{len(done)} already done" in resume.stderr()
    assert_exact(jobdir / "results.jsonl", rows)
    # The resume requested only what was not done before the stop.
    again = {row for t, row in requested_rows(site, "int1") if t >= resume.started}
    assert again == set(range(1, rows + 1)) - done
    assert meta_of(jobdir).state is JobState.DONE


def test_two_sigints_force_the_stop_and_resume_completes(tmp_path: Path, site: SiteServer) -> None:
    rows = 20
    # Rows 11-15 (one per host, each host's third) take 3 s: they are in flight when the first
    # SIGINT comes and keep the graceful stop waiting, until the second one forces it.
    slow = set(range(11, 16))
    urls = [
        row_url(site, "int2", row, "/delay/3" if row in slow else "/delay/0.2")
        for row in range(1, rows + 1)
    ]
    csv = write_rows(tmp_path / "in.csv", urls)
    jobdir = tmp_path / "job"
    crawl = Crawl(csv, jobdir)
    crawl.wait_lines(10)
    time.sleep(0.5)  # the slow rows have left (one 0.05 s delay after the fast ones ended)
    crawl.signal(signal.SIGINT)
    time.sleep(0.3)
    crawl.signal(signal.SIGINT)
    code = crawl.wait(timeout=20)
    stderr = crawl.stderr()
    assert "forcing unclean shutdown" in stderr, stderr[-3000:]
    assert code == ExitCode.PAUSED, stderr[-3000:]
    assert not meta_of(jobdir).state.terminal
    # Forced: the slow rows in flight were not waited for (a graceful stop writes their lines).
    done = assert_no_duplicates(read_results(jobdir / "results.jsonl"))
    assert not done & slow, sorted(done & slow)

    code, stderr = run_crawl(csv, jobdir)
    assert code == ExitCode.FINISHED, stderr[-3000:]
    assert_exact(jobdir / "results.jsonl", rows)
    assert meta_of(jobdir).state is JobState.DONE


# --- refused runs: another CSV, another process ------------------------------------------------


def job_files(jobdir: Path) -> dict[str, bytes]:
    # job.lock is left out: taking the lock (to look at the job safely) writes the pid into it.
    return {p.name: p.read_bytes() for p in sorted(jobdir.iterdir()) if p.name != "job.lock"}


def test_resume_with_a_changed_csv_is_refused_and_touches_nothing(
    tmp_path: Path, site: SiteServer
) -> None:
    rows = 60
    csv = make_csv(tmp_path / "in.csv", site, "csv", rows)
    jobdir = tmp_path / "job"
    crawl = Crawl(csv, jobdir)
    crawl.wait_lines(10)
    crawl.signal(signal.SIGKILL)
    crawl.wait()
    before = job_files(jobdir)
    assert {"results.jsonl", "meta.json"} <= before.keys()
    original = csv.read_bytes()
    changed = original.replace(b"r=3\n", b"r=3&changed=1\n")
    assert changed != original
    csv.write_bytes(changed)

    code, stderr = run_crawl(csv, jobdir)
    assert code == ExitCode.INPUT_ERROR
    message = [line for line in stderr.splitlines() if line.startswith("urlcheck: ")]
    assert len(message) == 1, stderr[-3000:]
    assert str(jobdir) in message[0] and str(csv) in message[0], message
    assert "Spider opened" not in stderr
    assert job_files(jobdir) == before

    csv.write_bytes(original)
    code, stderr = run_crawl(csv, jobdir)
    assert code == ExitCode.FINISHED, stderr[-3000:]
    assert_exact(jobdir / "results.jsonl", rows)


def test_a_second_process_on_the_job_exits_locked(tmp_path: Path, site: SiteServer) -> None:
    rows = 60
    csv = make_csv(tmp_path / "in.csv", site, "lock", rows)
    jobdir = tmp_path / "job"
    first = Crawl(csv, jobdir, name="first")
    first.wait_lines(5)
    # Paused, the first crawl keeps the job however slowly the second process starts (under
    # coverage and load, start-up alone can outlast the other rows).
    # (Steered from here: `scrapy job pause` as a process is test_live_pause_status_resume's.)
    said = io.StringIO()
    assert steer("pause", jobdir, out=said) == ExitCode.FINISHED
    assert f"job {jobdir} paused" in said.getvalue()  # confirmed by the crawl
    second = Crawl(csv, jobdir, name="second")
    code = second.wait(timeout=30)
    stderr = second.stderr()
    assert code == ExitCode.LOCKED, stderr[-3000:]
    assert f"job {jobdir} is in use by process {first.pid}" in stderr, stderr[-3000:]
    assert "Spider opened" not in stderr
    assert first.process.poll() is None  # untouched by the refused one, which did not wait

    assert steer("resume", jobdir, out=io.StringIO()) == ExitCode.FINISHED
    assert first.wait() == ExitCode.FINISHED, first.stderr()[-3000:]
    assert_exact(jobdir / "results.jsonl", rows)
    assert meta_of(jobdir).state is JobState.DONE


# --- live control ----------------------------------------------------------------------------


def control_time(jobdir: Path) -> float:
    control = Control.load(jobdir)
    assert control is not None
    return parse_utc_iso(control.at)


def test_live_pause_status_resume(tmp_path: Path, site: SiteServer) -> None:
    rows = 60
    csv = make_csv(tmp_path / "in.csv", site, "pause", rows)
    jobdir = tmp_path / "job"
    crawl = Crawl(csv, jobdir)
    crawl.wait_lines(5)

    # Paused from this process: a command's start-up (1-2 s on a busy machine) is most of the
    # 3 s this crawl runs for. `scrapy job status` and `resume` below are the commands.
    said = io.StringIO()
    assert steer("pause", jobdir, out=said) == ExitCode.FINISHED
    assert f"job {jobdir} paused" in said.getvalue()  # confirmed by the crawl
    paused_at = control_time(jobdir)
    status = scrapy_job("status", str(jobdir), "--json")
    assert status.returncode == ExitCode.FINISHED, status.stderr
    report = json.loads(status.stdout)
    assert report["state"] == "paused" and report["running"] is True
    assert report["pid"] == crawl.pid and report["stuck"] is False
    time.sleep(max(0.0, paused_at + 3.0 - time.time()))  # a pause long enough to see
    lines_while_paused = crawl.lines()
    assert lines_while_paused < rows and crawl.process.poll() is None

    resumed = scrapy_job("resume", str(jobdir))
    assert resumed.returncode == ExitCode.FINISHED, resumed.stderr
    assert f"job {jobdir} processing" in resumed.stdout
    resumed_at = control_time(jobdir)
    assert crawl.wait() == ExitCode.FINISHED, crawl.stderr()[-3000:]
    assert_exact(jobdir / "results.jsonl", rows)
    assert meta_of(jobdir).state is JobState.DONE

    arrivals = requested_rows(site, "pause")
    quiet = [(t, row) for t, row in arrivals if paused_at + 1.5 < t < resumed_at]
    assert not quiet, f"{len(quiet)} requests reached the site while paused: {quiet[:5]}"
    assert any(t > resumed_at for t, _ in arrivals)  # the crawl went on after the resume
    assert len(arrivals) >= rows
    stderr = crawl.stderr()
    assert "paused (control seq 1)" in stderr and "resumed (control seq 2)" in stderr


def test_live_cancel_keeps_results(tmp_path: Path, site: SiteServer) -> None:
    rows = 150
    csv = make_csv(tmp_path / "in.csv", site, "cancel", rows)
    jobdir = tmp_path / "job"
    crawl = Crawl(csv, jobdir)
    crawl.wait_lines(20)
    cancelled = scrapy_job("cancel", str(jobdir))
    assert cancelled.returncode == ExitCode.FINISHED, cancelled.stderr
    assert crawl.wait(timeout=20) == ExitCode.CANCELLED, crawl.stderr()[-3000:]
    meta = meta_of(jobdir)
    assert meta.state is JobState.CANCELLED and meta.finish_reason == "cancelled"
    done = assert_no_duplicates(read_results(jobdir / "results.jsonl"))
    assert 20 <= len(done) < rows and done <= set(range(1, rows + 1))
    assert meta.done_rows == len(done)


# --- cron and exit codes ---------------------------------------------------------------------


def test_running_a_finished_job_again_starts_a_fresh_run(tmp_path: Path, site: SiteServer) -> None:
    rows = 30
    urls = [row_url(site, "cron", row, "/ok") for row in range(1, rows + 1)]
    csv = write_rows(tmp_path / "in.csv", urls)
    jobdir = tmp_path / "job"
    code, stderr = run_crawl(csv, jobdir)
    assert code == ExitCode.FINISHED, stderr[-3000:]
    first = (jobdir / "results.jsonl").read_bytes()
    assert_exact(jobdir / "results.jsonl", rows)

    code, stderr = run_crawl(csv, jobdir)
    assert code == ExitCode.FINISHED, stderr[-3000:]
    assert "starting a fresh run" in stderr
    [kept] = jobdir.glob("results.*.jsonl")
    assert kept.read_bytes() == first
    [kept_meta] = jobdir.glob("meta.*.json")
    assert json.loads(kept_meta.read_text(encoding="utf-8"))["state"] == "done"
    assert_exact(jobdir / "results.jsonl", rows)
    assert (jobdir / "results.jsonl").read_bytes() != first
    meta = meta_of(jobdir)
    assert (meta.state, meta.done_rows) == (JobState.DONE, rows)
    # Every row was checked again, once per run.
    assert Counter(Counter(row for _, row in requested_rows(site, "cron")).values()) == {2: rows}


def test_exit_code_three_on_a_failed_verdict_zero_when_all_pass(
    tmp_path: Path, site: SiteServer
) -> None:
    rows = 10
    urls = [row_url(site, "verdict", row, "/chain/1") for row in range(1, rows + 1)]
    good = [u.replace("/chain/1?", "/chain/0?") for u in urls]
    passing = write_rows(tmp_path / "pass.csv", urls, good)
    code, stderr = run_crawl(passing, tmp_path / "pass-job")
    assert code == ExitCode.FINISHED, stderr[-3000:]
    results = assert_exact(tmp_path / "pass-job" / "results.jsonl", rows)
    assert {r["verdict"] for r in results} == {"pass"}

    wrong = [*good]
    wrong[3] = row_url(site, "verdict", 4, "/ok")
    failing = write_rows(tmp_path / "fail.csv", urls, wrong)
    code, stderr = run_crawl(failing, tmp_path / "fail-job")
    assert code == ExitCode.FAILED_VERDICTS, stderr[-3000:]
    results = assert_exact(tmp_path / "fail-job" / "results.jsonl", rows)
    assert {r["row"] for r in results if r["verdict"] == "fail"} == {4}
    meta = meta_of(tmp_path / "fail-job")
    assert meta.state is JobState.DONE and meta.counts.by_verdict["fail"] == 1
