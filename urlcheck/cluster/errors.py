"""Distributed mode's one error type at the Redis boundary, and its 'Redis is not answering'
case; `ClusterBoundary` raises them for every store of the job."""

from __future__ import annotations

from urlcheck.redis.boundary import Boundary


class ClusterError(Exception):
    """Redis refused an operation or holds something urlcheck cannot read."""


class ClusterUnavailableError(ClusterError):
    """Redis is unreachable, too slow (socket timeout), loading, or read-only: the caller
    pauses and tries again later; nothing was retried behind its back."""


class ClusterBoundary(Boundary):
    """Base of the job's stores in Redis (frontier, job, pool users): each public method raises
    ClusterUnavailableError or ClusterError when Redis fails (urlcheck.redis.boundary)."""

    unavailable_error = ClusterUnavailableError
    refused_error = ClusterError
