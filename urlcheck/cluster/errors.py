"""The one error type at the Redis boundary, and its 'Redis is not answering' case."""

from __future__ import annotations


class ClusterError(Exception):
    """Redis refused an operation or holds something urlcheck cannot read."""


class ClusterUnavailableError(ClusterError):
    """Redis is unreachable, too slow (socket timeout), loading, or read-only: the caller
    pauses and tries again later; nothing was retried behind its back."""
