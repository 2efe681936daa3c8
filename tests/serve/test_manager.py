"""The job manager's rules, driven tick by tick with a manual clock. The supervisor it starts
is a real process (a small shell script standing where `python -m urlcheck job run DIR` would
be) that exits with the code the test writes into the job directory, or runs until told."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from urlcheck.clock import ManualClock
from urlcheck.jobs.files import JobMeta, JobState
from urlcheck.jobs.lock import JobLock
from urlcheck.serve.config import ServeConfig
from urlcheck.serve.manager import JobManager
from urlcheck.serve.record import ServeRecord, Want
from urlcheck.serve.upload import JobOptions
from urlcheck.serve.views import State

SCRIPT = """#!/bin/sh
# argv: -m urlcheck job run DIR ...
dir="$5"
echo "$@" > "$dir/argv"
while [ -e "$dir/hold" ]; do sleep 0.05; done
exit "$(cat "$dir/exit-code" 2>/dev/null || echo 0)"
"""


@pytest.fixture
def python(tmp_path: Path) -> str:
    path = tmp_path / "supervisor.sh"
    path.write_text(SCRIPT)
    path.chmod(0o755)
    return str(path)


def make(tmp_path: Path, python: str, **config) -> tuple[JobManager, ManualClock]:
    clock = ManualClock()
    options = {"jobs_root": tmp_path / "jobs", "recover_after": 15.0, **config}
    manager = JobManager(ServeConfig(**options), monotonic=clock, python=python)
    return manager, clock


def new_job(
    manager: JobManager, sites: list[str], *, code: int | None = None, hold: bool = False
) -> tuple[str, Path]:
    """A job as an upload makes it; its supervisor will exit ``code``, or run while held."""
    job_id, jobdir = manager.new_job_dir()
    (jobdir / "input.csv").write_text("url\nhttp://127.0.0.2:9/\n")
    if code is not None:
        (jobdir / "exit-code").write_text(str(code))
    if hold:
        (jobdir / "hold").write_text("")
    manager.create(
        job_id,
        name=job_id,
        csv_name="u.csv",
        rows=3,
        sites=sites,
        options=JobOptions(user_agent="bingbot", max_hops=3),
    )
    return job_id, jobdir


def settle(manager: JobManager, job_id: str, predicate, what: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        manager.tick()
        status = manager.status(job_id)
        manager.jobs[job_id].cached = None
        if predicate(status):
            return status
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {status}"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("code", "state", "failed"),
    [
        (0, "pending", None),  # its crawl wrote no meta: nothing ran, nothing failed
        (9, "failed", "the crawl kept dying or getting stuck"),
        (1, "failed", "the crawl ended with exit code 1"),
        (2, "failed", "the crawl refused the job's input or settings"),
    ],
)
def test_how_a_supervisor_ended_is_recorded(tmp_path, python, code, state, failed):
    manager, _ = make(tmp_path, python)
    (tmp_path / "jobs").mkdir()
    job_id, jobdir = new_job(manager, ["a.example"], code=code)
    status = settle(manager, job_id, lambda s: not s["running"], "the supervisor's end")
    argv = (jobdir / "argv").read_text().split()
    assert argv[:4] == ["-m", "urlcheck", "job", "run"]
    assert "URLCHECK_USER_AGENT=bingbot" in argv and "URLCHECK_MAX_HOPS=3" in argv
    assert "URLCHECK_BLOCK_PRIVATE_INPUT=False" in argv
    assert argv[-3:] == ["--", "-a", f"csv={jobdir / 'input.csv'}"]
    assert status["state"] == state
    record = ServeRecord.load(jobdir)
    assert record is not None and record.supervisor_pid is None
    if failed:
        assert status["failed"].startswith(failed)
        assert record.want is Want.ENDED


def test_a_job_waits_while_a_running_job_checks_one_of_its_sites(tmp_path, python):
    manager, _ = make(tmp_path, python, max_running=2)
    (tmp_path / "jobs").mkdir()
    holds = []
    first, first_dir = new_job(manager, ["a.example", "b.example"], hold=True)
    holds.append(first_dir / "hold")
    try:
        manager.tick()
        assert manager.status(first)["running"]
        second, second_dir = new_job(manager, ["b.example"], hold=True)
        third, third_dir = new_job(manager, ["c.example"], hold=True)
        fourth, _ = new_job(manager, ["d.example"])
        holds += [second_dir / "hold", third_dir / "hold"]
        manager.tick()
        waiting = manager.status(second)
        assert waiting["state"] == "queued" and "b.example" in waiting["waiting"]
        assert manager.status(third)["running"]  # another site: at once
        assert "free place" in manager.status(fourth)["waiting"]  # two run at once at most
        (first_dir / "hold").unlink()
        settle(manager, second, lambda s: s["running"], "the second job to start")
    finally:
        for hold in holds:
            hold.unlink(missing_ok=True)
    for job_id in (first, second, third, fourth):
        settle(manager, job_id, lambda s: not s["running"], "the end")


def test_a_dead_job_is_started_again_after_recover_after(tmp_path, python):
    manager, clock = make(tmp_path, python)
    (tmp_path / "jobs").mkdir()
    job_id, jobdir = new_job(manager, ["a.example"], code=4)  # stopped, as after SIGTERM
    settle(manager, job_id, lambda s: not s["running"], "the first run's end")
    JobMeta(state=JobState.PROCESSING, total_rows=3, started_at="2026-12-01T00:00:00.000Z").save(
        jobdir
    )
    manager.tick()
    assert manager.status(job_id)["state"] == "stuck"  # processing, and nothing runs it
    runs = ServeRecord.load(jobdir).runs
    clock.advance(14)
    manager.tick()
    assert ServeRecord.load(jobdir).runs == runs  # not yet
    (jobdir / "exit-code").write_text("0")
    clock.advance(1.5)
    manager.tick()
    assert ServeRecord.load(jobdir).runs == runs + 1
    settle(manager, job_id, lambda s: not s["running"], "the second run's end")


def test_a_server_adopts_what_an_earlier_one_started(tmp_path, python):
    first, _ = make(tmp_path, python)
    (tmp_path / "jobs").mkdir()
    job_id, jobdir = new_job(first, ["a.example"], hold=True)
    first.tick()
    pid = ServeRecord.load(jobdir).supervisor_pid
    assert pid
    second, _ = make(tmp_path, python)  # the restarted server: not the process's parent
    second.tick()
    status = second.status(job_id)
    assert status["running"] and ServeRecord.load(jobdir).runs == 1
    (jobdir / "hold").unlink()
    first.tick()  # its parent reaps it
    second.jobs[job_id].cached = None
    deadline = time.monotonic() + 20
    while second.status(job_id)["running"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
        second.tick()
        second.jobs[job_id].cached = None
    assert ServeRecord.load(jobdir).supervisor_pid is None


def test_pause_and_cancel_are_held_to_a_crawl_that_starts_later(tmp_path, python):
    manager, clock = make(tmp_path, python, max_running=0)
    (tmp_path / "jobs").mkdir()
    job_id, jobdir = new_job(manager, ["a.example"])
    assert manager.control(job_id, "pause") == "paused: it will not be started"
    meta = JobMeta(state=JobState.PROCESSING, total_rows=3)
    meta.save(jobdir)
    lock = JobLock(jobdir)
    lock.acquire()  # a crawl started by hand
    try:
        manager.tick()
        from urlcheck.jobs.files import Control

        assert Control.load(jobdir).action.value == "pause"
        seq = Control.load(jobdir).seq
        manager.tick()
        assert Control.load(jobdir).seq == seq  # not again at once
        clock.advance(6)
        manager.tick()
        assert Control.load(jobdir).seq == seq + 1  # the crawl did not obey: again
        assert manager.control(job_id, "cancel").startswith("cancel requested")
        assert Control.load(jobdir).action.value == "cancel"
    finally:
        lock.release()
    manager.tick()  # nothing runs it now: marked cancelled under its lock
    assert JobMeta.load(jobdir).state is JobState.CANCELLED
    assert ServeRecord.load(jobdir).want is Want.ENDED
    assert manager.status(job_id)["state"] == State.CANCELLED


def test_a_pause_between_the_start_and_the_crawl_says_it_is_held_to_it(tmp_path, python):
    """A supervisor started, its crawl not yet holding the lock: the pause is held to the crawl
    when it starts, and the answer says so (not that the job will not be started)."""
    manager, _ = make(tmp_path, python, max_running=1)
    (tmp_path / "jobs").mkdir()
    job_id, jobdir = new_job(manager, ["a.example"], hold=True)
    assert manager.status(job_id)["running"]
    try:
        assert manager.control(job_id, "pause") == "pause requested"
    finally:
        (jobdir / "hold").unlink()
    settle(manager, job_id, lambda s: not s["running"], "the supervisor's end")


def test_a_job_directory_that_is_not_a_job_is_not_one(tmp_path, python):
    manager, _ = make(tmp_path, python)
    root = tmp_path / "jobs"
    (root / "empty").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "link").symlink_to(tmp_path)
    (root / "file.json").write_text("{}")
    broken = root / "broken"
    broken.mkdir()
    (broken / "meta.json").write_text("{not json")
    manager.tick()
    assert sorted(manager.jobs) == ["broken"]
    assert manager.status("broken")["state"] == "pending"
    os.kill(os.getpid(), 0)  # (the manager never signals what it did not start)


def test_sigterm_default_in_the_child(tmp_path):
    """The supervisor gets SIGTERM with its default meaning even when the server ignores it."""
    from urlcheck.serve.processes import alive, reap, spawn, start_time

    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        pid = spawn(["/bin/sleep", "30"], log=tmp_path / "log", env=os.environ)
    finally:
        signal.signal(signal.SIGTERM, previous)
    started = start_time(pid)
    assert alive(pid, started) and not alive(pid, (started or 0) + 1)
    assert os.getsid(pid) == pid  # a session of its own
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while (code := reap(pid)) is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert code == -signal.SIGTERM and not alive(pid, started)
