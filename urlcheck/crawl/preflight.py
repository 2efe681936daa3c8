"""What ``scrapy crawl check`` verifies before a crawl starts, so that a bad setting, a bad
file, a CSV that is not the job's, or a job already running ends the run at once with one
clear line and its own exit code instead of a traceback from inside the crawl."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from urlcheck.config.crawlconfig import ConfigError, UrlcheckConfig
from urlcheck.crawl.addon import distributed
from urlcheck.input.errors import InputError
from urlcheck.input.kind import open_source
from urlcheck.input.sitemap import is_remote
from urlcheck.jobs.errors import InputMismatchError, JobError, JobLockedError
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import INPUT_COPY, RESULTS_FILE
from urlcheck.jobs.inuse import ResultsInUseError, refuse_in_use
from urlcheck.jobs.lock import JobLock
from urlcheck.jobs.nofollow import refuse_links
from urlcheck.jobs.place import default_jobdir
from urlcheck.jobs.prepare import check_input
from urlcheck.jobs.stdin import STDIN, copy_stdin
from urlcheck.jobs.writable import NotWritableError, refuse_unwritable
from urlcheck.proxypool import StoreUnavailable

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


class PreflightError(Exception):
    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def choose_jobdir(settings: BaseSettings, csv: str | None) -> Path | None:
    """The run's job directory: ``JOBDIR`` (``--jobdir``) when given, none when it was given
    empty (``--no-job``), else the default one derived from the CSV's path."""
    jobdir = settings.get("JOBDIR")
    if jobdir is None:
        return default_jobdir(csv) if csv else None
    return Path(jobdir) if jobdir else None


def check_proxy_store(config: UrlcheckConfig) -> None:
    """A Redis proxy store that refuses our credentials is a setting to fix (ConfigError, naming
    it); one that cannot be reached is left to the crawl, as without this check."""
    proxies = config.proxies
    if proxies is None or proxies.store_uri.startswith("memory:"):
        return
    store = proxies.store_for(None)  # the pool's name does not matter here
    try:
        store.open(proxies.pool)
    except StoreUnavailable as exc:
        refused = proxies.refused(exc)
        if refused is not None:
            raise ConfigError(refused) from None
    finally:
        store.close()


def preflight(settings: BaseSettings, spider_args: dict[str, str]) -> JobLock | None:
    """Run the checks; returns the job lock to hold for the whole crawl (None without a job).

    Every run is a job unless ``--no-job``: JOBDIR is set here to the default job directory
    when the user named none, and ``-a csv`` may be left out when the job keeps its own copy.
    """
    csv = spider_args.get("csv")
    # Only a run that names a distributed job loads distributed mode's modules (and redis-py).
    cluster = distributed(settings) or bool(spider_args.get("job"))
    try:
        if cluster:
            from urlcheck.cluster.config import check_cluster

            check_cluster(settings, spider_args)
        if not csv and spider_args.get("job"):  # a worker of a distributed job
            check_proxy_store(UrlcheckConfig.from_settings(settings))
            return None
    except ConfigError as exc:
        raise PreflightError(str(exc), ExitCode.INPUT_ERROR) from None
    jobdir = choose_jobdir(settings, csv)
    piped = ""
    if csv == STDIN:
        csv = spider_args["csv"] = piped = str(_stdin_input(jobdir))
    if not csv:
        copy = jobdir / INPUT_COPY if jobdir is not None else None
        if copy is None or not copy.is_file():
            where = f" ({jobdir} has no {INPUT_COPY})" if jobdir is not None else ""
            raise PreflightError(
                "the check spider needs the input file: -a csv=PATH, or the --jobdir of a job, "
                f"which keeps its own copy{where}",
                ExitCode.INPUT_ERROR,
            )
        csv = spider_args["csv"] = str(copy)
    recheck = spider_args.get("recheck") or settings.get("URLCHECK_RECHECK")
    try:
        if recheck:
            settings.set("URLCHECK_RECHECK", str(recheck), priority="cmdline")
        config = UrlcheckConfig.from_settings(settings)
        if not is_remote(csv):  # a sitemap's URL is fetched by the crawl
            open_source(csv, sheet=spider_args.get("sheet") or None).close()
        check_proxy_store(config)
    except (ConfigError, InputError) as exc:
        message = str(exc).replace(piped, "standard input") if piped else str(exc)
        raise PreflightError(message, ExitCode.INPUT_ERROR) from None
    if recheck and jobdir is None:
        raise PreflightError(
            "recheck: re-checking rows needs a job (drop --no-job)", ExitCode.INPUT_ERROR
        )
    if cluster:
        _check_coordinator(settings, spider_args, jobdir)
    out = spider_args.get("out")
    try:  # before the lock: job.lock too may be a link, which would end in a traceback
        refuse_links(jobdir, *([Path(out)] if out else []))
    except JobError as exc:
        raise PreflightError(str(exc), ExitCode.INPUT_ERROR) from None
    results = Path(out) if out else (jobdir or Path()) / RESULTS_FILE
    if jobdir is None:
        _check_writable(results)
        _check_not_in_use(results)
        return None
    settings.set("JOBDIR", str(jobdir), priority="cmdline")
    try:
        jobdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PreflightError(
            f"cannot create the job directory {jobdir}: {exc.strerror} (--jobdir chooses "
            "another, --no-job runs without one)",
            ExitCode.INPUT_ERROR,
        ) from None
    _check_writable(results, jobdir)
    lock = JobLock(jobdir)
    try:
        lock.acquire()
    except JobLockedError as exc:
        raise PreflightError(str(exc), ExitCode.LOCKED) from None
    try:
        if not is_remote(csv):
            check_input(jobdir, Path(csv), recheck=bool(recheck))
    except InputMismatchError as exc:
        lock.release()
        message = _piped_mismatch(exc) if piped else str(exc)
        raise PreflightError(message, ExitCode.INPUT_ERROR) from None
    except JobError as exc:
        lock.release()
        raise PreflightError(str(exc), ExitCode.INPUT_ERROR) from None
    try:
        _check_not_in_use(results)
    except PreflightError:
        lock.release()
        raise
    return lock


