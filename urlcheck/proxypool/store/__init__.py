"""Stores hold the pool's mutable state; choose one by URI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from urlcheck.proxypool.store.base import PoolStore, StoreError, StoreUnavailable
from urlcheck.proxypool.store.memory import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["MemoryStore", "PoolStore", "StoreError", "StoreUnavailable", "store_from_uri"]


def store_from_uri(
    uri: str,
    name: str = "default",
    *,
    server_time: bool = True,
    redis_params: Mapping[str, Any] | None = None,
) -> PoolStore:
    """``memory://`` (this process only) or ``redis://host:port/db`` / ``rediss://...`` (shared
    by every process using the same URI and pool `name`); `redis_params`: more redis-py client
    options for a Redis store (password, ssl_*, ...)."""
    scheme = uri.partition("://")[0].lower()
    if scheme == "memory":
        return MemoryStore()
    if scheme in {"redis", "rediss", "unix"}:
        from urlcheck.proxypool.store.redis import RedisStore

        return RedisStore(uri, name, server_time=server_time, params=redis_params)
    raise ValueError(f"unknown store URI scheme {scheme!r}")
