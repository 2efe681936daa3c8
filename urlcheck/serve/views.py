"""Pieces of a job's status as the API shows it: its state badge, the hosts in back-off with
their countdown, the hosts given up on, the buttons a state enables, and the results file's
generation."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from urlcheck.clock import parse_utc_iso
from urlcheck.jobs.files import JobMeta, JobState

HOSTS_FILE = "hosts.json"


class State(StrEnum):
    """The state badge: meta.json's state, refined by what the server sees."""

    PENDING = "pending"
    QUEUED = "queued"
    PROCESSING = "processing"
    PAUSED = "paused"
    STUCK = "stuck"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


ENDED_STATES = frozenset({State.DONE, State.CANCELLED, State.FAILED})


def backoff_view(meta: JobMeta | None, now: float) -> list[dict[str, Any]]:
    if meta is None or not meta.backoff_hosts or meta.state is not JobState.PROCESSING:
        return []
    age = 0.0
    if meta.updated_at:
        with contextlib.suppress(ValueError):
            age = max(0.0, now - parse_utc_iso(meta.updated_at))
    return [
        {
            "host": host.host,
            "attempt": host.attempt,
            "seconds_left": round(max(0.0, host.seconds_left - age), 1),
        }
        for host in meta.backoff_hosts
    ]


def given_up(jobdir: Path) -> list[str]:
    path = jobdir / HOSTS_FILE
    try:
        if path.stat().st_size > 1 << 20:
            return []
        hosts = json.loads(path.read_text(encoding="utf-8")).get("hosts", {})
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(hosts, Mapping):
        return []
    return sorted(
        str(host)
        for host, entry in hosts.items()
        if isinstance(entry, Mapping) and entry.get("unavailable")
    )


def actions(state: State, running: bool) -> dict[str, bool]:
    """The buttons a state enables."""
    return {
        "pause": state in (State.PENDING, State.QUEUED, State.PROCESSING, State.STUCK),
        "resume": state is State.PAUSED,
        "cancel": state not in ENDED_STATES,
        "rerun": state in ENDED_STATES or (state is State.PAUSED and not running),
    }


def generation(results: Path) -> str:
    """Changes when the results file is replaced: a re-run renames it aside, a re-check or a
    repair rewrites it (a temporary file renamed over it: a new inode). The first bytes are in
    it too, so that an inode used again by a later rewrite still gives another generation."""
    try:
        with results.open("rb") as source:
            info = os.fstat(source.fileno())
            head = source.read(512)
    except OSError:
        return "none"
    ident = f"{info.st_dev}:{info.st_ino}:".encode() + head.partition(b"\n")[0]
    return hashlib.sha256(ident).hexdigest()[:16]
