"""Stores hold the pool's mutable state; choose one by URI."""

from __future__ import annotations

from .base import PoolStore, StoreError, StoreUnavailable
from .memory import MemoryStore

__all__ = ["MemoryStore", "PoolStore", "StoreError", "StoreUnavailable", "store_from_uri"]


def store_from_uri(uri: str, name: str = "default", *, server_time: bool = True) -> PoolStore:
    """``memory://`` (this process only) or ``redis://host:port/db`` / ``rediss://...`` (shared
    by every process using the same URI and pool `name`)."""
    scheme = uri.partition("://")[0].lower()
    if scheme == "memory":
        return MemoryStore()
    if scheme in {"redis", "rediss", "unix"}:
        from .redis import RedisStore

        return RedisStore(uri, name, server_time=server_time)
    raise ValueError(f"unknown store URI scheme {scheme!r}")
