"""Steering a job from outside its crawl: its status, and pause, resume or cancel asked through
control.json, which the running crawl's JobControl extension polls every 500 ms (docs/jobs.md).

A distributed job (its coordinator left cluster.json in the JOBDIR) is steered through Redis
as well, by a :class:`Fleet` the caller passes (``urlcheck.cluster.steer``): this module knows
nothing of the cluster, and a one-process job never loads it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from urlcheck.check.printable import printable, printable_json
from urlcheck.clock import Reading
from urlcheck.jobs.errors import JobError, JobLockedError
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import CLUSTER_FILE, ControlAction, JobMeta, JobState, write_control
from urlcheck.jobs.lock import lock_holder
from urlcheck.jobs.nofollow import refuse_links
from urlcheck.jobs.place import job_for
from urlcheck.jobs.status import JobStatus, catch_up, derive_status, format_status
from urlcheck.jobs.stopped import cancel_stopped_job

if TYPE_CHECKING:
    from urlcheck.clock import Clock

ACTIONS = ("status", "pause", "resume", "cancel")
CONFIRM_SECONDS = 3.0

# The state a running crawl reports once it has obeyed each request.
_EXPECTED = {ControlAction.PAUSE: JobState.PAUSED, ControlAction.RESUME: JobState.PROCESSING}


class SteerError(Exception):
    """A job that cannot be steered as asked; the message is one line, ``code`` the exit code."""

    def __init__(self, message: str, code: ExitCode) -> None:
        super().__init__(message)
        self.code = code


class Fleet(Protocol):
    """A distributed job's processes, reached through Redis. Raises :class:`SteerError`."""

    def status(self) -> tuple[str, dict[str, Any]] | None:
        """(text, JSON-ready dict) of the job's processes, or None when Redis has no job."""

    def control(self, action: str, out: TextIO) -> bool:
        """Send ``action`` to every process; False when Redis holds no state for the job."""


FleetFor = Callable[[Path], Fleet]


def distributed(jobdir: Path) -> bool:
    """Whether a distributed coordinator ran the job (it leaves cluster.json behind)."""
    try:
        (jobdir / CLUSTER_FILE).stat()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # the fleet reads it and says what is wrong
    return True


def load_meta(jobdir: Path) -> JobMeta:
    """The job's meta.json; SteerError for a missing or foreign directory."""
    if not jobdir.is_dir():
        raise SteerError(f"{printable(jobdir)}: no such job directory", ExitCode.INPUT_ERROR)
    try:
        meta = JobMeta.load(jobdir)
    except JobError as exc:
        raise SteerError(str(exc), ExitCode.INPUT_ERROR) from exc
    if meta is None:
        raise SteerError(
            f"{printable(jobdir)} is not a urlcheck job directory (no meta.json)",
            ExitCode.INPUT_ERROR,
        )
    return meta


def read_status(jobdir: Path, now: Reading | float) -> JobStatus:
    """What ``scrapy job status`` says of the job directory itself (not of its fleet)."""
    meta = catch_up(load_meta(jobdir), jobdir)
    return derive_status(meta, now=now, jobdir=jobdir, holder_pid=lock_holder(jobdir))


def show_status(
    jobdir: Path,
    *,
    as_json: bool,
    clock: Clock,
    out: TextIO,
    fleet: Fleet | None = None,
    monotonic: Clock = time.monotonic,
) -> ExitCode:
    status = read_status(jobdir, Reading.now(clock, monotonic))
    cluster = fleet.status() if fleet is not None else None
    if as_json:
        data = status.to_dict()
        if cluster is not None:
            data["cluster"] = cluster[1]
        out.write(printable_json(json.dumps(data, ensure_ascii=False, indent=2)) + "\n")
    else:
        out.write(format_status(status) + "\n")
        if cluster is not None:
            out.write(printable(cluster[0], keep="\n") + "\n")  # names from Redis
    return ExitCode.FINISHED


