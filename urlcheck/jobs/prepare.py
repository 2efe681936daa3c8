"""Before a run: decide between a new job, a resume and a fresh run, and read what is done.

- No meta.json: a new job (results.jsonl, if someone left one there, still counts as done).
- Whatever the state, a results file counts only if it is this input's: a line whose URL is
  not its row's URL in the CSV (another job's results, ``-a out=`` pointing at them, or a file
  that holds no results at all) makes the whole file set aside, renamed with a timestamp and
  logged, and the run starts with no row done (:mod:`urlcheck.jobs.owned`).
- Every job keeps its own copy of the CSV (``input.csv``): the run reads that copy, so the job
  can be resumed, or re-checked, from its directory alone, on any machine, whatever happens
  to the original file.
- An unfinished job (pending, processing, paused; also after a crash): resumed, but only with
  the CSV it was started with (same sha256), else :class:`InputMismatchError` before anything
  is touched.
- A done or cancelled job: a fresh run. The previous results.jsonl and meta.json are kept under
  a timestamped name so runs can be compared.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from urlcheck.clock import parse_utc_iso, utc_compact, utc_iso
from urlcheck.input.csvfile import sha256_file
from urlcheck.jobs.context import JobContext, PausedHosts, no_paused_hosts
from urlcheck.jobs.done import ResultsScan, Vouched, dropped_path, scan_results
from urlcheck.jobs.errors import InputMismatchError
from urlcheck.jobs.files import (
    INPUT_COPY,
    META_FILE,
    RESULTS_FILE,
    JobMeta,
    fsync_dir,
)
from urlcheck.jobs.nofollow import open_nofollow, refuse_links, replace_temp
from urlcheck.jobs.owned import row_url_hashes
from urlcheck.jobs.recheck import Recheck, rechecked_path, take_out
from urlcheck.jobs.reserve import make_reserve

if TYPE_CHECKING:
    from urlcheck.clock import Clock
    from urlcheck.jobs.lock import JobLock

logger = logging.getLogger(__name__)


@dataclass
class PreparedJob:
    jobdir: Path
    results_path: Path
    input_path: Path
    input_checksum: str
    meta: JobMeta
    scan: ResultsScan
    fresh: bool  # a new job or a new run of a finished one, as opposed to a resume
    archived: list[Path] = field(default_factory=list)  # previous run's files, renamed

    def context(
        self,
        *,
        total_rows: int,
        user_agent: str = "",
        paused_hosts: PausedHosts = no_paused_hosts,
        lock: JobLock | None = None,
    ) -> JobContext:
        """The JobContext for the spider, starting from what the scan found done."""
        return JobContext(
            jobdir=self.jobdir,
            results_path=self.results_path,
            input_path=Path(self.meta.input_path or self.input_path),
            input_checksum=self.input_checksum,
            total_rows=total_rows,
            done_rows=len(self.scan.done),
            results_bytes=self.meta.results_bytes or 0,
            counts=self.scan.counts.copy(),
            user_agent=user_agent,
            paused_hosts=paused_hosts,
            lock=lock,
        )


def input_copy(jobdir: Path) -> Path:
    return jobdir / INPUT_COPY


def _is_copy(jobdir: Path, input_path: Path) -> bool:
    return input_path.resolve() == input_copy(jobdir).resolve()


def check_input(
    jobdir: Path, input_path: Path, *, recheck: bool = False
) -> tuple[JobMeta | None, str]:
    """The job's meta (None for a new job) and the CSV's sha256; raises InputMismatchError
    when an unfinished job (any job, for a re-check) was started with different content.
    Reads only."""
    meta = JobMeta.load(jobdir) if (jobdir / META_FILE).exists() else None
    if meta is not None and meta.input_sha256 and _is_copy(jobdir, input_path):
        return meta, meta.input_sha256  # the job's own copy: its checksum is the job's
    checksum = sha256_file(input_path)
    if (
        meta is not None
        and (recheck or not meta.state.terminal)
        and meta.input_sha256
        and meta.input_sha256 != checksum
    ):
        raise InputMismatchError(jobdir, input_path, meta.input_sha256, checksum)
    return meta, checksum


def keep_input(jobdir: Path, input_path: Path, checksum: str, *, known: str = "") -> Path:
    """The job's copy of the CSV, made (atomically) unless it already holds ``checksum``
    (``known``: the checksum meta.json recorded for the copy, trusted to spare a read)."""
    copy = input_copy(jobdir)
    if _is_copy(jobdir, input_path):
        return copy
    if copy.exists() and (known or sha256_file(copy)) == checksum:
        return copy
    tmp = replace_temp(copy)
    digest = hashlib.sha256()
    try:
        with input_path.open("rb") as src, open_nofollow(tmp, "xb") as out:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != checksum:
            raise OSError(f"{input_path} changed while it was being copied into {jobdir}")
        tmp.replace(copy)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno and not exc.filename:  # a write() names none
            raise OSError(exc.errno, exc.strerror, str(copy)) from exc
        raise
    fsync_dir(jobdir)
    return copy


def _stamp(meta: JobMeta, now: float) -> str:
    when = now
    for candidate in (meta.finished_at, meta.updated_at):
        if candidate:
            try:
                when = parse_utc_iso(candidate)
                break
            except ValueError:
                continue
    return utc_compact(when)


def free_name(path: Path, stamp: str) -> Path:
    """``results.jsonl`` -> ``results.<stamp>.jsonl`` (``-1``, ``-2``... if taken)."""
    name, tail = path.name, ""
    if name.endswith(".dropped"):
        name, tail = name[: -len(".dropped")], ".dropped"
    stem, dot, ext = name.rpartition(".")
    base, suffix = (stem, f".{ext}") if dot and stem else (name, "")
    candidate = path.with_name(f"{base}.{stamp}{suffix}{tail}")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{base}.{stamp}-{n}{suffix}{tail}")
        n += 1
    return candidate


_free_name = free_name  # the name urlcheck.jobs.resultsfile first imported


def archive_run(jobdir: Path, results_path: Path, meta: JobMeta, now: float) -> list[Path]:
    """Rename the finished run's results (and meta.json) aside with a UTC timestamp."""
    stamp = _stamp(meta, now)
    moved = []
    for path in (results_path, dropped_path(results_path), jobdir / META_FILE):
        if path.exists():
            target = free_name(path, stamp)
            path.rename(target)
            moved.append(target)
    return moved


