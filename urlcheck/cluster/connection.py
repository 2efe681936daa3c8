"""The job's Redis client: urlcheck.redis.client's (RESP2, socket timeouts of at most 2 s, no
retries: a call cannot stall the reactor), with answers as bytes (the ``done`` and ``fed``
bitmaps are bytes; text is decoded where read)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from urlcheck.check.urls import redacted
from urlcheck.cluster.errors import ClusterError
from urlcheck.redis.client import OptionError, make_client

if TYPE_CHECKING:
    import redis


def connect(url: str, **params: Any) -> redis.Redis:
    """A client of the job's Redis at `url` with ``REDIS_PARAMS``; makes no connection yet."""
    try:
        return make_client(url, params, decode_responses=False)
    except OptionError as exc:
        raise ClusterError(f"REDIS_URL {redacted(url)!r} or REDIS_PARAMS: {exc}") from None
