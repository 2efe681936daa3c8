"""Redis's failures at the boundary of a store: the store's own error, raised the same way by
each of its public methods (limits' ``_wrap_errors``, applied to every storage method by
``Storage.__init_subclass__``), with Redis's error chained as the cause.

A store declares two errors: one for a Redis that does not answer (connection refused or lost,
timeout, loading, read-only, its keys' slot on another node), after which a call may simply be
tried again later, and one for a Redis that refused the call. Each store documents what the
crawl does then: the proxy pool fails closed (a request waits for its store), the host circuit
fails open (a strike Redis did not count is not counted).

A `Breaker`, when the store has one, spares the event loop a socket timeout per call while Redis
does not answer: after a failure, calls fail at once for a few seconds, then one tries again.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from urlcheck.redis.link import Link


class Breaker:
    """After Redis failed to answer, calls fail at once for ``cooldown`` seconds instead of each
    waiting out the socket timeout on the event loop; then one call tries again."""

    def __init__(self, cooldown: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.cooldown = cooldown
        self.clock = clock
        self._open_until = 0.0

    def left(self) -> float:
        """Seconds before Redis is asked again (0.0: ask now)."""
        return max(self._open_until - self.clock(), 0.0)

    def failed(self) -> None:
        self._open_until = self.clock() + self.cooldown


def redis_failures() -> tuple[type[BaseException], ...]:
    """What a Redis call raises when it fails (redis-py imported only now: a call was made)."""
    from redis.exceptions import RedisError

    return (RedisError, OSError)


def not_answering(exc: BaseException) -> bool:
    """Redis did not run the call and may later: it is unreachable, slow, loading or
    read-only, or a Redis Cluster serves the keys from another node (MOVED, ASK, TRYAGAIN)."""
    from redis.exceptions import (
        AskError,
        ClusterDownError,
        ConnectionError,
        ReadOnlyError,
        TimeoutError,
        TryAgainError,
    )

    unavailable = (ConnectionError, TimeoutError, ReadOnlyError, AskError, TryAgainError)
    return isinstance(exc, (*unavailable, ClusterDownError, OSError))


class Boundary:
    """Base of a store whose public methods call Redis through `link`.

    Every public method a subclass defines raises `unavailable_error` or `refused_error` (``from``
    Redis's error) for anything Redis does wrong, and `unavailable_error` at once while the
    `breaker` (None: no breaker) holds calls back. Messages read ``"<subject> <method>: Redis
    unavailable: <Redis's error>"``, and never hold a password (redis-py's errors name the
    server by host and port)."""

    unavailable_error: ClassVar[type[Exception]]
    refused_error: ClassVar[type[Exception]]
    subject: ClassVar[str] = "Redis store"
    link: Link
    breaker: Breaker | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, member in list(vars(cls).items()):
            if inspect.isfunction(member) and not name.startswith("_"):
                setattr(cls, name, _at_boundary(name, member))

    def _redis_failed(self, method: str, exc: BaseException) -> Exception:
        note = self.link.failed(exc)
        if not_answering(exc):
            if self.breaker is not None:
                self.breaker.failed()
            return self.unavailable_error(
                f"{self.subject} {method}: Redis unavailable: {exc}{note}"
            )
        return self.refused_error(f"{self.subject} {method}: Redis error: {exc}")


def _at_boundary(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def at_boundary(self: Boundary, /, *args: Any, **kwargs: Any) -> Any:
        breaker = self.breaker
        if breaker is not None and (left := breaker.left()) > 0:
            raise self.unavailable_error(
                f"{self.subject} {name}: Redis unavailable: "
                f"not asked for another {left:.1f} s after it failed"
            )
        try:
            return method(self, *args, **kwargs)
        except redis_failures() as exc:
            raise self._redis_failed(name, exc) from exc

    return at_boundary
