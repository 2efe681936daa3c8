"""Supervised runs end to end (issue 16 point 3): ``scrapy job run DIR`` with real crawl
subprocesses. A ``kill -9`` of the crawl is followed by a restart that completes the job; a crawl
stuck on a hanging request is stopped and restarted, and after the allowed restarts without
progress the supervisor gives up (exit 9); a second supervisor on the same job exits LOCKED."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.jobs.crawls import (
    SETTINGS,
    assert_exact,
    make_csv,
    row_url,
    write_rows,
)
from tests.processes import Process, job_argv
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import JobMeta, JobState
from urlcheck.jobs.lock import lock_holder
from urlcheck.jobs.steer import steer

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl


def supervise(jobdir: Path, *options: str, crawl: tuple[str, ...] = ()) -> Process:
    """``scrapy job run JOBDIR OPTIONS -- CRAWL``, its logs beside the job directory."""
    argv = job_argv("run", jobdir, *options, settings=SETTINGS)
    return Process([*argv, "--", *crawl], logs=jobdir.parent / "logs", name="supervisor")


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_kill_9_of_the_crawl_is_restarted_and_the_job_completes(
    tmp_path: Path, site: SiteServer
) -> None:
    rows = 40
    csv = make_csv(tmp_path / "in.csv", site, "supervise-kill", rows)
    jobdir = tmp_path / "job"
    results = jobdir / "results.jsonl"
    supervisor = supervise(jobdir, "--restart-delay", "0.2", crawl=("-a", f"csv={csv}"))
    wait_for(lambda: lines(results) >= 10, "10 result lines")
    child = lock_holder(jobdir)
    assert child and child != supervisor.process.pid
    os.kill(child, signal.SIGKILL)
    # A second supervisor on the same job while the first one runs it: refused.
    wait_for(lambda: lock_holder(jobdir) not in (None, child), "the restarted crawl")
    # Paused from this process, the restarted crawl holds the job however long the second
    # supervisor takes to start (its 30 rows left take 1.5 s).
    assert steer("pause", jobdir, out=io.StringIO()) == ExitCode.FINISHED
    second = supervise(jobdir, crawl=("-a", f"csv={csv}"))
    assert second.wait(120.0) == ExitCode.LOCKED, second.stderr()[-3000:]
    assert "is in use by process" in second.stderr()
    assert steer("resume", jobdir, out=io.StringIO()) == ExitCode.FINISHED

    assert supervisor.wait(120.0) == ExitCode.FINISHED, supervisor.stderr()[-4000:]
    stderr = supervisor.stderr()
    assert "the crawl died of SIGKILL; restarting" in stderr, stderr[-4000:]
    assert_exact(results, rows)
    meta = JobMeta.load(jobdir)
    assert meta is not None and meta.state is JobState.DONE


def test_a_stuck_crawl_is_stopped_restarted_and_given_up_on(
    tmp_path: Path, site: SiteServer
) -> None:
    rows = 12
    urls = [row_url(site, "supervise-stuck", row, "/ok") for row in range(1, rows)]
    urls.append(row_url(site, "supervise-stuck", rows, "/hang"))  # never answers
    csv = write_rows(tmp_path / "in.csv", urls)
    jobdir = tmp_path / "job"
    supervisor = supervise(
        jobdir,
        "--restart-delay",
        "0.2",
        "--max-restarts",
        "1",
        "--stop-grace",
        "1",
        "-s",
        "URLCHECK_JOB_STUCK_AFTER=3",
        "-s",
        "URLCHECK_JOB_HEARTBEAT_INTERVAL=1",
        "-s",
        "DOWNLOAD_TIMEOUT=600",
        crawl=("-a", f"csv={csv}"),
    )
    assert supervisor.wait(120.0) == ExitCode.GAVE_UP, supervisor.stderr()[-4000:]
    stderr = supervisor.stderr()
    assert stderr.count("stuck, no activity for") == 2, stderr[-4000:]
    assert "restarting in" in stderr and "giving up" in stderr
    results = assert_exact_except(jobdir / "results.jsonl", rows, missing={rows})
    assert len(results) == rows - 1
    assert lock_holder(jobdir) is None  # nothing left running


def assert_exact_except(path: Path, rows: int, missing: set[int]) -> list[int]:
    seen = [json.loads(line)["row"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(seen) == len(set(seen))
    assert set(seen) == set(range(1, rows + 1)) - missing
    return seen


# --- the restart rules, with real short-lived children -------------------------------------


def test_restarts_are_bounded_and_back_off_doubling(tmp_path: Path) -> None:
    from urlcheck.jobs.supervise import SuperviseConfig
    from urlcheck.jobs.supervise import Supervisor as Core

    slept: list[float] = []
    command = [sys.executable, "-c", "import sys; sys.exit(1)"]
    config = SuperviseConfig(max_restarts=3, restart_delay=2.0, restart_delay_max=5.0, poll=0.01)
    core = Core(tmp_path, command, config, sleep=slept.append)
    assert core.run() == ExitCode.GAVE_UP
    assert [s for s in slept if s >= 1] == [2.0, 4.0, 5.0]  # doubling, capped; then it gives up
    assert core.restarts == 3

    done = [sys.executable, "-c", "import sys; sys.exit(3)"]  # failed verdicts: the job is over
    assert Core(tmp_path, done, config, sleep=slept.append).run() == ExitCode.FAILED_VERDICTS
