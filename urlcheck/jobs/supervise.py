"""Supervised runs (``scrapy job run DIR``): run the job's crawl, and run it again when it dies
or goes stuck, until it ends for good or the restarts are used up.

The supervisor never runs a job another process holds: it looks at the job lock before every
start, and a crawl that still meets the lock exits LOCKED, which ends the supervisor too. So two
supervisors (or a supervisor and a hand-started crawl) never run one job at once. Stuck means
what ``scrapy job status`` says: ``processing`` with no sign of life for ``stuck_after`` seconds
(meta.json's, from ``URLCHECK_JOB_STUCK_AFTER``); the crawl is then asked to stop (SIGTERM) and
killed if it has not after ``stop_grace`` seconds. The silence is measured as ``status``
measures it, on the monotonic clock (:func:`urlcheck.jobs.status.seconds_quiet`), and so are the
supervisor's own waits: a wall clock step stops no healthy crawl. Scrapy-free; times come from
injectable clocks and sleep.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from urlcheck.check.printable import install as install_printable
from urlcheck.clock import Reading
from urlcheck.jobs.errors import JobError
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import JobMeta, JobState
from urlcheck.jobs.lock import lock_holder
from urlcheck.jobs.nofollow import LinkedFileError, refuse_links
from urlcheck.jobs.place import job_for
from urlcheck.jobs.status import catch_up, seconds_quiet

logger = logging.getLogger(__name__)

# How a crawl ended that must not be run again: the job is over, or cannot run as asked.
FINAL = frozenset(
    {
        ExitCode.FINISHED,
        ExitCode.FAILED_VERDICTS,
        ExitCode.CANCELLED,
        ExitCode.INPUT_ERROR,
        ExitCode.LOCKED,
        ExitCode.WRITE_FAILED,  # a full disk needs someone to make room first
    }
)


@dataclass(frozen=True)
class SuperviseConfig:
    max_restarts: int = 5  # in a row without progress; progress (more rows done) resets it
    restart_delay: float = 10.0  # seconds before the first restart, doubling
    restart_delay_max: float = 300.0
    stop_grace: float = 30.0  # seconds between SIGTERM and SIGKILL for a stuck crawl
    poll: float = 1.0  # how often the crawl and meta.json are looked at

    def delay(self, restart: int) -> float:
        return min(self.restart_delay * 2.0 ** max(restart - 1, 0), self.restart_delay_max)


class Supervisor:
    def __init__(
        self,
        jobdir: Path,
        command: Sequence[str],
        config: SuperviseConfig,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.jobdir = jobdir
        self.command = list(command)
        self.config = config
        self.clock = clock  # the wall clock
        self.monotonic = monotonic
        self.sleep = sleep
        self.child: subprocess.Popen[bytes] | None = None
        self.stopping = False
        self.restarts = 0

    def stop(self, signum: int) -> None:
        """A signal to the supervisor: pass it on, and end once the crawl has stopped."""
        self.stopping = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signum)

    def run(self) -> ExitCode:
        failures = 0  # restarts in a row without progress
        while True:
            holder = lock_holder(self.jobdir)
            if holder is not None:
                logger.error(
                    "job %s is in use by process %s; not starting another crawl",
                    self.jobdir,
                    holder or "unknown",
                )
                return ExitCode.LOCKED
            done_before = self._done_rows()
            code, why = self._run_once()
            if code in FINAL or self.stopping:
                logger.info(
                    "job %s: the crawl ended with exit code %d (%s)", self.jobdir, code, why
                )
                return ExitCode(code) if code in ExitCode._value2member_map_ else ExitCode.PAUSED
            if self._done_rows() > done_before:
                failures = 0
            failures += 1
            if failures > self.config.max_restarts:
                logger.error(
                    "job %s: the crawl %s; %d restarts in a row made no progress: giving up "
                    "(run `scrapy job run %s` again once the cause is fixed)",
                    self.jobdir,
                    why,
                    self.config.max_restarts,
                    self.jobdir,
                )
                return ExitCode.GAVE_UP
            delay = self.config.delay(failures)
            self.restarts += 1
            logger.warning(
                "job %s: the crawl %s; restarting in %.0f s (restart %d, %d in a row without "
                "progress, at most %d)",
                self.jobdir,
                why,
                delay,
                self.restarts,
                failures,
                self.config.max_restarts,
            )
            self.sleep(delay)
            if self.stopping:
                return ExitCode.PAUSED

    def _done_rows(self) -> int:
        meta = self._meta()
        return meta.done_rows if meta is not None else 0

    def _meta(self) -> JobMeta | None:
        try:
            meta = JobMeta.load(self.jobdir)
        except JobError:
            return None
        return catch_up(meta) if meta is not None else None

    def _run_once(self) -> tuple[int, str]:
        started = self.monotonic()
        logger.info("job %s: starting %s", self.jobdir, " ".join(self.command))
        # Its own process group: a Ctrl-C in the terminal reaches the supervisor only, which
        # passes one SIGINT on (two would force an unclean stop).
        child = self.child = subprocess.Popen(self.command, process_group=0)
        try:
            while True:
                code = child.poll()
                if code is not None:
                    return code, _describe(code)
                stuck_for = self.stuck_for(started)
                if stuck_for is not None and not self.stopping:
                    self._stop_stuck(child, stuck_for)
                    return child.wait(), f"was stuck (no activity for {stuck_for:.0f} s)"
                self.sleep(self.config.poll)
        finally:
            self.child = None

    def stuck_for(self, started: float) -> float | None:
        """How long the crawl started at ``started`` (a monotonic reading) has been silent, if
        that makes it stuck, else None."""
        meta = self._meta()
        if meta is None or meta.state is not JobState.PROCESSING:
            return None
        now = Reading.now(self.clock, self.monotonic)
        quiet = now.monotonic - started  # meta.json may still be the previous run's
        since_activity = seconds_quiet(meta, now)
        if since_activity is not None:
            quiet = min(quiet, since_activity)
        return quiet if quiet > meta.stuck_after else None

    def _stop_stuck(self, child: subprocess.Popen[bytes], quiet: float) -> None:
        logger.warning(
            "job %s: stuck, no activity for %.0f s: stopping the crawl (pid %d)",
            self.jobdir,
            quiet,
            child.pid,
        )
        child.send_signal(signal.SIGTERM)
        deadline = self.monotonic() + self.config.stop_grace
        while child.poll() is None and self.monotonic() < deadline:
            self.sleep(min(self.config.poll, 0.2))
        if child.poll() is None:
            logger.warning("job %s: the crawl did not stop; killing it", self.jobdir)
            child.kill()


def crawl_command(jobdir: Path, settings: Sequence[str], extra: Sequence[str]) -> list[str]:
    """The ``scrapy crawl check`` a supervisor runs for ``jobdir``."""
    command = [sys.executable, "-m", "scrapy", "crawl", "check", "--jobdir", str(jobdir)]
    for setting in settings:
        command += ["-s", setting]
    return command + list(extra)


def supervise(
    jobdir: Path, settings: Sequence[str], extra: Sequence[str], config: SuperviseConfig
) -> ExitCode:
    """``scrapy job run``: supervise the job's crawl until it ends for good (docs/jobs.md).
    ``jobdir`` may be a CSV: its default job, with the CSV for a first run. Logs to stderr and
    passes SIGINT and SIGTERM on to the crawl."""
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s [urlcheck supervisor] %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    install_printable(logging.getLogger().handlers)  # a job directory's names may be anyone's
    if jobdir.is_file():
        extra = ["-a", f"csv={jobdir}", *extra]
        jobdir = job_for(jobdir)
    try:
        refuse_links(jobdir)
    except LinkedFileError as exc:
        logger.error("%s", exc)
        return ExitCode.INPUT_ERROR
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


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"died of {signal.Signals(-code).name}"
        except ValueError:
            return f"died of signal {-code}"
    try:
        return f"exited with {code} ({ExitCode(code).name})"
    except ValueError:
        return f"exited with {code}"
