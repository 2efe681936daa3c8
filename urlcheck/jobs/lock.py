"""One process per job: an exclusive OS lock on DIR/job.lock, through `filelock`.

The OS drops the lock when its holder exits for any reason, SIGKILL included, so a crashed job
never needs a stale lock cleaned up. The holder's pid is written into the file only to name it
in the error; the lock itself is the OS lock, never the file's existence or content.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import TracebackType
from typing import Self

from filelock import FileLock, Timeout

from urlcheck.jobs.errors import JobLockedError
from urlcheck.jobs.nofollow import LinkedFileError, no_link_at, open_nofollow, truncate

LOCK_FILE = "job.lock"
_POLL = 0.02  # seconds between tries during a grace period


def _read_pid(path: Path) -> int | None:
    try:
        with open_nofollow(path, "rb") as src:
            text = src.read(32).decode("ascii", "replace").strip()
    except (OSError, LinkedFileError):
        return None
    return int(text) if text.isdigit() else None


def held_since(jobdir: Path | str) -> float | None:
    """When this process took the job's lock (job.lock's mtime: the pid is written at each
    acquire), or None when the lock file names another process or none."""
    path = Path(jobdir) / LOCK_FILE
    if _read_pid(path) != os.getpid():
        return None
    try:
        return path.lstat().st_mtime
    except OSError:
        return None


def _write_pid(fd: int) -> None:
    # Called by filelock with the locked descriptor, right after each acquire.
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)


class JobLock:
    """Exclusive lock on a job directory; also a context manager.

    ``acquire(grace=...)`` retries for ``grace`` seconds before giving up, so that a momentary
    probe by ``scrapy job`` (see :func:`lock_holder`) never makes a starting crawl fail.
    """

    def __init__(self, jobdir: Path | str) -> None:
        self.jobdir = Path(jobdir)
        self.path = self.jobdir / LOCK_FILE
        self._lock = FileLock(self.path, on_acquired=_write_pid)

    @property
    def held(self) -> bool:
        return self._lock.is_locked

    def acquire(self, *, grace: float = 0.25) -> None:
        if self._lock.is_locked:
            raise RuntimeError(f"{self.path} is already held by this JobLock")
        try:
            with no_link_at(self.path):
                self._lock.acquire(timeout=grace, poll_interval=_POLL)
        except Timeout:
            raise JobLockedError(self.jobdir, _read_pid(self.path)) from None

    def release(self) -> None:
        if not self._lock.is_locked:
            return
        with contextlib.suppress(OSError, LinkedFileError):  # a stale pid would mislead a reader
            truncate(self.path, 0)
        self._lock.release()

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def lock_holder(jobdir: Path | str) -> int | None:
    """The pid of the live process holding the job's lock (0 if it cannot be told), else None.

    Probes by taking the lock for an instant without waiting; :meth:`JobLock.acquire`'s grace
    period covers a crawl that starts at that very moment.
    """
    path = Path(jobdir) / LOCK_FILE
    if not path.exists():
        return None
    probe = FileLock(path)
    try:
        with no_link_at(path):
            probe.acquire(blocking=False)
    except Timeout:
        pid = _read_pid(path)
        return pid if pid is not None else 0
    probe.release()
    return None
