"""What ``scrapy crawl check`` verifies before a crawl starts, so that a bad setting, a bad
file, a CSV that is not the job's, or a job already running ends the run at once with one
clear line and its own exit code instead of a traceback from inside the crawl."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from urlcheck.config import ConfigError, UrlcheckConfig
from urlcheck.csvinput import CsvSource, InputError
from urlcheck.jobs.errors import InputMismatchError, JobLockedError
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.lock import JobLock
from urlcheck.jobs.prepare import check_input

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


class PreflightError(Exception):
    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def preflight(settings: BaseSettings, spider_args: dict[str, str]) -> JobLock | None:
    """Run the checks; returns the job lock to hold for the whole crawl (None without JOBDIR)."""
    csv = spider_args.get("csv")
    if not csv:
        raise PreflightError(
            "the check spider needs the input file: -a csv=PATH", ExitCode.INPUT_ERROR
        )
    try:
        UrlcheckConfig.from_settings(settings)
        CsvSource(csv).close()
    except (ConfigError, InputError) as exc:
        raise PreflightError(str(exc), ExitCode.INPUT_ERROR) from None
    jobdir = settings.get("JOBDIR")
    if not jobdir:
        return None
    Path(jobdir).mkdir(parents=True, exist_ok=True)
    lock = JobLock(jobdir)
    try:
        lock.acquire()
    except JobLockedError as exc:
        raise PreflightError(str(exc), ExitCode.LOCKED) from None
    try:
        check_input(Path(jobdir), Path(csv))
    except InputMismatchError as exc:
        lock.release()
        raise PreflightError(str(exc), ExitCode.INPUT_ERROR) from None
    return lock
