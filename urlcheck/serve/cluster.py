"""A distributed job's workers for the job page, and pause/resume/cancel sent to all of them.

Only the Redis the server was given (``-s REDIS_URL``) is ever used: a job directory's
``cluster.json`` names a Redis too, but a job directory is not trusted to point the server at a
service. Answers hold the workers and counts, never the Redis URL or a job directory's place.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from urlcheck.cluster.admin import SILENT_AFTER, cluster_control, cluster_of
from urlcheck.cluster.errors import ClusterError
from urlcheck.jobs.files import CLUSTER_FILE

logger = logging.getLogger(__name__)


def is_distributed(jobdir: Path) -> bool:
    return (jobdir / CLUSTER_FILE).is_file()


def workers(
    jobdir: Path, redis_url: str | None, params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The cluster part of a job's status, or None for a job that ran in one process."""
    if not redis_url or not is_distributed(jobdir):
        return None
    try:
        job = cluster_of(jobdir, redis_url, params)
    except ClusterError:
        return {"error": "the job's cluster file cannot be read"}
    if job is None:
        return None
    try:
        status = job.status()
    except ClusterError as exc:
        logger.warning("cluster status of %s: %s", jobdir.name, exc)
        return {"error": "Redis did not answer"}
    finally:
        job.client.close()
    if not status.exists:
        return {"error": "Redis holds no state for this job (finished and expired, or cleaned)"}
    return {
        "status": status.status,
        "control": status.control,
        "queued": status.fed,
        "committed": status.committed,
        "in_flight": status.in_flight,
        "hosts_waiting": status.ready_hosts,
        "hosts_in_backoff": len(status.paused_hosts),
        "workers": [
            {
                "id": w.info.id,
                "role": w.info.role,
                "host": w.info.host,
                "state": w.state(SILENT_AFTER),
                "seconds_since_beat": round(w.seconds_since_beat, 1),
                "rows": w.info.rows_done,
                "in_flight": w.info.in_flight,
            }
            for w in status.workers
        ],
    }


def steer(jobdir: Path, action: str, redis_url: str | None, params: Mapping[str, Any]) -> bool:
    """Send ``action`` to every process of a distributed job; False when there is none."""
    if not redis_url or not is_distributed(jobdir):
        return False
    try:
        return cluster_control(jobdir, action, redis_url, io.StringIO(), params)
    except ClusterError as exc:
        logger.warning("cluster %s of %s: %s", action, jobdir.name, exc)
        return False
