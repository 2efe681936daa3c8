"""Where a job lives in Redis: every key under ``uc:{<job>}:``, one hash tag per job so a whole
job sits in one Redis Cluster slot, its hosts' keys included."""

from __future__ import annotations

import re
from dataclasses import dataclass

from urlcheck.cluster.errors import ClusterError

_JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")

# The job's fixed keys (a script is given those it touches: scripts.py).
FIXED = (
    "meta",  # hash: job, status, control, created, finished, fed, committed, reaped, dropped
    "ready",  # zset: host -> first ms it may be sent to; hosts with work and no lease
    "inflight",  # hash: host -> "<token>|<owner>|<row>|<task json>" (the lease's task)
    "leases",  # zset: host -> lease deadline ms
    "done",  # bitmap: rows whose result is committed
    "fed",  # bitmap: rows the coordinator has queued
    "results",  # stream: committed result lines, read by the consumer group "collect"
    "paused",  # zset: host -> back-off end ms (a view for status and the feeder)
    "clock",  # string: last ms handed out (the server's TIME, never going backwards)
    "seq",  # string: lease token counter
    "reaps",  # hash: row -> times its lease expired (after 3, the row is "worker_lost")
    "workers",  # hash: worker id -> WorkerInfo JSON
    "beats",  # zset: worker id -> last heartbeat ms
    "strikes",  # hash: host -> rows in a row that exhausted their tries (the host circuit)
    "down",  # hash: host -> "<since ms>|<evidence json>", hosts given up on for the job
    "fast",  # hash: host -> 429s it answered the job (with the learned pace on)
    "backed",  # hash: host -> ms it was paused by back-offs, overlaps counted once
)


def check_job_name(job: str) -> str:
    if not _JOB_NAME.fullmatch(job):
        raise ClusterError(
            f"job name {job!r}: expected 1-100 letters, digits, '.', '_' or '-' "
            "(it becomes the Redis hash tag uc:{<job>}:)"
        )
    return job


@dataclass(frozen=True, slots=True)
class JobKeys:
    job: str

    def __post_init__(self) -> None:
        check_job_name(self.job)

    @property
    def prefix(self) -> str:
        return f"uc:{{{self.job}}}:"

    def fixed(self) -> list[str]:
        return [self.prefix + name for name in FIXED]

    def key(self, name: str) -> str:
        if name not in FIXED:
            raise KeyError(name)
        return self.prefix + name

    def queue(self, host: str) -> str:
        return f"{self.prefix}q:{host}"

    def host_state(self, host: str) -> str:
        return f"{self.prefix}h:{host}"

    def of_host(self, host: str) -> tuple[str, str]:
        """The host's queue and state."""
        return self.queue(host), self.host_state(host)
