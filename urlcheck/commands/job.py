"""``scrapy job status|pause|resume|cancel DIR``: look at or steer a job from another terminal;
``scrapy job run DIR``: run a job supervised (restarted when it dies or goes stuck).

``status`` reads meta.json (``--json`` for machines). ``pause``, ``resume`` and ``cancel`` write
control.json, which the running crawl's JobControl extension polls every 500 ms. Exit codes:
docs/jobs.md.

``scrapy job report PATH -o FILE`` and ``scrapy job diff OLD NEW [-o FILE]`` read results
(:mod:`urlcheck.reports`, docs/reports.md).
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from urlcheck.cluster.admin import clean, cluster_control, cluster_status
from urlcheck.cluster.config import redis_params
from urlcheck.cluster.errors import ClusterError
from urlcheck.config.reader import ConfigError
from urlcheck.jobs.errors import JobError, JobLockedError
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import (
    ControlAction,
    JobMeta,
    JobState,
    utc_iso,
    write_control,
)
from urlcheck.jobs.lock import JobLock, lock_holder
from urlcheck.jobs.place import default_jobdir
from urlcheck.jobs.status import catch_up, derive_status, format_status
from urlcheck.jobs.supervise import SuperviseConfig, Supervisor

if TYPE_CHECKING:
    import argparse

    from urlcheck.clock import Clock

ACTIONS = ("status", "pause", "resume", "cancel", "run", "clean")
_CONFIRM_SECONDS = 3.0

# The state a running crawl reports once it has obeyed each request.
_EXPECTED = {ControlAction.PAUSE: JobState.PAUSED, ControlAction.RESUME: JobState.PROCESSING}


class JobCommandError(Exception):
    def __init__(self, message: str, code: ExitCode) -> None:
        super().__init__(message)
        self.code = code


def _load(jobdir: Path) -> JobMeta:
    if not jobdir.is_dir():
        raise JobCommandError(f"{jobdir}: no such job directory", ExitCode.INPUT_ERROR)
    try:
        meta = JobMeta.load(jobdir)
    except JobError as exc:
        raise JobCommandError(str(exc), ExitCode.INPUT_ERROR) from exc
    if meta is None:
        raise JobCommandError(
            f"{jobdir} is not a urlcheck job directory (no meta.json)", ExitCode.INPUT_ERROR
        )
    return meta


def _status(
    jobdir: Path,
    as_json: bool,
    clock: Clock,
    out: TextIO,
    *,
    redis_url: str | None = None,
    redis_params: Mapping[str, Any] | None = None,
) -> ExitCode:
    meta = catch_up(_load(jobdir), jobdir)
    status = derive_status(meta, now=clock(), jobdir=jobdir, holder_pid=lock_holder(jobdir))
    cluster = cluster_status(
        jobdir, redis_url, redis_params
    )  # None unless it ran in distributed mode
    if as_json:
        data = status.to_dict()
        if cluster is not None:
            data["cluster"] = cluster[1]
        out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        out.write(format_status(status) + "\n")
        if cluster is not None:
            out.write(cluster[0] + "\n")
    return ExitCode.FINISHED


def _cancel_stopped(jobdir: Path, meta: JobMeta, clock: Clock, out: TextIO) -> ExitCode:
    """Cancel a job no crawl is running: mark it cancelled, under the lock."""
    lock = JobLock(jobdir)
    lock.acquire(grace=0.0)
    try:
        meta = _load(jobdir)  # re-read under the lock
        now = utc_iso(clock())
        meta.state = JobState.CANCELLED
        meta.finish_reason = "cancelled"
        meta.finished_at = now
        meta.updated_at = now
        meta.rate = None
        meta.backoff_hosts = []
        meta.save(jobdir)
    finally:
        lock.release()
    out.write(f"job {jobdir} cancelled (no crawl was running); its results are kept\n")
    return ExitCode.FINISHED


def _wait_for_state(
    jobdir: Path, expected: JobState, clock: Clock, sleep: Callable[[float], None]
) -> bool:
    deadline = clock() + _CONFIRM_SECONDS
    while True:
        try:
            meta = JobMeta.load(jobdir)
        except JobError:
            meta = None
        if meta is not None and meta.state is expected:
            return True
        if clock() >= deadline:
            return False
        sleep(0.1)


def _control(
    jobdir: Path,
    action: ControlAction,
    clock: Clock,
    sleep: Callable[[float], None],
    out: TextIO,
    *,
    redis_url: str | None = None,
    redis_params: Mapping[str, Any] | None = None,
) -> ExitCode:
    meta = _load(jobdir)
    # A distributed job's workers obey Redis, with or without its coordinator running.
    sent = cluster_control(jobdir, action.value, redis_url, out, redis_params)
    holder = lock_holder(jobdir)
    if holder is None and sent and action is not ControlAction.CANCEL:
        return ExitCode.FINISHED
    if holder is None:
        if action is ControlAction.CANCEL:
            if meta.state.terminal:
                out.write(f"job {jobdir} is already {meta.state.value}; nothing to cancel\n")
                return ExitCode.FINISHED
            try:
                return _cancel_stopped(jobdir, meta, clock, out)
            except JobLockedError:
                pass  # a crawl started just now: ask it through control.json
        else:
            hint = (
                "; run the crawl command again to resume it"
                if action is ControlAction.RESUME and not meta.state.terminal
                else ""
            )
            raise JobCommandError(
                f"no crawl is running job {jobdir} (state: {meta.state.value}); "
                f"nothing to {action.value}{hint}",
                ExitCode.NOT_RUNNING,
            )
    if _EXPECTED.get(action) is meta.state:
        out.write(f"job {jobdir} is already {meta.state.value}\n")
        return ExitCode.FINISHED
    control = write_control(jobdir, action, clock=clock)
    who = f"pid {holder}" if holder else "the running crawl"
    expected = _EXPECTED.get(action)
    if expected is None:
        out.write(
            f"cancel requested (seq {control.seq}); {who} closes the spider within a second, "
            "after the requests in flight finish; results are kept\n"
        )
    elif _wait_for_state(jobdir, expected, clock, sleep):
        out.write(f"job {jobdir} {expected.value} ({action.value} seq {control.seq}, {who})\n")
    else:
        out.write(
            f"{action.value} requested (seq {control.seq}); {who} has not confirmed it yet: "
            f"check with `scrapy job status {jobdir}`\n"
        )
    return ExitCode.FINISHED


def run_job_command(
    action: str,
    jobdir: Path,
    *,
    as_json: bool = False,
    clock: Clock = time.time,
    sleep: Callable[[float], None] = time.sleep,
    out: TextIO | None = None,
    err: TextIO | None = None,
    redis_url: str | None = None,
    redis_params: Mapping[str, Any] | None = None,
) -> ExitCode:
    """Do one ``scrapy job`` action; messages go to ``out``, problems to ``err``. ``jobdir``
    may also be a CSV: its default job (the one ``scrapy crawl check -a csv=CSV`` runs)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        if action == "clean":  # `jobdir` is a distributed job's name here
            if not redis_url:
                raise JobCommandError(
                    "clean needs the job's Redis: -s REDIS_URL=...", ExitCode.INPUT_ERROR
                )
            clean(str(jobdir), redis_url, out, redis_params)
            return ExitCode.FINISHED
        jobdir = job_for(jobdir)
        if action == "status":
            return _status(
                jobdir, as_json, clock, out, redis_url=redis_url, redis_params=redis_params
            )
        return _control(
            jobdir,
            ControlAction(action),
            clock,
            sleep,
            out,
            redis_url=redis_url,
            redis_params=redis_params,
        )
    except ClusterError as exc:
        err.write(f"urlcheck: {jobdir}: {exc}\n")
        return ExitCode.INPUT_ERROR
    except JobCommandError as exc:
        err.write(f"urlcheck: {exc}\n")
        return exc.code
    except (OSError, JobError) as exc:
        err.write(f"urlcheck: {jobdir}: {exc}\n")
        return ExitCode.INPUT_ERROR