def cancel_stopped(jobdir: Path, clock: Clock, out: TextIO) -> ExitCode:
    """Cancel a job no crawl is running: mark it cancelled, under the lock."""
    cancel_stopped_job(jobdir, clock=clock)
    out.write(f"job {printable(jobdir)} cancelled (no crawl was running); its results are kept\n")
    return ExitCode.FINISHED


def wait_for_state(
    jobdir: Path, expected: JobState, clock: Clock, sleep: Callable[[float], None]
) -> bool:
    """Whether meta.json reaches ``expected`` within :data:`CONFIRM_SECONDS`."""
    deadline = clock() + CONFIRM_SECONDS
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


def control(
    jobdir: Path,
    action: ControlAction,
    *,
    clock: Clock,
    sleep: Callable[[float], None],
    out: TextIO,
    fleet: Fleet | None = None,
) -> ExitCode:
    """Ask the job to pause, resume or cancel, and say (on ``out``) whether it did."""
    meta = load_meta(jobdir)
    # A distributed job's workers obey Redis, with or without its coordinator running.
    sent = fleet.control(action.value, out) if fleet is not None else False
    holder = lock_holder(jobdir)
    if holder is None and sent and action is not ControlAction.CANCEL:
        return ExitCode.FINISHED
    if holder is None:
        if action is ControlAction.CANCEL:
            if meta.state.terminal:
                out.write(
                    f"job {printable(jobdir)} is already {meta.state.value}; nothing to cancel\n"
                )
                return ExitCode.FINISHED
            try:
                return cancel_stopped(jobdir, clock, out)
            except JobLockedError:
                pass  # a crawl started just now: ask it through control.json
        else:
            hint = (
                "; run the crawl command again to resume it"
                if action is ControlAction.RESUME and not meta.state.terminal
                else ""
            )
            raise SteerError(
                f"no crawl is running job {printable(jobdir)} (state: {meta.state.value}); "
                f"nothing to {action.value}{hint}",
                ExitCode.NOT_RUNNING,
            )
    if _EXPECTED.get(action) is meta.state:
        out.write(f"job {printable(jobdir)} is already {meta.state.value}\n")
        return ExitCode.FINISHED
    request = write_control(jobdir, action, clock=clock)
    who = f"pid {holder}" if holder else "the running crawl"
    expected = _EXPECTED.get(action)
    if expected is None:
        out.write(
            f"cancel requested (seq {request.seq}); {who} closes the spider within a second, "
            "after the requests in flight finish; results are kept\n"
        )
    elif wait_for_state(jobdir, expected, clock, sleep):
        out.write(
            f"job {printable(jobdir)} {expected.value} ({action.value} seq {request.seq}, {who})\n"
        )
    else:
        out.write(
            f"{action.value} requested (seq {request.seq}); {who} has not confirmed it yet: "
            f"check with `scrapy job status {printable(jobdir)}`\n"
        )
    return ExitCode.FINISHED


def steer(
    action: str,
    jobdir: Path,
    *,
    as_json: bool = False,
    clock: Clock = time.time,
    monotonic: Clock = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    out: TextIO | None = None,
    err: TextIO | None = None,
    fleet_for: FleetFor | None = None,
) -> ExitCode:
    """Do one of :data:`ACTIONS`; messages go to ``out``, problems to ``err``. ``jobdir`` may
    also be a CSV: its default job (the one ``scrapy crawl check -a csv=CSV`` runs).
    ``fleet_for`` reaches a distributed job's processes; it is called only for one."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        jobdir = job_for(jobdir)
        refuse_links(jobdir)
        fleet = fleet_for(jobdir) if fleet_for is not None and distributed(jobdir) else None
        if action == "status":
            return show_status(
                jobdir, as_json=as_json, clock=clock, out=out, fleet=fleet, monotonic=monotonic
            )
        return control(
            jobdir, ControlAction(action), clock=clock, sleep=sleep, out=out, fleet=fleet
        )
    except SteerError as exc:
        err.write(f"urlcheck: {printable(exc)}\n")
        return exc.code
    except (OSError, JobError) as exc:
        err.write(f"urlcheck: {printable(jobdir)}: {printable(exc)}\n")
        return ExitCode.INPUT_ERROR