def _piped_mismatch(exc: InputMismatchError) -> str:
    """The mismatch in the terms of ``-``: the user named no file, and gave no ``-a csv``."""
    jobdir = exc.jobdir
    return (
        f"standard input is not the input job {jobdir} was started with (sha256 "
        f"{exc.actual[:12]}..., the job expects {exc.expected[:12]}...); nothing was checked. "
        f"To go on with the job's own copy of its input, leave out - (--jobdir {jobdir} "
        f"alone); to check what is piped in, cancel the job first (scrapy job cancel {jobdir}) "
        "or use another --jobdir"
    )


def _check_writable(results: Path, jobdir: Path | None = None) -> None:
    """A results file or a job directory that cannot be written (a read-only filesystem) ends
    the run before the first row, with the exit code of a failed write."""
    try:
        if jobdir is not None:
            refuse_unwritable(jobdir, directory=True)
        refuse_unwritable(results)
    except NotWritableError as exc:
        raise PreflightError(str(exc), ExitCode.WRITE_FAILED) from None


def _check_not_in_use(results: Path) -> None:
    """Another job's crawl writing the same results file (urlcheck.jobs.inuse)."""
    try:
        refuse_in_use(results)
    except ResultsInUseError as exc:
        raise PreflightError(str(exc), ExitCode.LOCKED) from None


def _stdin_input(jobdir: Path | None) -> Path:
    """``-a csv=-``: standard input, copied into the job (or a temporary file without one)."""
    if sys.stdin is None or sys.stdin.isatty():
        raise PreflightError(
            "-: standard input is a terminal; pipe the URLs in (urlcheck check - < urls.txt)",
            ExitCode.INPUT_ERROR,
        )
    try:
        return copy_stdin(sys.stdin.buffer, jobdir)
    except JobError as exc:
        raise PreflightError(str(exc), ExitCode.INPUT_ERROR) from None
    except OSError as exc:
        raise PreflightError(
            f"-: cannot copy standard input ({exc.strerror or exc})", ExitCode.INPUT_ERROR
        ) from None


def _check_coordinator(
    settings: BaseSettings, spider_args: dict[str, str], jobdir: Path | None
) -> None:
    """One coordinator per distributed job."""
    from urlcheck.cluster.admin import check_coordinator
    from urlcheck.cluster.errors import ClusterError

    try:
        check_coordinator(settings, spider_args, jobdir)
    except ClusterError as exc:
        raise PreflightError(str(exc), ExitCode.LOCKED) from None
