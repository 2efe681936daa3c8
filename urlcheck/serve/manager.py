"""The jobs under the server's root and the crawls that run them.

Each job is a directory; a job the server made also has ``serve.json``
(:mod:`urlcheck.serve.record`). A job is run by ``urlcheck job run DIR`` (the supervised crawl
of docs/jobs.md), spawned in a session of its own (:mod:`urlcheck.serve.processes`). Every
``tick`` (1 s) the manager looks at every job and:

* reaps the supervisors it started and records how each ended (done, cancelled, failed);
* adopts what runs already: a supervisor a previous server started (pid and start time in
  serve.json), or any crawl holding the job lock;
* recovers a job that should run and does not: a crawl that is stuck (``job status``'s rule)
  is killed once it has been seen stuck for ``recover_after`` seconds (its supervisor starts it
  again); a job that says ``processing`` with nothing running (killed, rebooted) is started
  again ``recover_after`` seconds after it was first seen so, and at once on the server's
  first look;
* keeps a job the user paused paused, even when its crawl was started again;
* starts the jobs that wait, oldest first, when no running job shares a site with them
  (:mod:`urlcheck.serve.sites`) and fewer than ``max_running`` run: the rest are ``queued``.

Every look is a few ``stat`` calls and a lock probe per job; nothing here holds a job's lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urlcheck.clock import Reading, parse_utc_iso, utc_iso
from urlcheck.jobs.errors import JobError, JobLockedError
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import (
    META_FILE,
    ControlAction,
    JobMeta,
    JobState,
    write_control,
)
from urlcheck.jobs.lock import lock_holder
from urlcheck.jobs.status import catch_up, derive_status
from urlcheck.jobs.stopped import cancel_stopped_job
from urlcheck.serve import cluster, processes
from urlcheck.serve.record import RECORD_FILE, ServeRecord, Want
from urlcheck.serve.results import ResultsIndex
from urlcheck.serve.sites import csv_sites
from urlcheck.serve.upload import JobOptions
from urlcheck.serve.views import (
    ENDED_STATES,
    State,
    actions,
    backoff_view,
    generation,
    given_up,
)

if TYPE_CHECKING:
    from urlcheck.serve.config import ServeConfig

logger = logging.getLogger(__name__)

JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
INPUT_FILE = "input.csv"
LOG_FILE = "crawl.log"
# How the check spider logs an input it cannot use (a sitemap that cannot be fetched, more rows
# than URLCHECK_MAX_ROWS): found in the crawl's log when its exit code says input error.
_SPIDER_ERROR = "[urlcheck.spiders.check] ERROR: "
RESULTS_FILE = "results.jsonl"
STATUS_TTL = 0.5  # seconds a job's status is reused by every poller
# A pause or cancel the user asked for is sent again to a crawl still not obeying it after this
# long: a crawl ignores a request written before it started, and one may start at any moment.
RESEND_AFTER = 5.0
TICK_INDEX_BUDGET = 16 << 20  # bytes of a running job's results indexed per tick at most

Spawner = Callable[..., int]


class RefusedError(Exception):
    """A request the job cannot take; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Job:
    id: str
    dir: Path
    record: ServeRecord | None = None
    meta: JobMeta | None = None
    child: int | None = None  # a supervisor this server spawned (to reap)
    holder: int | None = None  # the crawl holding the job lock (0: pid unknown)
    holder_since: tuple[int, float] | None = None  # (that crawl, monotonic time first seen)
    supervised: bool = False  # a supervisor of ours, or a previous server's, is alive
    seen_stuck: float | None = None  # monotonic time first seen stuck
    seen_dead: float | None = None  # monotonic time first seen dead (should run, nothing runs)
    sent: tuple[int, ControlAction, float] | None = None  # (crawl, request, monotonic time)
    launched_at: float | None = None  # wall time this server last started its crawl
    waiting: str | None = None  # why a job that should run waits
    index: ResultsIndex | None = None
    input_sites: set[str] | None = None  # sites of a job without serve.json, read once
    cached: tuple[float, dict[str, Any]] | None = None
    signatures: dict[str, tuple[int, int] | None] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return self.supervised or self.holder is not None

    @property
    def results(self) -> Path:
        if self.meta is not None and self.meta.results_path:
            named = Path(self.meta.results_path)
            # A job directory moved here from elsewhere has its results inside it.
            if named.parent == self.dir or not named.exists():
                return self.dir / named.name
            return named
        return self.dir / RESULTS_FILE


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