def set_aside(results: Path, why: str, now: float) -> Path:
    """Rename ``results``, which is not this job's for the reason ``why``, out of its way."""
    target = free_name(results, f"notthisjob-{utc_compact(now)}")
    results.rename(target)
    logger.warning(
        "%s is not this job's results (%s): kept it as %s; none of its rows counts as done",
        results,
        why,
        target.name,
    )
    return target


def _scan_owned(
    results: Path,
    input_path: Path,
    max_row: int | None,
    now: float,
    archived: list[Path],
    *,
    vouched: Vouched | None = None,
    sheet: str | None = None,
) -> ResultsScan:
    """The scan of ``results`` when every line is the input's; else it is set aside (added to
    ``archived``) and the scan is empty. Read-only until the file is known to be the job's.

    A start that meta.json vouches for, found as it says (its size, its lines, a row each), was
    written by this job: its rows are read by their keys alone and its URLs not compared (a
    resume's first request waits for this scan: reading the input's URLs costs 0.8 s a million
    rows)."""
    try:
        size = results.lstat().st_size
    except FileNotFoundError:
        size = 0
    if not size:
        return scan_results(results, max_row=max_row)
    if vouched is not None:
        scan = scan_results(results, max_row=max_row, repair=False, vouched=vouched, log=False)
        if scan.vouch_held:
            if scan.needs_repair:
                scan = scan_results(results, max_row=max_row, vouched=vouched)
            return scan
    scan = scan_results(
        results, max_row=max_row, repair=False, urls=row_url_hashes(input_path, sheet), log=False
    )
    if scan.foreign:
        archived.append(set_aside(results, scan.foreign, now))
        return scan_results(results, max_row=max_row)  # nothing there now: an empty scan
    if scan.needs_repair:
        scan = scan_results(results, max_row=max_row)
    return scan


