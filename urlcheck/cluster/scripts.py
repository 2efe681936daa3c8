"""The frontier's Lua scripts (package files under ``lua/``), registered once per client.

Each script is ``lua/common.lua`` followed by its own file, called with the job's fixed keys in
KEYS and the job prefix as ARGV[1]. redis-py's Script runs EVALSHA and loads the script again
on NOSCRIPT (a restarted or flushed Redis); every other Redis failure becomes a ClusterError.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from importlib.resources import files
from typing import TYPE_CHECKING, Any

import redis

from urlcheck.cluster.errors import ClusterError, ClusterUnavailableError

if TYPE_CHECKING:
    from redis.commands.core import Script

    from urlcheck.clock import Clock
    from urlcheck.cluster.keys import JobKeys

NAMES = (
    "push",
    "claim",
    "complete",
    "renew",
    "open",
    "finish",
    "control",
    "status",
    "giveup",
    "hosts",
)

_UNAVAILABLE = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.BusyLoadingError,
    redis.exceptions.ReadOnlyError,
)


def _source(name: str) -> str:
    folder = files("urlcheck.cluster") / "lua"
    return (folder / "common.lua").read_text("utf-8") + (folder / f"{name}.lua").read_text("utf-8")


class Breaker:
    """After Redis failed to answer, calls fail at once for ``cooldown`` seconds instead of each
    waiting out the socket timeout on the event loop; then one call tries again."""

    def __init__(self, cooldown: float = 2.0, clock: Clock = time.monotonic) -> None:
        self.cooldown = cooldown
        self.clock = clock
        self._open_until = 0.0

    def check(self) -> None:
        left = self._open_until - self.clock()
        if left > 0:
            raise ClusterUnavailableError(
                f"Redis unavailable: not asked for another {left:.1f} s after it failed"
            )

    def failed(self) -> None:
        self._open_until = self.clock() + self.cooldown


class Scripts:
    def __init__(self, client: redis.Redis, keys: JobKeys, breaker: Breaker | None = None) -> None:
        self.client = client
        self.keys = keys
        self.breaker = breaker
        self._fixed = keys.fixed()
        self._scripts: dict[str, Script] = {
            name: client.register_script(_source(name)) for name in NAMES
        }
        self.calls = 0  # round trips made, for the bench's "per request" figure

    def run(self, name: str, *args: str | int) -> Any:
        self.calls += 1
        return guarded(
            self._scripts[name],
            keys=self._fixed,
            args=[self.keys.prefix, *args],
            breaker=self.breaker,
        )


def guarded(call: Any, *args: Any, breaker: Breaker | None = None, **kwargs: Any) -> Any:
    """Call redis-py, turning its failures into the boundary's one error type."""
    if breaker is not None:
        breaker.check()
    try:
        return call(*args, **kwargs)
    except _UNAVAILABLE as exc:
        if breaker is not None:
            breaker.failed()
        raise ClusterUnavailableError(f"Redis unavailable: {exc}") from exc
    except redis.RedisError as exc:
        raise ClusterError(f"Redis error: {exc}") from exc


def text(value: bytes | str | int) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def pairs(flat: Sequence[Any]) -> list[tuple[Any, Any]]:
    return [(flat[i], flat[i + 1]) for i in range(0, len(flat) - 1, 2)]
