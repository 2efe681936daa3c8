"""Stores hold the pool's mutable state; choose one by URI."""

from __future__ import annotations

from .base import PoolStore, StoreError, StoreUnavailable
from .memory import MemoryStore

__all__ = ["MemoryStore", "PoolStore", "StoreError", "StoreUnavailable", "store_from_uri"]


def store_from_uri(uri: str) -> PoolStore:
    """``memory://`` for now; ``redis://...`` arrives with the Redis store."""
    scheme = uri.partition("://")[0].lower()
    if scheme == "memory":
        return MemoryStore()
    if scheme in {"redis", "rediss", "redis+cluster"}:
        raise NotImplementedError("the Redis store is not written yet; use memory://")
    raise ValueError(f"unknown store URI scheme {scheme!r}")
