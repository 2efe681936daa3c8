"""A results file being written by a crawl is held with an exclusive ``flock`` for as long as
it is open, so that another job pointed at it (``-a out=``) sees it in use and refuses to
start, rather than renaming it aside under the running crawl (whose lines would then go on
into the renamed file). The OS drops the lock when the writer exits, SIGKILL included."""

from __future__ import annotations

import fcntl
import os
from typing import TYPE_CHECKING

from urlcheck.jobs.errors import JobError
from urlcheck.jobs.nofollow import open_fd

if TYPE_CHECKING:
    from pathlib import Path


class ResultsInUseError(JobError):
    """Another process is writing the results file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"{path} is being written by another crawl: two jobs can't share a results file "
            "(give this one another -a out=, or wait until the other ends)"
        )


def hold_for_writing(fd: int) -> bool:
    """Take the writer's lock on an open results file; False when another process has it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def refuse_in_use(path: Path) -> None:
    """Raise :class:`ResultsInUseError` when a crawl holds ``path``'s writer lock (a missing
    file, or one that cannot be opened, is left to the checks that follow)."""
    try:
        fd = open_fd(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, JobError):
        return
    try:
        if not hold_for_writing(fd):
            raise ResultsInUseError(path)
    finally:
        os.close(fd)  # and with it the probe's lock
