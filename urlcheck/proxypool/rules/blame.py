"""Whose fault is a failure: the proxy's, the site's, or ours?

Outcomes form a proxy x site matrix. A failure counts against a proxy only when it is concentrated
on that proxy: its cell is red while other proxies, on the same site and in the same stretch of
time, are green. When most proxies fail on one site, the site is at fault; when failures span the
proxies and the sites, the fault is on our side (network, probe targets) and quarantines freeze.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from urlcheck.proxypool.rules.outcome import CAPTCHA, FAIL

if TYPE_CHECKING:
    from urlcheck.proxypool.config import PoolConfig

__all__ = [
    "Verdict",
    "green_row",
    "our_side_reason",
    "outliers",
    "pool_works_since",
    "shared_site_rates",
    "site_fault_reason",
    "site_verdict",
]

# (time, proxy id, outcome code), in the order they arrived: other processes' outcomes come in
# batches, up to a second after later ones (docs/proxypool.md), so no scan stops at an old time
SiteEntry = tuple[float, str, int]
# (time, proxy id, outcome code, site), likewise
PoolEntry = tuple[float, str, int, str]


class Verdict(StrEnum):
    PROXY = "proxy"  # peers succeed where this proxy fails
    SITE = "site"  # peers fail there too
    UNKNOWN = "unknown"  # too few peer outcomes in the same stretch of time


def green_row(row: Sequence[tuple[str, int]], site: str, cfg: PoolConfig) -> bool:
    """Is a proxy's row green outside ``site``, so that a red cell there is the pair's problem?

    ``row`` is (site, failed) of the proxy's latest outcomes, oldest first. Green: it worked on
    other sites, failed there at most once in its last ``recent_window`` outcomes (one error is
    never a signal), and at most once plus ``1 - degrade_below`` of its outcomes there overall
    (a record that would not degrade it). A proxy that has not worked elsewhere lately (a new
    one, a dead one) has no green cell to compare with: its cell is its row, and its first
    failure counts for it (a dead proxy is out after 3, as in a single-site pool).
    """
    outcomes = failures = recent = 0
    last = len(row)
    for index in range(last - 1, -1, -1):
        other, failed = row[index]
        if other == site:
            continue
        outcomes += 1
        failures += failed
        if last - index <= cfg.recent_window:
            recent += failed
    if outcomes == failures:
        return False  # worked nowhere else lately
    return recent < 2 and failures <= 1 + (1.0 - cfg.degrade_below) * outcomes


# A site's failures are shared when at least this many of the other proxies, and a quarter of
# those that tried it lately, failed there: a rate most proxies meet, not one or two bad ones.
_SHARED_BY = 3


def shared_site_rates(entries: Sequence[SiteEntry], proxy_id: str) -> tuple[float, float] | None:
    """The failure and captcha rates the other proxies meet on a site, over its window, when
    its failures are shared by most of them (at least ``_SHARED_BY`` and a quarter of them);
    None when they are not (a clean site, or one or two bad proxies) or too few to tell.

    A failure rate most proxies meet on one site, at whatever level, is the site's: a proxy
    is judged on that site against it, not against the pool."""
    seen = fails = captchas = 0
    peers: set[str] = set()
    failing: set[str] = set()
    for _, who, code in entries:
        if who == proxy_id:
            continue
        seen += 1
        peers.add(who)
        if code & FAIL:
            fails += 1
            captchas += code & CAPTCHA != 0
            failing.add(who)
    if seen < 10 or len(failing) < max(_SHARED_BY, len(peers) / 4):
        return None
    return fails / seen, captchas / seen


def site_verdict(
    entries: Sequence[SiteEntry] | Sequence[PoolEntry],
    proxy_id: str,
    *,
    start: float,
    end: float,
    own_success: float,
    cfg: PoolConfig,
) -> Verdict:
    """Compare a proxy that failed on a site with what other proxies met there meanwhile.

    Only the same stretch of time counts: peers' outcomes from ``start`` (the proxy's first
    failure there) to ``end`` + ``blame_lookback``, the newest ``blame_peer_outcomes`` of them.
    Outcomes from before ``start`` (back to ``start`` - ``blame_lookback``) only make up a
    shortfall, newest first:
    a site that went down a second ago is red for everyone, even if its older history is green,
    and stays red for those failures after it recovers. The proxy is to blame when peers did
    clearly better (by ``blame_margin``) and the site was not mostly failing for them.
    """
    low = start - cfg.blame_lookback
    high = end + cfg.blame_lookback
    least = cfg.blame_min_peer_outcomes
    seen = fails = 0
    before: list[tuple[float, int]] = []  # (time, code) from before `start`: a make-up
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        at, who, code = entry[0], entry[1], entry[2]
        if at > high or at < low or who == proxy_id:
            continue
        if at < start:
            before.append((at, code))
            continue
        seen += 1
        fails += code & FAIL
        if seen >= cfg.blame_peer_outcomes:
            break
    if seen < least and before:
        before.sort(reverse=True)  # newest first
        for _, code in before[: least - seen]:
            seen += 1
            fails += code & FAIL
    if seen < least:
        return Verdict.UNKNOWN
    peers = 1.0 - fails / seen
    if peers > cfg.site_fault_below and peers >= own_success + cfg.blame_margin:
        return Verdict.PROXY
    return Verdict.SITE


def pool_works_since(
    entries: Sequence[PoolEntry], proxy_id: str, start: float, cfg: PoolConfig
) -> bool | None:
    """Do the other proxies work since ``start`` (a proxy's first failure)? Judged on their
    outcomes from then on only: at the start of a pool-wide outage the older, green outcomes
    would blame whichever proxy failed first. None: too few outcomes since to tell yet."""
    seen = fails = 0
    for index in range(len(entries) - 1, -1, -1):
        at, who, code, _ = entries[index]
        if at < start:
            continue
        if who != proxy_id:
            seen += 1
            fails += code & FAIL
    if seen < cfg.blame_min_peer_outcomes:
        return None
    return 1.0 - fails / seen > cfg.our_side_below


def _failing_share(pairs: Iterable[tuple[str, int]]) -> tuple[int, int]:
    """(members failing at least half of their outcomes, members) over (member, code) pairs."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for member, code in pairs:
        slot = counts[member]
        slot[0] += 1
        slot[1] += code & FAIL
    failing = sum(1 for n, f in counts.values() if f * 2 >= n)
    return failing, len(counts)


def site_fault_reason(entries: Sequence[SiteEntry], fails: int, cfg: PoolConfig) -> str | None:
    """Is the site itself at fault? Most of the proxies that tried it recently failed there."""
    n = len(entries)
    if n < cfg.min_outcomes:
        return None
    rate = 1.0 - fails / n
    if rate >= cfg.site_fault_below:
        return None
    failing, members = _failing_share((who, code) for _, who, code in entries)
    if failing < 2 or failing < cfg.site_fault_share * members:
        return None
    return f"{failing} of {members} proxies fail here (success {rate:.0%} over {n})"


def our_side_reason(entries: Sequence[PoolEntry], fails: int, cfg: PoolConfig) -> str | None:
    """Is the fault ours? Failures span (nearly) all proxies and all sites at once."""
    n = len(entries)
    if n < cfg.min_outcomes:
        return None
    rate = 1.0 - fails / n
    if rate >= cfg.our_side_below:
        return None
    bad_proxies, proxies = _failing_share((who, code) for _, who, code, _ in entries)
    bad_sites, sites = _failing_share((site, code) for _, _, code, site in entries)
    if proxies < 2 or sites < 2:
        return None
    if bad_proxies < cfg.our_side_share * proxies or bad_sites < cfg.our_side_share * sites:
        return None
    return (
        f"{bad_proxies} of {proxies} proxies fail on {bad_sites} of {sites} sites "
        f"(success {rate:.0%} over {n})"
    )


def outliers(rates: Sequence[tuple[str, float]], cfg: PoolConfig) -> dict[str, str]:
    """Envoy's success-rate outlier rule: below mean - factor * stdev across proxies.

    It never fires when many proxies are bad at once (30% at zero success puts the bar below zero),
    so it only degrades; quarantine comes from the concentrated-failure rules above.
    """
    if len(rates) < cfg.outlier_min_hosts:
        return {}
    values = [rate for _, rate in rates]
    mean = math.fsum(values) / len(values)
    stdev = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    # A floor on the gap keeps a tight, healthy pool from calling 95% an outlier next to 99%.
    bar = mean - max(cfg.outlier_factor * stdev, cfg.outlier_min_gap)
    return {
        proxy_id: f"success {rate:.0%} under pool bar {bar:.0%} (mean {mean:.0%})"
        for proxy_id, rate in rates
        if rate < bar
    }
