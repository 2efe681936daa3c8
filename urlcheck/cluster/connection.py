"""A redis-py client configured for use on the reactor thread.

redis-py 8 defaults to RESP3, 10 retries with a *blocking* sleep between them and no socket
timeout; any of these can freeze the crawl, and a retried ``claim`` would orphan a lease. So the
protocol, the timeouts and "no retries" are set here explicitly, whatever the installed
version's defaults: a call answers within ``socket_timeout`` or raises, once.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from urlcheck.cluster.errors import ClusterError

SOCKET_TIMEOUT = 1.5
_MAX_TIMEOUT = 2.0
# Options urlcheck decides; anything else in REDIS_PARAMS (password, ssl, ...) is passed on.
_FORCED = ("protocol", "retry", "retry_on_timeout", "retry_on_error", "decode_responses")


def connect(url: str, **params: Any) -> redis.Redis:
    for name in ("socket_timeout", "socket_connect_timeout"):
        value = params.get(name)
        if value is not None and not 0 < float(value) <= _MAX_TIMEOUT:
            raise ClusterError(
                f"REDIS_PARAMS {name}={value!r}: expected 0 < seconds <= {_MAX_TIMEOUT} "
                "(a Redis call runs on the crawl's event loop)"
            )
    options = {name: value for name, value in params.items() if name not in _FORCED}
    options.setdefault("socket_timeout", SOCKET_TIMEOUT)
    options.setdefault("socket_connect_timeout", SOCKET_TIMEOUT)
    try:
        return redis.Redis.from_url(
            url,
            protocol=2,
            retry=Retry(NoBackoff(), 0),
            decode_responses=False,  # bitmaps are bytes; text is decoded where read
            **options,
        )
    except ValueError as exc:
        raise ClusterError(f"REDIS_URL {url!r}: {exc}") from None
