"""What the spider tells the JobControl extension about the job it runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from urlcheck.jobs.counts import Counts

if TYPE_CHECKING:
    from urlcheck.jobs.lock import JobLock

PausedHosts = Callable[[], Sequence[tuple[str, int, float]]]


def no_paused_hosts() -> Sequence[tuple[str, int, float]]:
    return []


@dataclass
class JobContext:
    """Set as ``spider.job_context`` before the spider's first request.

    ``done_rows`` and ``counts`` start from the results scan; the extension then adds what the
    pipeline appends to the results file past ``results_bytes``. ``total_rows`` may be raised
    later if the spider learns it late.
    ``paused_hosts`` returns ``(host, attempt, seconds_left)`` for each host in back-off.
    ``lock``, if given, is released by the extension after its last write of meta.json.
    """

    jobdir: Path
    results_path: Path
    input_path: Path
    input_checksum: str
    total_rows: int
    done_rows: int
    results_bytes: int = 0  # done_rows and counts cover results.jsonl up to this offset
    counts: Counts = field(default_factory=Counts)
    user_agent: str = ""
    paused_hosts: PausedHosts = no_paused_hosts
    lock: JobLock | None = None
