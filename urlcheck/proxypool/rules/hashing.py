"""Rendezvous (highest random weight) hashing for sticky sessions.

Each (key, proxy) pair gets a pseudo-random score; a key goes to the proxy with the highest score.
Removing a proxy moves only the keys it held, adding one takes about 1/N of the keys, and no ring
has to be kept in sync between workers. Weighted form: score = weight / -ln(u), u in (0, 1).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from typing import TypeVar

__all__ = ["key_draw", "rendezvous_pick", "rendezvous_score", "stable_hash"]

_MASK64 = (1 << 64) - 1
_T = TypeVar("_T")


def stable_hash(text: str) -> int:
    """64-bit hash that is the same in every process (unlike ``hash``, which is salted)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _mix(value: int) -> int:
    # splitmix64 finaliser: a cheap, well-spread 64-bit mix of the two combined hashes
    value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9 & _MASK64
    value = (value ^ (value >> 27)) * 0x94D049BB133111EB & _MASK64
    return value ^ (value >> 31)


def rendezvous_score(key_hash: int, node_hash: int, weight: float = 1.0) -> float:
    # 53 high bits -> u in (0, 1), never 0 or 1
    u = ((_mix(key_hash ^ node_hash) >> 11) + 0.5) / 9007199254740992.0
    return weight / -math.log(u)


def key_draw(key_hash: int, node_hash: int) -> float:
    """A uniform number in [0, 1) fixed by (key, node), independent of its rendezvous score:
    a key admits a node it may only take a share of (half-open, degraded) when under it."""
    return (_mix(key_hash ^ node_hash ^ 0x9E3779B97F4A7C15) >> 11) / 9007199254740992.0


def rendezvous_pick(key: str, nodes: Iterable[tuple[_T, int, float]]) -> _T | None:
    """The node with the highest score for ``key``; nodes are (node, node_hash, weight)."""
    key_hash = stable_hash(key)
    best: _T | None = None
    best_score = -1.0
    for node, node_hash, weight in nodes:
        score = rendezvous_score(key_hash, node_hash, weight)
        if score > best_score:
            best, best_score = node, score
    return best
