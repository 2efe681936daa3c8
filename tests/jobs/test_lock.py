from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from urlcheck.jobs.errors import JobLockedError
from urlcheck.jobs.lock import LOCK_FILE, JobLock, lock_holder

ROOT = Path(__file__).resolve().parents[2]

# Takes the lock, says so, then holds it until its stdin closes (or it is killed).
HOLDER = """
import sys
from urlcheck.jobs.lock import JobLock
lock = JobLock(sys.argv[1])
lock.acquire()
print("locked", flush=True)
sys.stdin.read()
lock.release()
print("released", flush=True)
"""

# Tries once; prints what happened.
TRIER = """
import sys
from urlcheck.jobs.errors import JobLockedError
from urlcheck.jobs.lock import JobLock
try:
    JobLock(sys.argv[1]).acquire(grace=0.0)
except JobLockedError as exc:
    print(f"locked-out {exc.pid}: {exc}", flush=True)
    sys.exit(6)
print("acquired", flush=True)
"""


def python(code: str, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(  # type: ignore[call-overload]
        [sys.executable, "-c", code, *args], env=env, text=True, **kwargs
    )


def start_holder(jobdir: Path) -> subprocess.Popen[str]:
    holder = python(HOLDER, str(jobdir), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "locked"
    return holder


def close_pipes(process: subprocess.Popen[str]) -> None:
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()


def try_in_process(jobdir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", TRIER, str(jobdir)],
        env=env,
        text=True,
        capture_output=True,
        timeout=30,
        check=False,
    )


def test_second_process_is_locked_out_until_the_first_releases(tmp_path: Path) -> None:
    holder = start_holder(tmp_path)
    try:
        second = try_in_process(tmp_path)
        assert second.returncode == 6
        assert second.stdout.startswith(
            f"locked-out {holder.pid}: job {tmp_path} is in use by process {holder.pid}"
        )
        assert lock_holder(tmp_path) == holder.pid
        with pytest.raises(JobLockedError) as caught:
            JobLock(tmp_path).acquire(grace=0.0)
        assert caught.value.pid == holder.pid
        assert str(tmp_path) in str(caught.value)
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0
    assert lock_holder(tmp_path) is None
    assert try_in_process(tmp_path).stdout == "acquired\n"


def test_lock_of_a_killed_process_is_free(tmp_path: Path) -> None:
    holder = start_holder(tmp_path)
    assert lock_holder(tmp_path) == holder.pid
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert holder.returncode == -signal.SIGKILL
    # the stale pid is still in the file, but nobody holds the flock
    assert (tmp_path / LOCK_FILE).read_text().strip() == str(holder.pid)
    assert lock_holder(tmp_path) is None
    with JobLock(tmp_path) as lock:
        assert lock.held
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())
    close_pipes(holder)


def test_release_and_reacquire_in_one_process(tmp_path: Path) -> None:
    lock = JobLock(tmp_path)
    lock.acquire()
    assert lock_holder(tmp_path) == os.getpid()
    with pytest.raises(JobLockedError):
        JobLock(tmp_path).acquire(grace=0.0)
    lock.release()
    lock.release()  # idempotent
    assert lock_holder(tmp_path) is None
    assert (tmp_path / LOCK_FILE).read_text() == ""
    other = JobLock(tmp_path)
    other.acquire(grace=0.0)
    other.release()


def test_acquire_waits_out_a_short_probe(tmp_path: Path) -> None:
    holder = start_holder(tmp_path)
    assert holder.stdin is not None
    holder.stdin.close()  # the holder releases now
    JobLock(tmp_path).acquire(grace=10.0)  # raises JobLockedError if the grace ran out
    holder.wait(timeout=30)
    close_pipes(holder)


def test_no_lock_file_means_no_holder(tmp_path: Path) -> None:
    assert lock_holder(tmp_path) is None
    assert not (tmp_path / LOCK_FILE).exists()
