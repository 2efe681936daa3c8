"""Errors of the job machinery; each message names the job directory or file it is about."""

from __future__ import annotations

from pathlib import Path


class JobError(Exception):
    """Base class: something about a job directory prevents the requested operation."""


class JobFileError(JobError):
    """A job file (meta.json, control.json) exists but cannot be read or understood."""


class JobLockedError(JobError):
    """Another live process holds the job's lock."""

    def __init__(self, jobdir: Path, pid: int | None) -> None:
        self.jobdir = jobdir
        self.pid = pid
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(
            f"job {jobdir} is in use by {holder}; only one process may run a job at a time"
        )


class InputMismatchError(JobError):
    """Resuming a job with a CSV whose content differs from the one it was started with."""

    def __init__(self, jobdir: Path, input_path: Path, expected: str, actual: str) -> None:
        self.jobdir = jobdir
        self.input_path = input_path
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"{input_path} is not the CSV job {jobdir} was started with (sha256 {actual[:12]}..., "
            f"the job expects {expected[:12]}...); nothing was changed. To go on with the job's "
            f"own copy of its CSV, leave out -a csv (--jobdir {jobdir}); to check the edited "
            f"file, cancel the job first (scrapy job cancel {jobdir}: the next run starts "
            "afresh from the new file) or use another --jobdir"
        )
