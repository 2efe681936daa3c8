from __future__ import annotations

import io
import json
import os
from pathlib import Path

from tests.processes import scrapy_job
from urlcheck.clock import utc_iso
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import Control, ControlAction, JobMeta, JobState
from urlcheck.jobs.lock import JobLock, lock_holder
from urlcheck.jobs.steer import steer

NOW = 1_700_000_000.0


def make_job(jobdir: Path, state: JobState = JobState.PROCESSING, quiet_for: float = 5.0) -> None:
    jobdir.mkdir(parents=True, exist_ok=True)
    JobMeta(
        state=state,
        total_rows=200,
        done_rows=50,
        rate=25.0,
        started_at=utc_iso(NOW - 600),
        last_activity_at=utc_iso(NOW - quiet_for),
        input_path="/data/in.csv",
    ).save(jobdir)


def run(
    action: str, jobdir: Path, *, as_json: bool = False, clock: float = NOW
) -> tuple[ExitCode, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ticks = iter(clock + i for i in range(1000))  # every read of the clock is a second later
    code = steer(
        action,
        jobdir,
        as_json=as_json,
        clock=lambda: next(ticks),
        sleep=lambda _: None,
        out=out,
        err=err,
    )
    return code, out.getvalue(), err.getvalue()


def test_missing_directory_and_non_job(tmp_path: Path) -> None:
    code, out, err = run("status", tmp_path / "nope")
    assert code is ExitCode.INPUT_ERROR and out == ""
    assert err == f"urlcheck: {tmp_path / 'nope'}: no such job directory\n"
    code, _, err = run("pause", tmp_path)
    assert code is ExitCode.INPUT_ERROR
    assert err == f"urlcheck: {tmp_path} is not a urlcheck job directory (no meta.json)\n"


def test_broken_meta_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text("{", encoding="utf-8")
    code, _, err = run("status", tmp_path)
    assert code is ExitCode.INPUT_ERROR
    assert "meta.json is not valid JSON" in err


def test_status_text_and_json(tmp_path: Path) -> None:
    make_job(tmp_path, quiet_for=200.0)
    code, out, _ = run("status", tmp_path)
    assert code is ExitCode.FINISHED
    assert out.splitlines()[0] == f"job {tmp_path}: processing  STUCK: no activity for 3m 20s"
    assert "50 / 200 (25.0%)" in out and "ETA 6m 00s" in out
    assert "none running" in out
    code, out, _ = run("status", tmp_path, as_json=True)
    data = json.loads(out)
    assert data["stuck"] is True and data["running"] is False
    assert (data["done_rows"], data["total_rows"], data["percent"]) == (50, 200, 25.0)


def test_status_shows_the_running_crawl(tmp_path: Path) -> None:
    make_job(tmp_path)
    with JobLock(tmp_path):
        _, out, _ = run("status", tmp_path, as_json=True)
    data = json.loads(out)
    assert data["running"] is True and data["pid"] == os.getpid() and data["stuck"] is False


def test_pause_and_resume_need_a_running_crawl(tmp_path: Path) -> None:
    make_job(tmp_path, JobState.PAUSED)
    code, _, err = run("resume", tmp_path)
    assert code is ExitCode.NOT_RUNNING
    assert "no crawl is running job" in err and "run the crawl command again" in err
    code, _, err = run("pause", tmp_path)
    assert code is ExitCode.NOT_RUNNING
    assert Control.load(tmp_path) is None


def test_pause_writes_control_for_the_running_crawl(tmp_path: Path) -> None:
    make_job(tmp_path)
    with JobLock(tmp_path):
        code, out, _ = run("pause", tmp_path)
        # nobody obeys it in this test: the command says it is not confirmed
        assert code is ExitCode.FINISHED
        assert "has not confirmed it yet" in out
        control = Control.load(tmp_path)
        assert control is not None
        assert (control.action, control.seq) == (ControlAction.PAUSE, 1)
        code, out, _ = run("cancel", tmp_path)
        assert code is ExitCode.FINISHED and "cancel requested (seq 2)" in out
    meta = JobMeta.load(tmp_path)
    assert meta is not None and meta.state is JobState.PROCESSING  # the crawl decides


def test_pause_of_a_paused_job_is_a_no_op(tmp_path: Path) -> None:
    make_job(tmp_path, JobState.PAUSED)
    with JobLock(tmp_path):
        code, out, _ = run("pause", tmp_path)
    assert code is ExitCode.FINISHED and "already paused" in out
    assert Control.load(tmp_path) is None


def test_cancel_of_a_stopped_job_marks_it_cancelled(tmp_path: Path) -> None:
    make_job(tmp_path, JobState.PAUSED)
    code, out, _ = run("cancel", tmp_path)
    assert code is ExitCode.FINISHED and "cancelled (no crawl was running)" in out
    meta = JobMeta.load(tmp_path)
    assert meta is not None
    assert meta.state is JobState.CANCELLED
    assert meta.finish_reason == "cancelled" and meta.finished_at == utc_iso(NOW)
    assert meta.done_rows == 50
    assert lock_holder(tmp_path) is None
    code, out, _ = run("cancel", tmp_path)
    assert code is ExitCode.FINISHED and "already cancelled" in out


def test_the_scrapy_command(tmp_path: Path) -> None:
    jobdir = tmp_path / "job"
    make_job(jobdir, JobState.PAUSED)
    done = scrapy_job("status", str(jobdir), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "paused"
    text = scrapy_job("status", str(jobdir), cwd=tmp_path)
    assert text.returncode == 0 and text.stdout.startswith(f"job {jobdir}: paused")
    missing = scrapy_job("status", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == ExitCode.INPUT_ERROR
    assert "no such job directory" in missing.stderr
    assert scrapy_job("resume", str(jobdir), cwd=tmp_path).returncode == ExitCode.NOT_RUNNING
    usage = scrapy_job("explode", str(jobdir), cwd=tmp_path)
    assert usage.returncode == 2 and "expected one of status, pause, resume, cancel" in usage.stderr
