"""Which proxy a lease gets: the configured strategy over the candidates, sticky keys by
rendezvous hashing, and the least bad proxy when nothing is eligible."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from urlcheck.proxypool.rules.hashing import stable_hash
from urlcheck.proxypool.rules.health import IN_SERVICE, State
from urlcheck.proxypool.rules.strategies import (
    pick_least_connections,
    pick_round_robin,
    pick_sticky,
    pick_weighted,
    usable,
)

if TYPE_CHECKING:
    from urlcheck.proxypool.policy.books import Books, PairRec, ProxyRec

__all__ = ["Choice", "Picker", "choose", "picker"]

_FALLBACK_RANK = {
    State.HEALTHY: 0,
    State.DEGRADED: 1,
    State.PROBING: 2,
    State.QUARANTINED: 3,
    State.DEAD: 4,
}
# Alternates offered to a shared store in case its own counts (other processes' leases) rule
# out the first choice: enough that a busy pool rarely needs a second call, few enough to stay
# cheap in one script call.
_ALTERNATES = 7

Picker = Callable[["Books", "dict[str, PairRec]", float], "ProxyRec | None"]


#: (order, forced): proxy ids in order of preference, each to be taken only if the store finds
#: it in service, unbenched for the site and under its cap; else `forced` (the least bad, a
#: fallback lease), or nothing when `forced` is None. A store that finds none of `order` usable
#: asks again with ``exhausted=True`` for the fallback. A plain tuple: built on every acquire.
Choice = tuple[tuple[str, ...], str | None]


def _weighted(b: Books, pairs: dict[str, PairRec], now: float) -> ProxyRec | None:
    return pick_weighted(b.cands, pairs, now, b.random, b.max_weight)


def _round_robin(b: Books, pairs: dict[str, PairRec], now: float) -> ProxyRec | None:
    rec, b.rr = pick_round_robin(b.cands, pairs, now, b.rr, b.random)
    return rec


def _least_connections(b: Books, pairs: dict[str, PairRec], now: float) -> ProxyRec | None:
    return pick_least_connections(b.cands, pairs, now, b.random)


def picker(strategy: str) -> Picker:
    return {
        "weighted": _weighted,
        "round_robin": _round_robin,
        "least_connections": _least_connections,
    }[strategy]


def choose(  # noqa: PLR0917
    b: Books,
    pick: Picker,
    pairs: dict[str, PairRec],
    key: str | None,
    now: float,
    alternates: bool,
    exhausted: bool = False,
) -> Choice:
    """The strategy's choice (or the key's rendezvous choice), with alternates if asked;
    ``exhausted``: the store found none of them usable, only the fallback is wanted."""
    if exhausted:
        rec = None
    elif key is None:
        rec = pick(b, pairs, now)
    else:
        rec = _home(b, key, pairs, now) or pick_sticky(stable_hash(key), b.cands, pairs, now)
    if rec is None:
        if b.config.fail_closed or not b.proxies:
            return (), None
        worst = least_bad(b, pairs, now)
        return (), worst.id if worst is not None else None
    if not alternates:
        return (rec.id,), None
    # The next usable candidates after the choice: fallbacks for when other processes' leases
    # fill it, cheap to find (the choice itself already followed the strategy).
    cands = b.cands
    at = cands.index(rec) if rec in cands else 0
    order = [rec.id]
    for c in [*cands[at + 1 :], *cands[:at]]:
        if usable(c, pairs, now):
            order.append(c.id)
            if len(order) > _ALTERNATES:
                break
    return tuple(order), None


def _home(b: Books, key: str, pairs: dict[str, PairRec], now: float) -> ProxyRec | None:
    """The key's proxy in this process's books, while usable: a live session stays on it, and
    one that expired starts again where rendezvous put it. Spares the hashing of every
    candidate on each lease of a key (a shared store wants the choice with the call)."""
    home = b.homes.get(key)
    rec = b.proxies.get(home) if home is not None else None
    if rec is None or rec.state not in IN_SERVICE or not usable(rec, pairs, now):
        return None
    return rec


def least_bad(b: Books, pairs: dict[str, PairRec], now: float) -> ProxyRec | None:
    """The fallback when nothing is eligible: in service but benched first, then probing,
    quarantined, dead. With ``hard_lease_cap``, never one at its cap (None when all are)."""
    hard = b.config.hard_lease_cap

    def badness(rec: ProxyRec) -> tuple[int, bool, float, float]:
        pair = pairs.get(rec.id)
        benched = pair is not None and pair.benched_until > now
        load = rec.active / rec.cap if rec.cap else 0.0
        return _FALLBACK_RANK[rec.state], benched, load, -rec.window.smoothed_success(0.0)

    spare = (r for r in b.proxies.values() if not (hard and r.cap and r.active >= r.cap))
    return min(spare, key=badness, default=None)
