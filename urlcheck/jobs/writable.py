"""Whether the results and the job's files can be written at all, asked before a crawl starts:
a results path on a read-only filesystem (or a directory the user may not write) is refused at
once with one line, rather than found out at the first row (:mod:`urlcheck.crawl.writefailure`
handles a disk that fills up later)."""

from __future__ import annotations

import os
from pathlib import Path

from urlcheck.jobs.errors import JobFileError


class NotWritableError(JobFileError):
    """A results file or a job directory that this process cannot write."""


def _why(path: Path) -> str:
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "its filesystem is mounted read-only"
    except OSError:
        pass
    return "permission denied"


def refuse_unwritable(path: Path, *, directory: bool = False) -> None:
    """Raise :class:`NotWritableError` when ``path`` cannot be written by this process: a file
    (appended to, and renamed or replaced in its directory: both must be writable; a missing
    one, the nearest directory that would hold it), or with ``directory`` a directory that
    files are made in."""
    if directory:
        needs, target = os.W_OK | os.X_OK, path
    elif path.exists() and not os.access(path, os.W_OK):
        raise NotWritableError(f"cannot write {path}: {_why(path)}")
    else:
        needs, target = os.W_OK | os.X_OK, path.parent
    while not target.exists() and target != target.parent:
        target = target.parent
    if not os.access(target, needs):
        where = "" if target == path else f" (in {target})"
        raise NotWritableError(f"cannot write {path}: {_why(target)}{where}")
