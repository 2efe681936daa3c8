"""The job directory's own files: meta.json (what the job is and how far it got) and
control.json (requests from ``scrapy job pause|resume|cancel``).

Both are replaced atomically (temporary file in the same directory, fsync, rename, fsync of the
directory), so a reader or a crash never sees half a file.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from filelock import FileLock

from urlcheck.clock import utc_iso
from urlcheck.jobs.counts import Counts
from urlcheck.jobs.errors import JobFileError
from urlcheck.jobs.landings import ManyToOneSeen
from urlcheck.jobs.nofollow import no_link_at, open_nofollow, replace_temp

if TYPE_CHECKING:
    from urlcheck.clock import Clock

META_FILE = "meta.json"
CONTROL_FILE = "control.json"
# Held (an OS lock, through filelock) while a control request reads the last seq and writes the
# next, so that writers in other processes or threads never hand out one seq twice.
CONTROL_LOCK = "control.lock"
RESULTS_FILE = "results.jsonl"
INPUT_COPY = "input.csv"
# Left by a distributed job's coordinator: the job's name and Redis (urlcheck.cluster.admin).
CLUSTER_FILE = "cluster.json"
META_VERSION = 1
# A processing job with no sign of life for this long reads as stuck (URLCHECK_JOB_STUCK_AFTER).
STUCK_AFTER_DEFAULT = 180.0


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_json(path: Path, data: Any) -> None:
    """Replace ``path`` with ``data`` as JSON so that readers see the old or the new file (with
    the old one's permissions). A write that fails raises an OSError naming ``path``."""
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    tmp = replace_temp(path)
    try:
        with open_nofollow(tmp, "x", encoding="utf-8", like=path) as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and not exc.filename:  # a write() names no file
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    fsync_dir(path.parent)


def read_json(path: Path) -> Any | None:
    """The parsed file, or None when it does not exist."""
    try:
        with open_nofollow(path, "r", encoding="utf-8") as src:
            text = src.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise JobFileError(f"cannot read {path}: {exc}") from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        raise JobFileError(f"{path} is not valid JSON: {exc}") from exc


class JobState(StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    PAUSED = "paused"
    DONE = "done"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        """Done and cancelled jobs are not resumed: running them again starts a fresh run."""
        return self in (JobState.DONE, JobState.CANCELLED)


@dataclass(frozen=True)
class BackoffHost:
    host: str
    attempt: int
    seconds_left: float

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "attempt": self.attempt, "seconds_left": self.seconds_left}


def _opt_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} must be a string or null")
    return value


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{key} must be a non-negative integer")
    return value


