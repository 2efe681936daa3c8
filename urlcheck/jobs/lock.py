"""One process per job: an exclusive ``flock`` on DIR/job.lock.

The kernel drops a flock when its holder exits for any reason, SIGKILL included, so a crashed
job never needs a stale lock cleaned up. The holder's pid is written into the file only to name
it in the error; the lock itself is the flock, never the file's existence or content.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from urlcheck.jobs.errors import JobLockedError

LOCK_FILE = "job.lock"


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class JobLock:
    """Exclusive lock on a job directory; also a context manager.

    ``acquire(grace=...)`` retries for ``grace`` seconds before giving up, so that a momentary
    probe by ``scrapy job`` (see :func:`lock_holder`) never makes a starting crawl fail.
    """

    def __init__(self, jobdir: Path | str) -> None:
        self.jobdir = Path(jobdir)
        self.path = self.jobdir / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, *, grace: float = 0.25) -> None:
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already held by this JobLock")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + grace
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    pid = _read_pid(fd)
                    os.close(fd)
                    raise JobLockedError(self.jobdir, pid) from None
                time.sleep(0.02)
            except BaseException:
                os.close(fd)
                raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

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
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            return pid if pid is not None else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
