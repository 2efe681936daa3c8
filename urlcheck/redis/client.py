"""A redis-py client made for the crawl's event loop: its options, decided here for every user.

redis-py 8 defaults to RESP3, 10 retries with a *blocking* sleep between them and no socket
timeout; any of these can freeze the crawl, and a retried ``claim`` or ``acquire`` would orphan
a lease. So the protocol, the timeouts and "no retries" are set here explicitly, whatever the
installed version's defaults, the caller's options (``REDIS_PARAMS``) or the URL's query say: a
call answers within ``socket_timeout`` or raises, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

if TYPE_CHECKING:
    import redis

SOCKET_TIMEOUT = 1.5  # seconds, unless the options or the URL ask for another
MAX_TIMEOUT = 2.0  # a Redis call runs on the event loop: longer would stall the crawl
TIMEOUTS = ("socket_timeout", "socket_connect_timeout")
# Options urlcheck decides; anything else (password, username, ssl_*, client_name ...) is
# passed on. The decoding of answers is the caller's (bitmaps want bytes), never the options'.
FORCED = frozenset(
    {
        "protocol",
        "retry",
        "retry_on_timeout",
        "retry_on_error",
        "decode_responses",
        "connection_pool",
        "single_connection_client",
    }
)


class OptionError(ValueError):
    """A Redis URL or client option urlcheck cannot use. The message names the option and its
    value, never the URL (which may hold a password)."""


def check_options(url: str, options: Mapping[str, Any] | None = None) -> None:
    """The timeouts of `options` and of the URL's query: each at most MAX_TIMEOUT. Reads the
    URL without redis-py, so settings can be checked without loading it."""
    query = dict(parse_qsl(urlsplit(url).query))
    for given in (options or {}, query):
        for name in TIMEOUTS:
            value = given.get(name)
            if value is None:
                continue
            try:
                seconds = float(value)
            except (TypeError, ValueError):
                raise OptionError(f"{name}={value!r}: expected seconds") from None
            if not 0 < seconds <= MAX_TIMEOUT:
                raise OptionError(
                    f"{name}={value!r}: expected 0 < seconds <= {MAX_TIMEOUT} "
                    "(a Redis call runs on the crawl's event loop)"
                )


def make_client(
    url: str, options: Mapping[str, Any] | None = None, *, decode_responses: bool
) -> redis.Redis:
    """A client of the Redis at `url` (``redis://``, ``rediss://``, ``unix://``) with `options`
    (redis-py's; the URL's query wins over them, as in redis-py) and the forced ones. Makes no
    connection yet. Raises OptionError."""
    from redis import Redis
    from redis.backoff import NoBackoff
    from redis.connection import ConnectionPool, parse_url
    from redis.retry import Retry

    check_options(url, options)
    try:
        from_url = parse_url(url)  # type: ignore[no-untyped-call]
    except ValueError as exc:  # redis-py's messages name the part, not the URL
        raise OptionError(str(exc)) from None
    kept = {
        name: value for name, value in {**(options or {}), **from_url}.items() if name not in FORCED
    }
    for name in TIMEOUTS:
        kept.setdefault(name, SOCKET_TIMEOUT)
    pool = ConnectionPool(
        **kept,
        protocol=2,
        retry=Retry(NoBackoff(), 0),
        retry_on_error=[],
        decode_responses=decode_responses,
    )
    client = Redis(connection_pool=pool)
    client.auto_close_connection_pool = True  # its close() closes the pool, as from_url's does
    return client
