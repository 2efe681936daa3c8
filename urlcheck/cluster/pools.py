"""A job's proxy pool in the job's Redis: who uses it, and removing it with the job.

A pool is named after its job unless ``URLCHECK_PROXY_POOL_NAME`` names it; several jobs may
share a pool by naming it. Each process of a distributed job whose pool lives in the job's Redis
records itself in the pool's ``users`` hash (job -> ``own`` when the name was the job's by
default, ``named`` when it was set). ``scrapy job clean NAME`` removes the pool ``NAME`` only when
that job alone used it as its own: a pool another job joined by name, or one nobody recorded
(made outside distributed mode), stays.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from urlcheck.cluster.errors import ClusterBoundary, ClusterError
from urlcheck.cluster.scripts import text
from urlcheck.proxypool.store.redis import key_prefix
from urlcheck.redis.link import Link

if TYPE_CHECKING:
    from urlcheck.cluster.job import ClusterJob

logger = logging.getLogger(__name__)

OWN = "own"
NAMED = "named"
_BATCH = 500


def users_key(pool: str) -> str:
    return key_prefix(pool) + "users"


def record_user(job: ClusterJob, pool: str, *, own: bool) -> None:
    """This job uses `pool`: as its own (the name defaulted to the job's) or by name. A failure
    is logged: the pool then stays when the job is cleaned."""
    users = PoolUsers(job)
    try:
        users.record(pool, own=own)
    except ClusterError as exc:
        logger.warning("Proxy pool %r: could not record its use by job %r: %s", pool, job.job, exc)
    finally:
        users.link.close()


def clean_own_pool(job: ClusterJob) -> PoolCleanup:
    """Delete the pool named after the job when the job alone used it as its own."""
    users = PoolUsers(job)
    try:
        return users.clean_own_pool()
    finally:
        users.link.close()


@dataclass(frozen=True, slots=True)
class PoolCleanup:
    pool: str
    deleted: int
    kept: int  # keys left because the pool is not the job's alone
    others: tuple[str, ...]  # the other jobs that used it, when kept

    def describe(self) -> str:
        if self.kept == 0:
            return f"removed {self.deleted} keys of its proxy pool {self.pool!r}"
        if self.others:
            users = ", ".join(repr(job) for job in self.others)
            why = f"also used by name by job {users} (URLCHECK_PROXY_POOL_NAME)"
        else:
            why = "not recorded as this job's own (made outside distributed mode, or named)"
        return f"kept the {self.kept} keys of proxy pool {self.pool!r}: {why}"


class PoolUsers(ClusterBoundary):
    """The users hash of the pools in the job's Redis. A link of its own: on a Redis Cluster
    the pool's slot is not the job's (another hash tag), and each link follows its own."""

    subject = "proxy pool users"

    def __init__(self, job: ClusterJob) -> None:
        self.job = job.job
        self.link = Link(job.client)
        self.breaker = job.breaker

    def record(self, pool: str, *, own: bool) -> None:
        self.link.call("HSET", users_key(pool), self.job, OWN if own else NAMED)

    def clean_own_pool(self) -> PoolCleanup:
        job = self.job
        flat = self.link.call("HGETALL", users_key(job))
        users = {text(k): text(v) for k, v in zip(flat[::2], flat[1::2], strict=True)}
        # every key under the pool's prefix: SCAN with MATCH (never KEYS, which blocks the server)
        pattern = _escape_glob(key_prefix(job)) + "*"
        keys = list(self.link.others().scan_iter(match=pattern, count=1000))
        if users != {job: OWN}:
            others = tuple(sorted(name for name in users if name != job))
            return PoolCleanup(job, 0, len(keys), others)
        deleted = 0
        for i in range(0, len(keys), _BATCH):
            deleted += int(self.link.call("DEL", *keys[i : i + _BATCH]))
        return PoolCleanup(job, deleted, 0, ())


def _escape_glob(value: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in value)