class JobManager:
    def __init__(
        self,
        config: ServeConfig,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        spawn: Spawner = processes.spawn,
        python: str = sys.executable,
    ) -> None:
        self.config = config
        self.root = config.jobs_root
        self.clock = clock
        self.monotonic = monotonic
        self._spawn = spawn
        self._python = python
        self.jobs: dict[str, Job] = {}
        self.children: dict[int, str] = {}  # pid -> job id, for every supervisor of ours
        self.lock = threading.RLock()
        self.first_look = True

    # --- looking -------------------------------------------------------------------------

    def refresh(self) -> None:
        """Track the job directories under the root: a UUID-named one the server made, or any
        directory holding a meta.json (``urlcheck check --jobdir ROOT/NAME``)."""
        found: set[str] = set()
        with contextlib.suppress(FileNotFoundError), os.scandir(self.root) as entries:
            for entry in entries:
                if not JOB_ID.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
                    continue
                path = Path(entry.path)
                if (path / META_FILE).is_file() or (path / RECORD_FILE).is_file():
                    found.add(entry.name)
                    if entry.name not in self.jobs:
                        self.jobs[entry.name] = Job(entry.name, path)
        for gone in set(self.jobs) - found:
            del self.jobs[gone]

    def get(self, job_id: str) -> Job:
        """The job of that id; RefusedError(404) for any other string. Ids are looked up, never
        joined to a path, so nothing a client sends can name a file outside the root."""
        with self.lock:
            job = self.jobs.get(job_id) if JOB_ID.fullmatch(job_id) else None
            if job is None:
                self.refresh()
                job = self.jobs.get(job_id) if JOB_ID.fullmatch(job_id) else None
            if job is None:
                raise RefusedError(404, "no such job")
            return job

    def observe(self, job: Job) -> None:
        """Read what changed of the job's files, and who runs it."""
        for name in (RECORD_FILE, META_FILE):
            signature = _signature(job.dir / name)
            if job.signatures.get(name) == signature and signature is not None:
                continue
            job.signatures[name] = signature
            try:
                if name == RECORD_FILE:
                    job.record = ServeRecord.load(job.dir)
                else:
                    job.meta = JobMeta.load(job.dir)
            except JobError as exc:
                logger.warning("job %s: %s", job.id, exc)
        job.holder = lock_holder(job.dir)
        record = job.record
        job.supervised = False
        if job.child is not None:
            job.supervised = True  # reaped in tick(); alive until then
        elif record is not None and record.supervisor_pid is not None:
            job.supervised = processes.alive(record.supervisor_pid, record.supervisor_start)
            if not job.supervised:
                self._forget_supervisor(job)

    def _forget_supervisor(self, job: Job) -> None:
        if job.record is not None and job.record.supervisor_pid is not None:
            job.record.supervisor_pid = job.record.supervisor_start = None
            self._save(job)

    def _save(self, job: Job) -> None:
        assert job.record is not None
        job.record.save(job.dir)
        job.signatures[RECORD_FILE] = _signature(job.dir / RECORD_FILE)
        job.cached = None

    def state(self, job: Job) -> State:
        meta, record = job.meta, job.record
        if record is not None and record.failed and not job.running:
            return State.FAILED
        if record is not None and record.want is Want.RERUN and not job.running:
            return State.QUEUED if job.waiting else State.PENDING
        if meta is not None and meta.state.terminal and not job.running:
            return State.DONE if meta.state is JobState.DONE else State.CANCELLED
        want = record.want if record is not None else None
        if job.running:
            if meta is not None and meta.state.terminal and not self._before_launch(job, meta):
                return State.DONE if meta.state is JobState.DONE else State.CANCELLED
            if meta is None or meta.state is JobState.PENDING or meta.state.terminal:
                return State.PENDING  # a crawl starting up
            if meta.state is JobState.PAUSED:
                return State.PAUSED
            if job.seen_stuck is not None:
                return State.STUCK
            return State.PROCESSING
        if want is Want.PAUSED or (
            want is None and meta is not None and meta.state is JobState.PAUSED
        ):
            return State.PAUSED
        if meta is not None and meta.state is JobState.PROCESSING and job.seen_dead is not None:
            return State.STUCK  # dead: recovered recover_after seconds after first seen
        if want in (Want.RUN, Want.RERUN):
            return State.QUEUED if job.waiting else State.PENDING
        if meta is not None and meta.state is JobState.PROCESSING:
            return State.STUCK  # a crawl started by hand that died
        return State.PAUSED if meta is not None and meta.state is JobState.PAUSED else State.PENDING

    @staticmethod
    def _before_launch(job: Job, meta: JobMeta) -> bool:
        """Whether meta.json's end is of a run before the one this server just started."""
        if job.launched_at is None or not meta.finished_at:
            return False
        try:
            return parse_utc_iso(meta.finished_at) < job.launched_at
        except ValueError:
            return True

    # --- the tick ------------------------------------------------------------------------

    def tick(self) -> None:
        with self.lock:
            self._reap()
            self.refresh()
            now = self.monotonic()
            for job in self.jobs.values():
                self.observe(job)
                self._settle(job)
                self._recover(job, now)
                self._keep_asked(job, now)
                if job.running and job.index is not None:
                    job.index.catch_up(budget=TICK_INDEX_BUDGET)
                job.cached = None
            self.schedule()
            self.first_look = False

    def _reap(self) -> None:
        for pid, job_id in list(self.children.items()):
            code = processes.reap(pid)
            if code is None:
                if processes.alive(pid, None):
                    continue
                # it ended between the two looks (a zombie is not alive): its code is there now
                code = processes.reap(pid)
            del self.children[pid]
            job = self.jobs.get(job_id)
            if job is None or job.child != pid:
                continue
            job.child = None
            if job.record is not None:
                job.record.supervisor_pid = job.record.supervisor_start = None
                if code is not None:
                    self._ended(job, code)
                self._save(job)

    def _ended(self, job: Job, code: int) -> None:
        """Record how our supervisor ended (exit codes: docs/jobs.md)."""
        assert job.record is not None
        logger.info("job %s: the crawl's supervisor ended with exit code %d", job.id, code)
        if job.record.want is Want.RERUN:
            return  # asked to run again while this run was ending
        if job.record.want is Want.CANCEL and code not in (
            ExitCode.FINISHED,
            ExitCode.FAILED_VERDICTS,
            ExitCode.CANCELLED,
        ):
            return  # stopped before it obeyed: the next tick marks it cancelled
        if code in (ExitCode.FINISHED, ExitCode.FAILED_VERDICTS, ExitCode.CANCELLED):
            job.record.want = Want.ENDED
        elif code == ExitCode.INPUT_ERROR:
            job.record.want = Want.ENDED
            job.record.failed = self._why(job) or "the crawl refused the job's input or settings"
        elif code == ExitCode.WRITE_FAILED:
            job.record.want = Want.ENDED
            job.record.failed = self._why(job) or "results or job files could not be written"
        elif code == ExitCode.GAVE_UP:
            job.record.want = Want.ENDED
            job.record.failed = (
                "the crawl kept dying or getting stuck: restarts without progress used up"
            )
        elif code in (ExitCode.LOCKED, ExitCode.PAUSED) or code < 0:
            pass  # another process runs it, or a signal stopped it: looked at again
        else:
            job.record.want = Want.ENDED
            job.record.failed = f"the crawl ended with exit code {code}"

    def _why(self, job: Job) -> str | None:
        """The crawl's own one-line error from its log, with the server's paths taken out."""
        try:
            with (job.dir / LOG_FILE).open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 16384))
                tail = log.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return None
        for line in reversed(tail):
            text = _error_of(line)
            if text is not None:
                shown = job.record.csv_name if job.record is not None else ""
                text = text.replace(str(job.dir / INPUT_FILE), shown or "the input")
                return text.replace(str(job.dir), "the job").replace(str(self.root), "the jobs")[
                    :300
                ]
        return None

    def _settle(self, job: Job) -> None:
        """A job that should run but has ended (adopted, or ended while the server was down)."""
        record, meta = job.record, job.meta
        if record is None or job.running or record.want is not Want.RUN:
            return
        if meta is not None and meta.state.terminal:
            record.want = Want.ENDED
            self._save(job)

    def _should_run(self, job: Job) -> bool:
        record = job.record
        return (
            record is not None
            and not job.running
            and not record.failed
            and record.want in (Want.RUN, Want.RERUN)
        )

    def _reading(self) -> Reading:
        """Now, for a job's silence: on the monotonic clock when its meta.json is of this boot."""
        return Reading.now(self.clock, self.monotonic)

    def _recover(self, job: Job, now: float) -> None:
        meta = job.meta
        stuck = False
        if job.holder is None:
            job.holder_since = None
        elif job.holder_since is None or job.holder_since[0] != job.holder:
            job.holder_since = (job.holder, now)
        if job.holder_since is not None and meta is not None:
            # A crawl just started may find the previous run's last activity in meta.json: it
            # is judged on its own silence only (as the supervisor does).
            own = now - job.holder_since[1] > meta.stuck_after
            stuck = own and derive_status(catch_up(meta, job.dir), now=self._reading()).stuck
        if stuck:
            if job.seen_stuck is None:
                job.seen_stuck = now
                logger.warning("job %s: stuck (no activity for a while)", job.id)
            elif now - job.seen_stuck >= self.config.recover_after and job.holder:
                logger.warning(
                    "job %s: still stuck; killing its crawl (pid %d)", job.id, job.holder
                )
                processes.kill(job.holder)
                job.seen_stuck = None
        else:
            job.seen_stuck = None
        # Dead: started before, it should run, and nothing runs it (killed, rebooted, or its
        # supervisor stopped by a signal). Started again recover_after later; at once when the
        # server first looks at a job an earlier server started.
        dead = (
            self._should_run(job)
            and job.record is not None
            and job.record.want is Want.RUN
            and job.record.runs > 0
        )
        at_once = self.first_look and job.launched_at is None
        if not dead:
            job.seen_dead = None
        elif job.seen_dead is None:
            job.seen_dead = now - (self.config.recover_after if at_once else 0.0)
            if not at_once:
                logger.warning("job %s: its crawl is gone; starting it again soon", job.id)

    def _keep_asked(self, job: Job, now: float) -> None:
        """Hold a job to the pause or cancel its user asked for, whatever crawl runs it."""
        record, meta = job.record, job.meta
        if record is None or record.want not in (Want.PAUSED, Want.CANCEL):
            job.sent = None
            return
        if record.want is Want.CANCEL and not job.running:
            self._cancel_now(job)
            return
        if not job.holder or meta is None:
            return
        if record.want is Want.PAUSED:
            action = ControlAction.PAUSE
            due = meta.state is JobState.PROCESSING
        else:
            action = ControlAction.CANCEL
            due = not meta.state.terminal
        sent = job.sent
        if due and (
            sent is None or sent[:2] != (job.holder, action) or now - sent[2] >= RESEND_AFTER
        ):
            self._send(job, action, now)

    def _send(self, job: Job, action: ControlAction, now: float) -> None:
        write_control(job.dir, action, clock=self.clock)
        job.sent = (job.holder or 0, action, now)

    def _cancel_now(self, job: Job) -> str:
        """Cancel a job no crawl holds: marked cancelled under its lock, or, should a crawl
        have taken it meanwhile, that crawl is asked."""
        record = job.record
        assert record is not None
        meta = job.meta
        if meta is None or not meta.state.terminal:
            try:
                cancel_stopped_job(job.dir, clock=self.clock, total_rows=record.rows)
            except JobLockedError:
                self._send(job, ControlAction.CANCEL, self.monotonic())
                return "cancel requested; the rows in hand finish first, the results are kept"
        record.want = Want.ENDED
        self._save(job)
        job.signatures.pop(META_FILE, None)
        self.observe(job)
        return "cancelled"

    # --- scheduling ------------------------------------------------------------------------

    def sites(self, job: Job) -> set[str]:
        """The sites a job names in its CSV, and those its chains visited so far."""
        if job.record is not None:
            found = set(job.record.sites)
        else:
            if job.input_sites is None:
                try:
                    job.input_sites = csv_sites(job.dir / INPUT_FILE)[1]
                except Exception:  # noqa: BLE001 (any unreadable input: no sites known)
                    job.input_sites = set()
            found = set(job.input_sites)
        if job.index is not None:
            found |= job.index.sites
        return found

    def _ready(self, job: Job, now: float) -> bool:
        if not self._should_run(job):
            return False
        if job.seen_dead is not None:
            return now - job.seen_dead >= self.config.recover_after
        return True

    def schedule(self) -> None:
        now = self.monotonic()
        running = [job for job in self.jobs.values() if job.running]
        busy: set[str] = set()
        for job in running:
            if job.index is None:
                job.index = ResultsIndex(job.results)
            busy |= self.sites(job)
        count = len(running)
        waiting = sorted(
            (job for job in self.jobs.values() if self._ready(job, now)),
            key=lambda job: (job.record.created_at if job.record else "", job.id),
        )
        for job in self.jobs.values():
            if not self._should_run(job):
                job.waiting = None
        for job in waiting:
            sites = self.sites(job)
            if sites & busy:
                shared = ", ".join(sorted(sites & busy)[:3])
                job.waiting = f"waits for another job checking the same sites ({shared})"
            elif count >= self.config.max_running:
                job.waiting = f"waits for a free place ({self.config.max_running} jobs run at once)"
            else:
                job.waiting = None
                self.launch(job)
                count += 1
            busy |= sites  # reserved: a later job may not take a site a waiting one needs

    def launch(self, job: Job) -> None:
        record = job.record
        assert record is not None
        options = JobOptions.from_dict(record.options) if record.options else None
        settings = [
            *(options.settings() if options is not None else ()),
            # the upload cap, held by the crawl too: a sitemap index's rows are counted there
            f"URLCHECK_MAX_ROWS={self.config.max_rows}",
            *self.config.crawl_settings,
            f"URLCHECK_BLOCK_PRIVATE_INPUT={self.config.block_private_input}",
        ]
        argv = [self._python, "-m", "urlcheck", "job", "run", str(job.dir)]
        argv += ["--restart-delay", f"{self.config.restart_delay:g}"]
        if self.config.config_file is not None:  # the server's settings file, for its crawls
            argv += ["--config", str(self.config.config_file)]
        for setting in settings:
            argv += ["-s", setting]
        # The job's copy of its input; a sitemap given by URL is fetched by the first crawl,
        # which keeps it there.
        if (job.dir / INPUT_FILE).is_file():
            argv += ["--", "-a", f"csv={job.dir / INPUT_FILE}"]
            if options is not None and options.sheet:
                argv += ["-a", f"sheet={options.sheet}"]
        elif record.input_url:
            argv += ["--", "-a", f"csv={record.input_url}"]
        pid = self._spawn(argv, log=job.dir / LOG_FILE, env=os.environ)
        self.children[pid] = job.id
        job.child = pid
        job.launched_at = self.clock()
        job.supervised = True
        job.seen_dead = job.seen_stuck = None
        job.waiting = None
        job.index = ResultsIndex(job.results)
        record.supervisor_pid = pid
        record.supervisor_start = processes.start_time(pid)
        record.runs += 1
        if record.want is Want.RERUN:
            record.want = Want.RUN
        self._save(job)
        logger.info("job %s: started its crawl (supervisor pid %d)", job.id, pid)

    # --- requests ------------------------------------------------------------------------

    def create(
        self,
        job_id: str,
        *,
        name: str,
        csv_name: str,
        rows: int,
        sites: Sequence[str],
        options: JobOptions,
        input_url: str = "",
    ) -> Job:
        """A job whose directory (``ROOT/job_id``, holding input.csv, or for ``input_url``, a
        sitemap's URL, nothing yet: its crawl keeps the sitemap as input.csv) the caller
        made."""
        with self.lock:
            jobdir = self.root / job_id
            record = ServeRecord(
                id=job_id,
                name=name,
                csv_name=csv_name,
                rows=rows,
                options=options.to_dict(),
                created_at=utc_iso(self.clock()),
                sites=sorted(sites),
                input_url=input_url,
            )
            record.save(jobdir)
            self.refresh()
            job = self.jobs[job_id]
            self.observe(job)
            self.schedule()
            return job

    def new_job_dir(self) -> tuple[str, Path]:
        self.root.mkdir(parents=True, exist_ok=True)
        job_id = str(uuid.uuid4())
        path = self.root / job_id
        path.mkdir(mode=0o700)
        return job_id, path

    def control(self, job_id: str, action: str) -> str:
        """pause, resume, cancel or rerun: what was done, in words; or raises RefusedError."""
        with self.lock:
            job = self.get(job_id)
            self.observe(job)
            state = self.state(job)
            if action == "rerun":
                return self._rerun(job, state)
            if state in ENDED_STATES:
                raise RefusedError(409, f"the job is {state.value}: nothing to {action}")
            record = self._adopt_record(job)
            crawl = job.holder is not None
            sent = cluster.steer(job.dir, action, self.config.redis_url, self.config.redis_params)
            now = self.monotonic()
            if action == "pause":
                record.want = Want.PAUSED
                self._save(job)
                if crawl:
                    self._send(job, ControlAction.PAUSE, now)
                # A supervisor of ours without its crawl yet: the pause is held to it (tick).
                started = crawl or sent or job.running
                return "pause requested" if started else "paused: it will not be started"
            if action == "resume":
                record.want = Want.RUN
                self._save(job)
                if crawl:
                    self._send(job, ControlAction.RESUME, now)
                    return "resume requested"
                self.schedule()
                return "resumed: its crawl starts when its sites are free"
            if action == "cancel":
                record.want = Want.CANCEL
                self._save(job)
                if crawl or sent:
                    self._send(job, ControlAction.CANCEL, now)
                    return "cancel requested; the rows in hand finish first, the results are kept"
                if job.supervised and record.supervisor_pid:
                    # Between two crawls: the supervisor stops and starts none.
                    processes.kill(record.supervisor_pid, signal.SIGTERM)
                return self._cancel_now(job)
            raise RefusedError(404, "no such action")

    def _rerun(self, job: Job, state: State) -> str:
        if state not in ENDED_STATES and not (state is State.PAUSED and not job.running):
            raise RefusedError(409, f"the job is {state.value}: cancel it before running it again")
        record = self._adopt_record(job)
        record.failed = None
        record.want = Want.RERUN
        self._save(job)
        job.seen_dead = None
        self.schedule()
        return "the job runs again; the previous results are kept beside the new ones"

    def _adopt_record(self, job: Job) -> ServeRecord:
        """serve.json for a job the server did not make: from now on it is the server's."""
        if job.record is None:
            meta = job.meta
            job.record = ServeRecord(
                id=job.id,
                name=job.id,
                csv_name=INPUT_FILE,
                rows=meta.total_rows if meta is not None else 0,
                created_at=(meta.created_at if meta is not None else None) or utc_iso(self.clock()),
                want=Want.RUN if job.running else Want.ENDED,
                sites=sorted(self.sites(job)),
            )
            self._save(job)
        return job.record

    # --- views -----------------------------------------------------------------------------

    def status(self, job_id: str) -> dict[str, Any]:
        """The job's status as the API shows it: no server path, no credential."""
        with self.lock:
            job = self.get(job_id)
            now = self.monotonic()
            if job.cached is None or now - job.cached[0] >= STATUS_TTL:
                self.observe(job)
                job.cached = (now, self._view(job))
            # Never cached: a poll must learn at once that the file it reads was replaced.
            return {**job.cached[1], "generation": generation(job.results)}

    def views(self) -> list[dict[str, Any]]:
        with self.lock:
            self.refresh()
            views = [self.status(job_id) for job_id in self.jobs]
        return sorted(views, key=lambda v: v["created_at"] or "", reverse=True)

    def _view(self, job: Job) -> dict[str, Any]:
        record = job.record
        meta = catch_up(job.meta, job.dir) if job.meta is not None else None
        state = self.state(job)
        wall = self.clock()
        total = (meta.total_rows if meta else 0) or (record.rows if record else 0)
        done = meta.done_rows if meta else 0
        status = derive_status(meta, now=self._reading(), holder_pid=job.holder) if meta else None
        counts = meta.counts.to_dict() if meta else {"status": {}, "verdict": {}}
        view: dict[str, Any] = {
            "id": job.id,
            "name": (record.name if record else "") or job.id,
            "csv_name": (record.csv_name if record else "") or INPUT_FILE,
            "state": state.value,
            "running": job.running,
            "waiting": job.waiting if state is State.QUEUED else None,
            "failed": record.failed if record else None,
            "done_rows": done,
            "total_rows": total,
            "percent": round(100.0 * min(done, total) / total, 1) if total else None,
            "rate": meta.rate if meta and state is State.PROCESSING else None,
            "eta_seconds": status.eta_seconds if status and state is State.PROCESSING else None,
            "counts": counts,
            "backoff_hosts": backoff_view(meta, wall),
            "given_up_hosts": given_up(job.dir),
            # as the crawl last judged it over the job's results (meta.json): None, not judged
            "many_to_one": meta.many_to_one.to_dict() if meta and meta.many_to_one else None,
            "created_at": (record.created_at if record else None)
            or (meta.created_at if meta else None),
            "started_at": meta.started_at if meta else None,
            "finished_at": meta.finished_at if meta else None,
            "last_activity_at": meta.last_activity_at if meta else None,
            "options": dict(record.options) if record else {},
            "actions": actions(state, job.running),
        }
        distributed = cluster.workers(job.dir, self.config.redis_url, self.config.redis_params)
        if distributed is not None:
            view["cluster"] = distributed
        return view

    def index(self, job: Job) -> ResultsIndex:
        with self.lock:
            path = job.results
            if job.index is None or job.index.path != path:
                job.index = ResultsIndex(path)
            return job.index


def _error_of(line: str) -> str | None:
    """The error a line of a crawl's log states: the command's own (``urlcheck: ...``), or the
    check spider's on the input it read; None for any other line."""
    if line.startswith("urlcheck: "):
        return line.removeprefix("urlcheck: ")
    _, found, error = line.partition(_SPIDER_ERROR)
    return error if found else None
