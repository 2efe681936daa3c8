"""The job machinery: a JOBDIR that survives Ctrl-C, crashes and cron (docs/jobs.md).

The Scrapy side is :mod:`urlcheck.extensions.jobcontrol`; ``scrapy job``
(:mod:`urlcheck.commands.job`) is options over :mod:`urlcheck.jobs.steer` and
:mod:`urlcheck.jobs.supervise`.
This package MUST NOT import Scrapy, Twisted, or the adapters (``crawl``, ``spiders``,
``middlewares``, ``extensions``, ``commands``, ``config.crawlconfig``).
"""

from urlcheck.jobs.context import JobContext
from urlcheck.jobs.counts import Counts
from urlcheck.jobs.done import DoneRows, ResultsScan, Tail, read_tail, scan_results
from urlcheck.jobs.errors import (
    InputMismatchError,
    JobError,
    JobFileError,
    JobLockedError,
)
from urlcheck.jobs.exitcodes import ExitCode, exit_code_for
from urlcheck.jobs.files import Control, ControlAction, JobMeta, JobState, write_control
from urlcheck.jobs.lock import JobLock, lock_holder
from urlcheck.jobs.place import default_jobdir, job_for
from urlcheck.jobs.prepare import PreparedJob, check_input, prepare_job
from urlcheck.jobs.recheck import Recheck
from urlcheck.jobs.status import JobStatus, catch_up, derive_status, format_status
from urlcheck.jobs.steer import Fleet, SteerError, control, read_status, steer
from urlcheck.jobs.supervise import SuperviseConfig, Supervisor, supervise

__all__ = [
    "Control",
    "ControlAction",
    "Counts",
    "DoneRows",
    "ExitCode",
    "Fleet",
    "InputMismatchError",
    "JobContext",
    "JobError",
    "JobFileError",
    "JobLock",
    "JobLockedError",
    "JobMeta",
    "JobState",
    "JobStatus",
    "PreparedJob",
    "Recheck",
    "ResultsScan",
    "SteerError",
    "SuperviseConfig",
    "Supervisor",
    "Tail",
    "catch_up",
    "check_input",
    "control",
    "default_jobdir",
    "derive_status",
    "exit_code_for",
    "format_status",
    "job_for",
    "lock_holder",
    "prepare_job",
    "read_status",
    "read_tail",
    "scan_results",
    "steer",
    "supervise",
    "write_control",
]