@dataclass
class JobMeta:
    """meta.json. Times are ISO 8601 UTC strings; ``rate`` is rows per minute over the current
    run. Field meanings: docs/jobs.md."""

    state: JobState = JobState.PENDING
    total_rows: int = 0
    done_rows: int = 0
    counts: Counts = field(default_factory=Counts)
    created_at: str | None = None
    started_at: str | None = None
    updated_at: str | None = None
    finished_at: str | None = None
    last_activity_at: str | None = None
    # The same moment on the monotonic clock of the boot ``boot_id`` names (urlcheck.clock):
    # how long ago it was holds through a wall clock step.
    last_activity_monotonic: float | None = None
    boot_id: str | None = None
    finish_reason: str | None = None
    input_path: str = ""
    input_sha256: str = ""
    user_agent: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    results_path: str = ""
    # The counts above cover results.jsonl up to this offset; None in a meta.json written
    # before the offset was recorded (its counts cannot be caught up).
    results_bytes: int | None = 0
    input_copy: str = ""  # the job's own copy of the CSV, relative to the job directory
    input_sheet: str = ""  # the sheet of a workbook input the job reads ("": its first)
    stuck_after: float = STUCK_AFTER_DEFAULT
    rate: float | None = None
    backoff_hosts: list[BackoffHost] = field(default_factory=list)
    # many_to_one over the job's rows as the crawl last judged it; None: not judged (the check
    # is off, or an older urlcheck wrote this)
    many_to_one: ManyToOneSeen | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": META_VERSION,
            "state": self.state.value,
            "total_rows": self.total_rows,
            "done_rows": self.done_rows,
            "counts": self.counts.to_dict(),
            "created_at": self.created_at,
            "started_at": self.started_at,
            "updated_at": self.updated_at,
            "finished_at": self.finished_at,
            "last_activity_at": self.last_activity_at,
            "last_activity_monotonic": self.last_activity_monotonic,
            "boot_id": self.boot_id,
            "finish_reason": self.finish_reason,
            "input_path": self.input_path,
            "input_sha256": self.input_sha256,
            "user_agent": self.user_agent,
            "settings": self.settings,
            "results_path": self.results_path,
            "results_bytes": self.results_bytes,
            "input_copy": self.input_copy,
            "input_sheet": self.input_sheet,
            "stuck_after": self.stuck_after,
            "rate": self.rate,
            "backoff_hosts": [host.to_dict() for host in self.backoff_hosts],
            "many_to_one": None if self.many_to_one is None else self.many_to_one.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Unknown keys are ignored and missing ones take their defaults; wrong types raise."""
        if not isinstance(data, Mapping):
            raise ValueError("meta must be a JSON object")
        rate = data.get("rate")
        if rate is not None and (not isinstance(rate, int | float) or isinstance(rate, bool)):
            raise ValueError("rate must be a number or null")
        settings = data.get("settings", {})
        if not isinstance(settings, Mapping):
            raise ValueError("settings must be an object")
        hosts = data.get("backoff_hosts", [])
        if not isinstance(hosts, list):
            raise ValueError("backoff_hosts must be a list")
        counts = data.get("counts", {})
        if not isinstance(counts, Mapping):
            raise ValueError("counts must be an object")
        monotonic = data.get("last_activity_monotonic")
        if monotonic is not None and (
            not isinstance(monotonic, int | float) or isinstance(monotonic, bool)
        ):
            raise ValueError("last_activity_monotonic must be a number or null")
        many = data.get("many_to_one")
        stuck_after = data.get("stuck_after", STUCK_AFTER_DEFAULT)
        if not isinstance(stuck_after, int | float) or isinstance(stuck_after, bool):
            raise ValueError("stuck_after must be a number")
        return cls(
            state=JobState(data.get("state", JobState.PENDING.value)),
            total_rows=_int(data, "total_rows"),
            done_rows=_int(data, "done_rows"),
            counts=Counts.from_dict(counts),
            created_at=_opt_str(data, "created_at"),
            started_at=_opt_str(data, "started_at"),
            updated_at=_opt_str(data, "updated_at"),
            finished_at=_opt_str(data, "finished_at"),
            last_activity_at=_opt_str(data, "last_activity_at"),
            last_activity_monotonic=None if monotonic is None else float(monotonic),
            boot_id=_opt_str(data, "boot_id"),
            finish_reason=_opt_str(data, "finish_reason"),
            input_path=_opt_str(data, "input_path") or "",
            input_sha256=_opt_str(data, "input_sha256") or "",
            user_agent=_opt_str(data, "user_agent") or "",
            settings=dict(settings),
            results_path=_opt_str(data, "results_path") or "",
            results_bytes=_int(data, "results_bytes") if "results_bytes" in data else None,
            input_copy=_opt_str(data, "input_copy") or "",
            input_sheet=_opt_str(data, "input_sheet") or "",
            stuck_after=float(stuck_after),
            rate=None if rate is None else float(rate),
            backoff_hosts=[
                BackoffHost(str(h["host"]), int(h["attempt"]), float(h["seconds_left"]))
                for h in hosts
            ],
            many_to_one=None if many is None else ManyToOneSeen.from_dict(many),
        )

    @classmethod
    def load(cls, jobdir: Path) -> Self | None:
        """The job's meta.json, or None when there is none."""
        path = jobdir / META_FILE
        data = read_json(path)
        if data is None:
            return None
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise JobFileError(f"{path} is not a urlcheck job file: {exc}") from exc

    def save(self, jobdir: Path) -> None:
        atomic_write_json(jobdir / META_FILE, self.to_dict())


class ControlAction(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"


@dataclass(frozen=True)
class Control:
    """control.json. A running crawl acts on each new ``seq`` once."""

    action: ControlAction
    at: str
    seq: int

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action.value, "at": self.at, "seq": self.seq}

    @classmethod
    def load(cls, jobdir: Path) -> Self | None:
        path = jobdir / CONTROL_FILE
        data = read_json(path)
        if data is None:
            return None
        try:
            seq = data["seq"]
            if not isinstance(seq, int) or isinstance(seq, bool):
                raise ValueError("seq must be an integer")
            at = data["at"]
            if not isinstance(at, str):
                raise ValueError("at must be a string")
            return cls(ControlAction(data["action"]), at, seq)
        except (KeyError, TypeError, ValueError) as exc:
            raise JobFileError(f"{path} is not a urlcheck control file: {exc}") from exc


def write_control(jobdir: Path, action: ControlAction, *, clock: Clock = time.time) -> Control:
    """Write a new request for the running crawl; its ``seq`` follows the previous one's.

    Serialised by an OS lock on ``control.lock``: two terminals, a browser and a terminal, or a
    supervisor and a user, each get their own ``seq`` and none is lost (measured without it:
    two processes writing 200 requests each ended at seq 205). The crawl reads control.json
    without the lock; the atomic rename gives it the old or the new request.
    """
    lock = FileLock(jobdir / CONTROL_LOCK)
    with no_link_at(lock.lock_file):
        lock.acquire()
    try:
        try:
            previous = Control.load(jobdir)
        except JobFileError:
            previous = None  # a broken file is replaced, not fatal
        control = Control(action, utc_iso(clock()), (previous.seq if previous else 0) + 1)
        atomic_write_json(jobdir / CONTROL_FILE, control.to_dict())
    finally:
        lock.release()
    return control
