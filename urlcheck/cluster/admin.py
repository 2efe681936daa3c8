"""``scrapy job`` for distributed jobs: the cluster part of status, pause/resume/cancel sent to
every process through Redis, and ``clean``. A JOBDIR whose coordinator ran in distributed mode
holds ``cluster.json`` (the job's name and Redis URL without its password); ``-s REDIS_URL``
overrides that URL, and ``-s REDIS_PARAMS`` gives its client options (a password when Redis
needs one), as for the crawl. The credentials of ``REDIS_PARAMS`` go only to a Redis named by
``-s REDIS_URL``, never to the one a job directory's file names."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from urlcheck.cluster.config import ClusterConfig
from urlcheck.cluster.connection import connect
from urlcheck.cluster.errors import ClusterError, ClusterUnavailableError
from urlcheck.cluster.job import ClusterJob, ClusterStatus, coordinator_beat, describe
from urlcheck.cluster.pools import clean_own_pool
from urlcheck.jobs.errors import JobFileError
from urlcheck.jobs.files import CLUSTER_FILE, read_json

if TYPE_CHECKING:
    from urlcheck.config.reader import Settings

# A running process renews every 5 s by default; this long without a word, it is reported silent.
SILENT_AFTER = 30.0
# REDIS_PARAMS that prove who we are: sent only to a Redis the settings name, never to one a job
# directory names (a job directory may come from anyone, and its cluster.json from anywhere).
CREDENTIALS = frozenset({"password", "username", "ssl_certfile", "ssl_keyfile", "ssl_password"})


def cluster_of(
    jobdir: Path, redis_url: str | None, redis_params: Mapping[str, Any] | None = None
) -> ClusterJob | None:
    """The distributed job behind ``jobdir``, or None when it ran in one process."""
    try:
        data = read_json(jobdir / CLUSTER_FILE)  # never through a link
    except JobFileError as exc:
        raise ClusterError(str(exc)) from None
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("job"), str):
        raise ClusterError(f"{jobdir / CLUSTER_FILE}: not a urlcheck cluster file")
    params = dict(redis_params or {})
    url = redis_url
    if not url:  # the file's: reached without our credentials (pass -s REDIS_URL to send them)
        url = data.get("redis_url")
        params = {name: value for name, value in params.items() if name not in CREDENTIALS}
    if not isinstance(url, str) or not url:
        raise ClusterError(f"{jobdir / CLUSTER_FILE}: no Redis URL; pass -s REDIS_URL=...")
    return ClusterJob(connect(url, **params), data["job"])


def format_cluster(job: str, status: ClusterStatus) -> str:
    if not status.exists:
        return f"cluster: job {job!r} has no state in Redis (finished and expired, or cleaned)"
    paused = len(status.paused_hosts)
    lines = [
        f"cluster: job {job!r} {status.status} (control: {status.control}); "
        f"{status.fed} rows queued, {status.committed} results committed, "
        f"{status.reaped} leases expired; {status.in_flight} requests in flight, "
        f"{status.ready_hosts} hosts waiting, {paused} in back-off",
        f"  {'worker':<32} {'role':<11} {'host':<16} {'pid':>7} {'state':<10} {'beat':>7} "
        f"{'rows':>7} {'in flight':>9}",
    ]
    for worker in status.workers:
        info = worker.info
        lines.append(
            f"  {info.id:<32} {info.role:<11} {info.host:<16} {info.pid:>7} "
            f"{worker.state(SILENT_AFTER):<10} {worker.seconds_since_beat:>6.0f}s "
            f"{info.rows_done:>7} {info.in_flight:>9}"
        )
    return "\n".join(lines)


def cluster_status(
    jobdir: Path, redis_url: str | None, redis_params: Mapping[str, Any] | None = None
) -> tuple[str, dict[str, Any]] | None:
    """(text, JSON-ready dict) of the cluster part of ``scrapy job status``, or None."""
    job = cluster_of(jobdir, redis_url, redis_params)
    if job is None:
        return None
    status = job.status()
    return format_cluster(job.job, status), {"job": job.job, **describe(status)}


def cluster_control(
    jobdir: Path,
    action: str,
    redis_url: str | None,
    out: TextIO,
    redis_params: Mapping[str, Any] | None = None,
) -> bool:
    """Send pause/resume/cancel to every process of the job; False when it is not distributed
    or Redis holds no state for it."""
    job = cluster_of(jobdir, redis_url, redis_params)
    if job is None:
        return False
    if not job.control(action):
        out.write(f"cluster: job {job.job!r} has no state in Redis; nothing sent to workers\n")
        return False
    if action == "cancel":  # ended, whether or not its coordinator is there to say so
        job.finish("cancelled")
    out.write(f"cluster: {action} sent to every process of job {job.job!r}\n")
    return True


def clean(
    job_name: str, redis_url: str, out: TextIO, redis_params: Mapping[str, Any] | None = None
) -> int:
    """Remove the job's keys and, when the job alone used it as its own, its proxy pool's
    (pools.py); returns how many keys went."""
    job = ClusterJob(connect(redis_url, **(redis_params or {})), job_name)
    try:
        deleted = job.clean()
        pool = clean_own_pool(job)
    finally:
        job.close()
    out.write(f"cluster: removed {deleted} keys of job {job_name!r}\n")
    out.write(f"cluster: {pool.describe()}\n")
    return deleted + pool.deleted


def coordinator_place(jobdir: str | Path | None) -> str:
    return f"{socket.gethostname()}:{Path(jobdir).resolve() if jobdir else '-'}"


def ensure_sole_coordinator(job: ClusterJob, place: str, *, fresh: float) -> None:
    """Refuse a second coordinator for a running job: one that renewed within ``fresh``
    seconds from another machine or job directory. (From the same place it is a dead
    predecessor: this process holds that JOBDIR's lock now.)"""
    status = job.status()
    if not status.exists or status.status != "running" or status.coordinator_place == place:
        return
    age = coordinator_beat(status)
    if age is not None and age < fresh:
        raise ClusterError(
            f"job {job.job!r} already has a coordinator ({status.coordinator}, "
            f"{status.coordinator_place}, seen {age:.0f} s ago): start workers with "
            f"-a job={job.job} and no csv, or stop that coordinator first"
        )


def check_coordinator(
    settings: Settings, spider_args: Mapping[str, str], jobdir: str | Path | None
) -> None:
    """Preflight of a coordinator (``-a csv`` with ``REDIS_URL``): ClusterError when the job
    already has a live coordinator elsewhere. An unreachable Redis is not an error here: the
    crawl waits for it."""
    config = ClusterConfig.from_settings(settings)
    job = spider_args.get("job")
    if config is None or not job or not spider_args.get("csv"):
        return
    cluster = ClusterJob(connect(config.redis_url, **config.redis_params), job)
    try:
        place = coordinator_place(jobdir)
        ensure_sole_coordinator(cluster, place, fresh=3 * config.renew_interval)
    except ClusterUnavailableError:
        return
    finally:
        cluster.close()
