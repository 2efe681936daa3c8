"""Cancelling a job no crawl is running: marked ``cancelled`` under the job lock, so the next run
starts afresh. Used by ``scrapy job cancel`` and by ``urlcheck serve`` (docs/jobs.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from urlcheck.clock import utc_iso
from urlcheck.jobs.files import JobMeta, JobState
from urlcheck.jobs.lock import JobLock

if TYPE_CHECKING:
    from urlcheck.clock import Clock


def cancel_stopped_job(jobdir: Path, *, clock: Clock = time.time, total_rows: int = 0) -> JobMeta:
    """Mark the job cancelled; raises JobLockedError when a crawl holds it after all (ask that
    crawl through control.json instead). A job that never ran gets a meta.json that says so,
    with ``total_rows`` as counted by the caller."""
    with JobLock(jobdir):
        meta = JobMeta.load(jobdir)  # read under the lock
        if meta is None:
            meta = JobMeta(total_rows=total_rows, created_at=utc_iso(clock()))
        now = utc_iso(clock())
        meta.state = JobState.CANCELLED
        meta.finish_reason = "cancelled"
        meta.finished_at = now
        meta.updated_at = now
        meta.rate = None
        meta.backoff_hosts = []
        meta.save(jobdir)
    return meta
