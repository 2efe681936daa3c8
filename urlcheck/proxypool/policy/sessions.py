"""Sticky sessions across sites: a (proxy, site) bench moves only that site's requests of a key.

The store keeps one session per key: the key's proxy (its IP) on every site. When that proxy is
benched on one site only, the key's requests to that site go to a stand-in, kept as a session of
its own (the key and the site), and the first such lease says ``session_lost``; the key keeps its
proxy everywhere else, and the site keeps its stand-in while the site's session lives, so no
lease changes IP without saying so. The key's proxy is this process's view (``Books.homes``, kept
for one to two session TTLs after its last use): with several processes on one store, a key
another process placed moves whole, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from urlcheck.proxypool.rules.health import IN_SERVICE

if TYPE_CHECKING:
    from urlcheck.proxypool.policy.books import Books, PairRec

__all__ = ["SPLIT", "end", "note", "session_key", "sweep"]

SPLIT = "\x1f"  # between a key and a site in the stand-in session's key


def session_key(
    b: Books, key: str, site: str, pairs: dict[str, PairRec], now: float
) -> tuple[str, bool]:
    """The session to ask the store for, and whether this lease starts a site's move."""
    ttl = b.config.session_ttl
    splits = b.splits
    if splits:
        until = splits.get((key, site))
        if until is not None and until > now:
            splits[key, site] = now + ttl
            return key + SPLIT + site, False
    home = b.homes.get(key) or b.homes_before.get(key)
    if home is not None:
        pair = pairs.get(home)
        if pair is not None and pair.benched_until > now:
            rec = b.proxies.get(home)
            if rec is not None and rec.state in IN_SERVICE:
                splits[key, site] = now + ttl
                return key + SPLIT + site, True
    return key, False


def note(b: Books, key: str, proxy_id: str) -> None:
    """Remember the key's proxy after an acquire of its own session (not a stand-in's)."""
    b.homes[key] = proxy_id


def end(b: Books, key: str) -> list[str]:
    """Forget the key; returns the stand-in sessions the store must end too."""
    b.homes.pop(key, None)
    b.homes_before.pop(key, None)
    sites = [site for k, site in b.splits if k == key]
    for site in sites:
        del b.splits[key, site]
    return [key + SPLIT + site for site in sites]


def sweep(b: Books, now: float) -> None:
    if now >= b.homes_turn_at:
        # two generations, one session TTL each: no expiry to keep per key on the hot path
        b.homes_before, b.homes = b.homes, {}
        b.homes_turn_at = now + b.config.session_ttl
    for split in [s for s, until in b.splits.items() if until <= now]:
        del b.splits[split]
