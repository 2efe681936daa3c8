"""What ``scrapy job status`` shows, derived from meta.json, results.jsonl and a clock.

The running crawl rewrites meta.json's counts at most every 2 s; :func:`catch_up` adds what
results.jsonl holds beyond the offset meta.json recorded, so the status is exact even after a
``kill -9``. ``stuck`` is derived here and never stored: a job is stuck when it says
``processing`` but has shown no activity for ``stuck_after`` seconds (meta.json's, from
``URLCHECK_JOB_STUCK_AFTER``). The crawl's heartbeat refreshes
``last_activity_at`` at least every 30 s while requests complete or a host is in back-off, so a
long back-off never reads as stuck; a crashed or hung crawl does. The silence is measured on the
monotonic clock when meta.json was written in this boot (:func:`seconds_quiet`), so a wall clock
step makes no healthy crawl stuck.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urlcheck.check.printable import printable
from urlcheck.clock import Reading, parse_utc_iso, utc_iso
from urlcheck.jobs.counts import Counts
from urlcheck.jobs.done import read_tail, scan_results
from urlcheck.jobs.files import RESULTS_FILE, STUCK_AFTER_DEFAULT, BackoffHost, JobMeta, JobState

if TYPE_CHECKING:
    from urlcheck.jobs.landings import ManyToOneSeen

STUCK_AFTER_SECONDS = STUCK_AFTER_DEFAULT


def catch_up(meta: JobMeta, jobdir: Path | None = None) -> JobMeta:
    """``meta`` with its counts brought up to what its results file holds now.

    Reads only the lines past ``meta.results_bytes`` (at most ~2 s of crawling while a crawl
    runs; what a crashed crawl wrote after its last meta.json write otherwise). A file shorter
    than that offset was replaced behind meta.json's back: it is counted whole, read-only.
    A job directory moved elsewhere (``jobdir``) has its results.jsonl in it.
    """
    if not meta.results_path or meta.results_bytes is None:
        return meta
    path = Path(meta.results_path)
    if jobdir is not None and not path.exists() and path.name == RESULTS_FILE:
        path = jobdir / RESULTS_FILE
    try:
        size = path.stat().st_size
    except OSError:
        return meta
    if size == meta.results_bytes:
        return meta
    caught = copy.deepcopy(meta)
    if size < meta.results_bytes:
        scan = scan_results(path, repair=False)
        caught.done_rows, caught.counts = scan.lines, scan.counts
        caught.results_bytes = size - scan.repaired_bytes
        return caught
    tail = read_tail(path, meta.results_bytes)
    caught.done_rows += tail.lines
    caught.counts.merge(tail.counts)
    caught.results_bytes = tail.end
    if tail.lines:  # the last line written is the latest sign of life
        written = utc_iso(path.stat().st_mtime)
        if caught.last_activity_at is None or _later(written, caught.last_activity_at):
            caught.last_activity_at = written
    return caught


def _later(a: str, b: str) -> bool:
    try:
        return parse_utc_iso(a) > parse_utc_iso(b)
    except ValueError:
        return True


def format_duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


@dataclass(frozen=True)
class JobStatus:
    jobdir: str
    state: JobState
    stuck: bool
    done_rows: int
    total_rows: int
    percent: float | None
    rate: float | None  # rows per minute over the current run
    eta_seconds: float | None
    last_activity_at: str | None
    seconds_since_activity: float | None
    holder_pid: int | None  # pid holding the job lock (0: unknown pid), None: no crawl running
    backoff_hosts: list[BackoffHost] = field(default_factory=list)
    counts: Counts = field(default_factory=Counts)
    created_at: str | None = None
    started_at: str | None = None
    updated_at: str | None = None
    finished_at: str | None = None
    finish_reason: str | None = None
    input_path: str = ""
    results_path: str = ""
    many_to_one: ManyToOneSeen | None = None  # as the crawl's last meta.json write judged it

    @property
    def running(self) -> bool:
        return self.holder_pid is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "jobdir": self.jobdir,
            "state": self.state.value,
            "stuck": self.stuck,
            "running": self.running,
            "pid": self.holder_pid or None,
            "done_rows": self.done_rows,
            "total_rows": self.total_rows,
            "percent": self.percent,
            "rate": self.rate,
            "eta_seconds": self.eta_seconds,
            "last_activity_at": self.last_activity_at,
            "seconds_since_activity": self.seconds_since_activity,
            "backoff_hosts": [host.to_dict() for host in self.backoff_hosts],
            "counts": self.counts.to_dict(),
            "created_at": self.created_at,
            "started_at": self.started_at,
            "updated_at": self.updated_at,
            "finished_at": self.finished_at,
            "finish_reason": self.finish_reason,
            "input_path": self.input_path,
            "results_path": self.results_path,
            "many_to_one": None if self.many_to_one is None else self.many_to_one.to_dict(),
        }


def _seconds_since(stamp: str | None, now: float) -> float | None:
    if stamp is None:
        return None
    try:
        return max(0.0, now - parse_utc_iso(stamp))
    except ValueError:
        return None


def seconds_quiet(meta: JobMeta, now: Reading | float) -> float | None:
    """Seconds since the job's last sign of life, None when it never showed one.

    Read in the boot that wrote meta.json, the monotonic readings are compared: no wall clock
    step (NTP, an administrator, a VM resumed) moves them. Otherwise (a reboot, which a running
    crawl does not survive; another machine; a system without a boot id; a meta.json of an older
    urlcheck; a plain wall time ``now``) the wall clock times are.
    """
    if (
        isinstance(now, Reading)
        and now.boot is not None
        and now.boot == meta.boot_id
        and meta.last_activity_monotonic is not None
        and meta.last_activity_monotonic <= now.monotonic  # else not a reading of this clock
    ):
        return now.monotonic - meta.last_activity_monotonic
    wall = now.wall if isinstance(now, Reading) else now
    return _seconds_since(meta.last_activity_at or meta.started_at or meta.updated_at, wall)


def derive_status(
    meta: JobMeta,
    *,
    now: Reading | float,
    jobdir: Path | str = "",
    holder_pid: int | None = None,
    stuck_after: float | None = None,
) -> JobStatus:
    """The status shown to users at ``now`` (a :class:`~urlcheck.clock.Reading`, or seconds
    since the epoch: the wall clock only); ``stuck_after`` defaults to the threshold the crawl
    recorded in meta.json."""
    if stuck_after is None:
        stuck_after = meta.stuck_after
    since = seconds_quiet(meta, now)
    stuck = meta.state is JobState.PROCESSING and (since is None or since > stuck_after)
    total, done = meta.total_rows, min(meta.done_rows, meta.total_rows or meta.done_rows)
    percent = round(100.0 * done / total, 1) if total else None
    eta = None
    if meta.state is JobState.PROCESSING and meta.rate and total > done:
        eta = round((total - done) / meta.rate * 60.0, 1)
    return JobStatus(
        jobdir=str(jobdir),
        state=meta.state,
        stuck=stuck,
        done_rows=meta.done_rows,
        total_rows=total,
        percent=percent,
        rate=meta.rate,
        eta_seconds=eta,
        last_activity_at=meta.last_activity_at,
        seconds_since_activity=None if since is None else round(since, 1),
        holder_pid=holder_pid,
        backoff_hosts=list(meta.backoff_hosts),
        counts=meta.counts.copy(),
        created_at=meta.created_at,
        started_at=meta.started_at,
        updated_at=meta.updated_at,
        finished_at=meta.finished_at,
        finish_reason=meta.finish_reason,
        input_path=meta.input_path,
        results_path=meta.results_path,
        many_to_one=meta.many_to_one,
    )


def _tally(values: dict[str, int]) -> str:
    return ", ".join(f"{key} {value:,}" for key, value in values.items())


def format_status(status: JobStatus) -> str:
    """A short human summary, one fact per line."""
    head = f"job {status.jobdir}: {status.state.value}"
    if status.stuck:
        quiet = status.seconds_since_activity
        head += (
            f"  STUCK: no activity for {format_duration(quiet)}"
            if quiet is not None
            else "  STUCK: no activity recorded"
        )
    lines = [head]
    if status.total_rows:
        lines.append(
            f"  rows:          {status.done_rows:,} / {status.total_rows:,} ({status.percent}%)"
        )
    else:
        lines.append(f"  rows:          {status.done_rows:,} done (total not known yet)")
    if status.state is JobState.PROCESSING:
        rate = "-" if status.rate is None else f"{status.rate:,.1f} rows/min"
        eta = "" if status.eta_seconds is None else f", ETA {format_duration(status.eta_seconds)}"
        lines.append(f"  rate:          {rate}{eta}")
    if status.last_activity_at:
        ago = status.seconds_since_activity
        suffix = "" if ago is None else f" ({format_duration(ago)} ago)"
        lines.append(f"  last activity: {status.last_activity_at}{suffix}")
    if status.holder_pid is None:
        process = "none running"
        if status.state is JobState.PROCESSING:
            process += " (the crawl ended without closing: run it again to resume)"
    else:
        process = f"crawl running, pid {status.holder_pid or 'unknown'}"
    lines.append(f"  process:       {process}")
    if status.backoff_hosts:
        hosts = "; ".join(
            f"{h.host} (attempt {h.attempt}, {format_duration(h.seconds_left)} left)"
            for h in status.backoff_hosts
        )
        lines.append(f"  back-off:      {len(status.backoff_hosts)} host(s): {hosts}")
    elif status.state is JobState.PROCESSING:
        lines.append("  back-off:      none")
    # A row's first answer (a 301: redirected) and its final one (the end of its chain).
    counts = status.counts
    first = _tally(counts.by_first_status) if counts.first_counted() else "- (counted next run)"
    lines.append(f"  first answers: {first}")
    lines.append(f"  final answers: {_tally(counts.by_status)}")
    lines.append(f"  verdicts:      {_tally(status.counts.by_verdict)}")
    # Rows per check (docs/urls-and-verdicts.md): failed by it, warned of it.
    if status.counts.by_reason:
        lines.append(f"  failed checks: {_tally(_by_count(status.counts.by_reason))}")
    if status.counts.by_warning:
        lines.append(f"  warnings:      {_tally(_by_count(status.counts.by_warning))}")
    if status.many_to_one is not None:
        lines.append(f"  many_to_one:   {_many_to_one(status.many_to_one, status.done_rows)}")
    if status.finished_at:
        lines.append(f"  finished:      {status.finished_at} ({status.finish_reason})")
    elif status.started_at:
        lines.append(f"  started:       {status.started_at}")
    # meta.json and the paths are a job directory's, which may come from anyone
    return "\n".join(printable(line) for line in lines)


MANY_TO_ONE_SHOWN = 5  # landing URLs on the status line
_URL_SHOWN = 200


def _many_to_one(seen: ManyToOneSeen, done_rows: int) -> str:
    """The flagged landing URLs and their rows; over how many rows, when not all done yet."""
    over = f" (over the first {seen.read_rows:,} rows)" if seen.read_rows < done_rows else ""
    if not seen.landings:
        return f"none{over}"
    shown = "; ".join(
        f"{url[:_URL_SHOWN]}{'...' if len(url) > _URL_SHOWN else ''} ({n:,} rows)"
        for url, n in seen.urls[:MANY_TO_ONE_SHOWN]
    )
    more = seen.landings - min(len(seen.urls), MANY_TO_ONE_SHOWN)
    return f"{seen.rows:,} rows on {seen.landings:,} landing URL(s){over}: {shown}" + (
        f"; and {more:,} more" if more > 0 else ""
    )


def _by_count(tally: dict[str, int], limit: int = 12) -> dict[str, int]:
    """The most frequent codes first, at most ``limit`` (a job dir's names are printable'd)."""
    top = sorted(tally.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return {printable(code): n for code, n in top}