# --- report and diff (docs/reports.md) ----------------------------------------------------------

REPORT_ACTIONS = ("report", "diff")
DIFF_REGRESSED = (
    1  # `scrapy job diff`: something regressed (pass -> fail, 2xx -> 4xx/5xx, new error)
)


def run_report(
    path: Path, output: str | None, *, out: TextIO, err: TextIO, title: str | None = None
) -> int:
    """``scrapy job report PATH [-o FILE[:FORMAT]]``: HTML by default, next to the results."""
    from urlcheck.reports.build import output_format, write_report
    from urlcheck.reports.source import SourceError

    try:
        default = (path if path.is_dir() else path.parent) / "report.html"
        target, fmt = output_format(output) if output else (default, "html")
        rows = write_report(path, target, fmt, title=title)
    except (SourceError, OSError) as exc:
        err.write(f"urlcheck: {exc}\n")
        return ExitCode.INPUT_ERROR
    out.write(f"{fmt} report of {rows:,} rows written to {target}\n")
    return ExitCode.FINISHED


def run_diff(old: Path, new: Path, output: str | None, *, out: TextIO, err: TextIO) -> int:
    """``scrapy job diff OLD NEW [-o FILE]``: changed rows as a table (and JSON lines)."""
    from urlcheck.reports.diff import DiffSummary, diff, format_change, format_summary
    from urlcheck.reports.source import SourceError

    try:
        with Path(output).open("w", encoding="utf-8") if output else nullcontext() as lines:
            regressed = False
            for change in diff(old, new):
                if isinstance(change, DiffSummary):
                    out.write(format_summary(change) + "\n")
                    regressed = change.regressed > 0
                    continue
                out.write(format_change(change) + "\n")
                if lines is not None:
                    lines.write(json.dumps(change.to_dict(), ensure_ascii=False) + "\n")
    except (SourceError, OSError, ValueError) as exc:
        err.write(f"urlcheck: {exc}\n")
        return ExitCode.INPUT_ERROR
    return DIFF_REGRESSED if regressed else ExitCode.FINISHED