def _vouched(meta: JobMeta | None, results: Path) -> Vouched | None:
    """What an unfinished job's meta.json says its results file starts with (None for a new
    job, or when it says nothing of this file)."""
    if meta is None or not meta.results_bytes or meta.results_path != str(results.resolve()):
        return None
    return Vouched(meta.results_bytes, meta.done_rows, meta.counts)


def prepare_job(
    jobdir: Path | str,
    input_path: Path | str,
    results_path: Path | str | None = None,
    *,
    max_row: int | None = None,
    recheck: Recheck | None = None,
    sheet: str | None = None,
    clock: Clock = time.time,
) -> PreparedJob:
    """Get the job directory ready for a run and return what is already done.

    The caller must hold the job's :class:`~urlcheck.jobs.lock.JobLock`, and nothing may have
    opened the results file for appending yet (the scan may rewrite it, or set it aside when it
    is not this input's). ``max_row`` caps the row numbers a line may have.
    ``recheck`` takes the rows it matches out of the results first, so this run checks them
    again; a finished job is then resumed rather than started afresh. ``sheet``: the sheet of
    a workbook input a new run reads (an unfinished job's results are its own sheet's rows).
    """
    jobdir, input_path = Path(jobdir), Path(input_path).resolve()
    results = Path(results_path) if results_path is not None else jobdir / RESULTS_FILE
    jobdir.mkdir(parents=True, exist_ok=True)
    refuse_links(jobdir, results)
    previous, checksum = check_input(jobdir, input_path, recheck=recheck is not None)
    known = previous.input_sha256 if previous is not None and previous.input_copy else ""
    now = clock()
    archived: list[Path] = []
    if previous is not None and previous.state.terminal and recheck is None:
        archived = archive_run(jobdir, results, previous, now)
        copy = input_copy(jobdir)
        if copy.exists() and previous.input_sha256 != checksum:  # a new CSV for this run
            target = free_name(copy, _stamp(previous, now))
            copy.rename(target)
            archived.append(target)
            known = ""
        logger.info(
            "Job %s was %s: starting a fresh run; the previous run is kept as %s",
            jobdir,
            previous.state.value,
            ", ".join(p.name for p in archived),
        )
        previous = None
    fresh = previous is None
    vouched = None if recheck is not None else _vouched(previous, results)
    rows_of = sheet if previous is None else (previous.input_sheet or None)
    scan = _scan_owned(results, input_path, max_row, now, archived, vouched=vouched, sheet=rows_of)
    if recheck is not None and not fresh:
        taken = take_out(results, recheck)
        logger.info(
            "Re-checking %d rows of job %s (recheck=%s: %s); their previous lines are kept in %s",
            sum(taken.values()),
            jobdir,
            recheck,
            ", ".join(f"{t} {taken[t]}" for t in recheck.terms if taken[t]) or "none matched",
            rechecked_path(results),
        )
        if not taken:
            logger.warning("recheck=%s matched no row of job %s", recheck, jobdir)
        scan = scan_results(results, max_row=max_row)
    if fresh:
        if len(scan.done):
            logger.warning(
                "%s has no %s but %s holds %d results: taking those rows as done",
                jobdir,
                META_FILE,
                results,
                len(scan.done),
            )
        meta = JobMeta(created_at=utc_iso(now))
    else:
        assert previous is not None
        meta = previous
    copy = keep_input(jobdir, input_path, checksum, known=known)
    if not _is_copy(jobdir, input_path) or not meta.input_path:
        meta.input_path = str(input_path)
    meta.input_copy = copy.name
    meta.input_sha256 = checksum
    meta.results_path = str(results.resolve())
    meta.done_rows = len(scan.done)
    meta.counts = scan.counts.copy()
    meta.results_bytes = results.stat().st_size if results.exists() else 0
    meta.updated_at = utc_iso(now)
    meta.save(jobdir)
    make_reserve(jobdir)  # room to write meta.json as paused if the disk fills up
    if fresh:
        logger.info("Job %s: results in %s", jobdir, results)
    else:
        logger.info("Resuming job %s: %d rows already done (%s)", jobdir, meta.done_rows, results)
    return PreparedJob(
        jobdir=jobdir,
        results_path=results,
        input_path=copy,
        input_checksum=checksum,
        meta=meta,
        scan=scan,
        fresh=fresh,
        archived=archived,
    )