def job_for(path: Path) -> Path:
    """A job directory as given, or the default job of a CSV given instead."""
    return default_jobdir(path) if path.is_file() else path


def crawl_command(jobdir: Path, settings: list[str], extra: list[str]) -> list[str]:
    """The ``scrapy crawl check`` a supervisor runs for ``jobdir``."""
    command = [sys.executable, "-m", "scrapy", "crawl", "check", "--jobdir", str(jobdir)]
    for setting in settings:
        command += ["-s", setting]
    return command + extra


def run_supervised(
    jobdir: Path, settings: list[str], extra: list[str], config: SuperviseConfig
) -> ExitCode:
    """``scrapy job run``: supervise the job's crawl until it ends for good (docs/jobs.md)."""
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s [urlcheck supervisor] %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    if jobdir.is_file():  # a CSV: its default job, with the CSV for a first run
        extra = ["-a", f"csv={jobdir}", *extra]
        jobdir = job_for(jobdir)
    supervisor = Supervisor(jobdir, crawl_command(jobdir, settings, extra), config)
    previous = {
        signum: signal.signal(signum, lambda signum, _frame: supervisor.stop(signum))
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        return supervisor.run()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return (
            "status|pause|resume|cancel|run DIR [--json] [-- CRAWL OPTIONS] | report PATH "
            "[-o FILE] | diff OLD NEW [-o FILE] | clean NAME -s REDIS_URL=..."
        )

    def short_desc(self) -> str:
        return "Show, control or supervise a urlcheck job: status, pause, resume, cancel, run"

    def long_desc(self) -> str:
        return (
            "status prints the job's state, progress, rate, ETA, hosts in back-off and last "
            "activity (--json for the same as JSON); pause, resume and cancel ask the crawl "
            "running the job to do so within a second. run runs the job's crawl and restarts it "
            "when it dies or goes stuck (options after -- go to `scrapy crawl check`, e.g. "
            "-- -a csv=urls.csv). For a distributed job, pause, resume and cancel reach every "
            "worker through Redis and status lists the workers; clean NAME removes its keys "
            "from Redis (docs/distributed.md). Exit codes: docs/jobs.md. "
            "report writes a report of a job directory or results file (-o report.html, "
            "report.md, junit.xml); diff lists the rows that changed between two runs (-o for "
            "JSON lines) and exits 1 when one regressed: docs/reports.md."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--json", dest="json", action="store_true", help="status: print JSON")
        parser.add_argument(
            "-o",
            "--output",
            dest="output",
            metavar="FILE",
            help="report: FILE[:html|markdown|junit]; diff: write the changes as JSON lines",
        )
        parser.add_argument("--title", help="report: the title (default: urlcheck report)")

        defaults = SuperviseConfig()
        parser.add_argument(
            "--max-restarts",
            type=int,
            default=defaults.max_restarts,
            help="run: restarts in a row without progress before giving up "
            f"(default {defaults.max_restarts})",
        )
        parser.add_argument(
            "--restart-delay",
            type=float,
            default=defaults.restart_delay,
            help="run: seconds before the first restart, doubling up to 5 min "
            f"(default {defaults.restart_delay:g})",
        )
        parser.add_argument(
            "--stop-grace",
            type=float,
            default=defaults.stop_grace,
            help="run: seconds a stuck crawl gets to stop before it is killed "
            f"(default {defaults.stop_grace:g})",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args and args[0] in REPORT_ACTIONS:
            self.exitcode = self._run_report(args, opts)
            return
        if len(args) < 2 or args[0] not in ACTIONS:
            raise UsageError(f"expected one of {', '.join(ACTIONS)} and a job directory")
        if opts.output or opts.title:
            raise UsageError("-o and --title go with report and diff")
        if opts.json and args[0] != "status":
            raise UsageError("--json goes with status only")
        if args[0] == "run":
            extra = args[2:]
            if extra[:1] == ["--"]:
                extra = extra[1:]
            self.exitcode = int(self._run_supervised(Path(args[1]), extra, opts))
            return
        if len(args) != 2:
            raise UsageError(f"{args[0]} takes a job directory only")
        assert self.settings is not None
        redis_url = self.settings.get("REDIS_URL") or None
        try:
            params = redis_params(self.settings)
        except ConfigError as exc:
            print(f"urlcheck: {exc}", file=sys.stderr)
            self.exitcode = int(ExitCode.INPUT_ERROR)
            return
        self.exitcode = int(
            run_job_command(
                args[0],
                Path(args[1]),
                as_json=opts.json,
                redis_url=redis_url,
                redis_params=params,
            )
        )

    def _run_report(self, args: list[str], opts: argparse.Namespace) -> int:
        if args[0] == "report" and len(args) == 2:
            return run_report(
                Path(args[1]), opts.output, out=sys.stdout, err=sys.stderr, title=opts.title
            )
        if args[0] == "diff" and len(args) == 3:
            return run_diff(
                Path(args[1]), Path(args[2]), opts.output, out=sys.stdout, err=sys.stderr
            )
        raise UsageError("expected: report PATH [-o FILE] or diff OLD NEW [-o FILE]")

    @staticmethod
    def _run_supervised(jobdir: Path, extra: list[str], opts: argparse.Namespace) -> ExitCode:
        if opts.max_restarts < 0 or opts.restart_delay < 0 or opts.stop_grace < 0:
            raise UsageError("--max-restarts, --restart-delay and --stop-grace must be >= 0")
        config = SuperviseConfig(
            max_restarts=opts.max_restarts,
            restart_delay=opts.restart_delay,
            stop_grace=opts.stop_grace,
        )
        return run_supervised(jobdir, list(opts.set or []), extra, config)
