"""Blame: whose fault is a failure? The proxy's, the (proxy, site) pair's, the site's, or ours.

A failure counts against a proxy only when it is concentrated on that proxy; failures spread over
most proxies on a site make the site at fault, over all proxies and sites our side. The pure
comparisons live in ``rules.blame``; this module applies them to the books.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from urlcheck.proxypool.events import Event, OurSideFault, PairBenched, SiteFault
from urlcheck.proxypool.policy.books import PairCase
from urlcheck.proxypool.policy.noise import noise_level
from urlcheck.proxypool.policy.states import bench, check_degraded, degrade
from urlcheck.proxypool.rules import blame, health
from urlcheck.proxypool.rules.health import State
from urlcheck.proxypool.rules.outcome import PROXY_FAULT

if TYPE_CHECKING:
    from collections import deque

    from urlcheck.proxypool.policy.books import Books, ProxyRec, SiteRec
    from urlcheck.proxypool.rules.health import Window

__all__ = [
    "after_failure",
    "bench_pair",
    "check_faults",
    "check_recoveries",
    "judge_pair",
]

_PROXY = blame.Verdict.PROXY


def after_failure(
    b: Books,
    case: PairCase,
    *,
    code: int,
    cell: bool,
    now: float,
    events: list[Event],
    site_rates: tuple[float, float] | None = None,
) -> None:
    """Judge a failure: the proxy's (unless ``cell``: it counts for the pair only), then the
    pair's, against the site's shared failure and captcha rates when it has some
    (``site_rates``)."""
    rec, _, site_rec, pair = case
    cfg = b.config
    state = rec.state
    if state is State.QUARANTINED or state is State.DEAD:
        return  # a fallback lease: nothing more to learn
    entries = site_rec.entries
    noise = noise_level(b, now, rec.id)
    captchas = noise_level(b, now, rec.id, captcha=True)
    if not cell:
        certain = bool(code & PROXY_FAULT)
        if state is State.PROBING and (certain or half_open_verdict(b, rec, entries, now)):
            # Half-open: one failure that is clearly the proxy's sends it back, longer.
            bench(b, rec, "failed while half-open", now, events)
            return
        if certain and rec.fault_streak >= cfg.recent_failures:
            # Refused, reset or 407 can only be the proxy: no noise test, however noisy the
            # pool; only "does everyone fail right now?" (then the fault is ours).
            streak = health.Trip(f"{rec.fault_streak} proxy failures in a row", False)
            judge_proxy(b, rec, tripped=streak, certain=True, noise=noise, now=now, events=events)
            return
        proxy_trip = health.trip(rec.window, cfg, noise, captchas)
        if proxy_trip is not None and judge_proxy(
            b, rec, tripped=proxy_trip, certain=certain, noise=noise, now=now, events=events
        ):
            return
    if site_rates is not None:
        noise, captchas = max(noise, site_rates[0]), max(captchas, site_rates[1])
    pair_trip = health.trip(pair.window, cfg, noise, captchas)
    if (
        pair_trip is not None
        and blame.site_verdict(
            entries, rec.id, start=now, end=now, own_success=own_success(b, pair.window), cfg=cfg
        )
        is _PROXY
    ):
        bench_pair(b, case, pair_trip.reason, now, events)
    if not cell:
        check_degraded(b, rec, now, events)


def judge_proxy(
    b: Books,
    rec: ProxyRec,
    *,
    tripped: health.Trip,
    certain: bool,
    noise: float,
    now: float,
    events: list[Event],
) -> bool:
    """Quarantine only failures concentrated on this proxy; True when settled here."""
    cfg = b.config
    if certain:
        # The proxy itself failed, whatever the site; unless every proxy fails right now.
        start = rec.fault_since if rec.fault_streak else now
        if ours_first(b, rec, tripped.reason, start, now, events):
            bench(b, rec, tripped.reason + " (proxy unreachable)", now, events)
        return True
    failures = list(rec.recent_fail)
    needed = len(failures) // 2 + 1
    own = rec.window.success_rate(cfg.soft_failure_weight)
    if not tripped.sustained:
        # the burst rule: judge exactly the failures among the recent outcomes
        oldest = rec.seq - cfg.recent_window
        failures = [f for f in failures if f[2] > oldest]
        needed = cfg.recent_failures
        own = 1.0 - len(failures) / cfg.recent_window
    spans: dict[str, list[float]] = {}
    for at, s, _ in failures:
        span = spans.get(s)
        if span is None:
            spans[s] = [at, at]
        elif at < span[0]:
            span[0] = at  # (another process's failure may arrive after a later one)
        elif at > span[1]:
            span[1] = at
    verdicts: dict[str, blame.Verdict] = {}
    for s, (start, end) in spans.items():
        site_rec = b.sites.get(s)
        verdicts[s] = (
            blame.Verdict.UNKNOWN
            if site_rec is None
            else blame.site_verdict(
                site_rec.entries, rec.id, start=start, end=end, own_success=own, cfg=cfg
            )
        )
    unknown = [s for s, verdict in verdicts.items() if verdict is blame.Verdict.UNKNOWN]
    if unknown:
        # No peer on those sites at the time (one-off hosts): compare with the whole pool.
        start = min(spans[s][0] for s in unknown)
        end = max(spans[s][1] for s in unknown)
        overall = blame.site_verdict(b.pool, rec.id, start=start, end=end, own_success=own, cfg=cfg)
        for s in unknown:
            verdicts[s] = overall
    blamed_n = sum(1 for _, s, _ in failures if verdicts[s] is _PROXY)
    unknown_n = sum(1 for _, s, _ in failures if verdicts[s] is blame.Verdict.UNKNOWN)
    # With no peers at all, the sustained rule stands on its own: it is already a test
    # against the typical proxy's failure rate (see `health.trip`).
    counted = blamed_n + unknown_n if tripped.sustained else blamed_n
    if counted < needed:
        if blamed_n or unknown_n:
            degrade(b, rec, tripped.reason + "; blame unclear", now, events)
        return False  # others fail there too: mostly the sites' problem
    suspects = {
        s
        for s, verdict in verdicts.items()
        if verdict is _PROXY or (tripped.sustained and verdict is blame.Verdict.UNKNOWN)
    }
    per_site: dict[str, int] = {}
    for _, s, _ in failures:
        if s in suspects:
            per_site[s] = per_site.get(s, 0) + 1
    worst = max(per_site, key=per_site.__getitem__)
    since = spans[worst][0] - cfg.backoff_base
    # A red cell in a green row is the pair's problem: when the failures gather on one site
    # and the proxy worked on another shortly before they began, bench the pair. That costs
    # little; failures that follow elsewhere make the row red.
    if per_site[worst] >= needed and rec.worked_elsewhere({worst}, since):
        site_rec = b.sites.get(worst)
        pair = site_rec.pairs.get(rec.id) if site_rec is not None else None
        if (
            site_rec is not None
            and pair is not None
            and health.trip(pair.window, cfg, noise) is not None
        ):
            bench_pair(b, PairCase(rec, worst, site_rec, pair), tripped.reason, now, events)
        return False
    where = ", ".join(sorted(suspects))
    start = min(at for at, _, _ in failures)
    if ours_first(b, rec, tripped.reason, start, now, events):
        bench(b, rec, f"{tripped.reason}; concentrated on it at {where}", now, events)
    return True


def ours_first(  # noqa: PLR0917
    b: Books, rec: ProxyRec, reason: str, start: float, now: float, events: list[Event]
) -> bool:
    """Before a proxy is quarantined, is the fault ours? Only the pool's outcomes since the
    first of the failures judged (``start``) count; until there are enough of them, the proxy
    is degraded and waits."""
    works = blame.pool_works_since(b.pool, rec.id, start, b.config)
    if works:
        return True
    why = "too soon to tell from the pool" if works is None else "other proxies fail too"
    degrade(b, rec, f"{reason}; {why}", now, events)
    return False


def half_open_verdict(
    b: Books, rec: ProxyRec, entries: deque[tuple[float, str, int]], now: float
) -> bool:
    """Is one failure of a half-open proxy its own? Peers on the site say, else the pool."""
    cfg = b.config
    verdict = blame.site_verdict(entries, rec.id, start=now, end=now, own_success=0.0, cfg=cfg)
    if verdict is blame.Verdict.UNKNOWN:
        verdict = blame.site_verdict(b.pool, rec.id, start=now, end=now, own_success=0.0, cfg=cfg)
    return verdict is _PROXY


def own_success(b: Books, window: Window) -> float:
    """A window's success rate as the blame rules see it: the worse of burst and record."""
    cfg = b.config
    burst = 1.0 - window.recent_failures / cfg.recent_window
    return min(burst, window.success_rate(cfg.soft_failure_weight))


def judge_pair(b: Books, case: PairCase, reason: str, now: float, events: list[Event]) -> None:
    """A pair whose window tripped: benched when its peers on the site do better."""
    rec, _, site_rec, pair = case
    own = own_success(b, pair.window)
    verdict = blame.site_verdict(
        site_rec.entries, rec.id, start=now, end=now, own_success=own, cfg=b.config
    )
    if verdict is _PROXY:
        bench_pair(b, case, reason, now, events)


def check_faults(b: Books, site: str, site_rec: SiteRec, events: list[Event]) -> None:
    cfg = b.config
    entries = site_rec.entries
    if site_rec.fault is None and site_rec.fails > (1.0 - cfg.site_fault_below) * len(entries):
        site_rec.countdown -= 1
        if site_rec.countdown <= 0:
            site_rec.countdown = 3  # the scan is O(window): run it on every third failure
            reason = blame.site_fault_reason(entries, site_rec.fails, cfg)
            if reason is not None:
                site_rec.fault = reason
                events.append(SiteFault(site, True, reason))
                forget_failures_on(b, site, site_rec)
    pool = b.pool
    if b.our_side is None and b.pool_fails > (1.0 - cfg.our_side_below) * len(pool):
        b.our_countdown -= 1
        if b.our_countdown <= 0:
            b.our_countdown = 10
            reason = blame.our_side_reason(pool, b.pool_fails, cfg)
            if reason is not None:
                b.our_side = reason
                events.append(OurSideFault(True, reason))


def forget_failures_on(b: Books, site: str, site_rec: SiteRec) -> None:
    """The failures that came before the site was found at fault count against no proxy."""
    recent = b.config.recent_window
    for proxy_id, pair in site_rec.pairs.items():
        pair.window.reset()
        rec = b.proxies.get(proxy_id)
        if rec is None:
            continue
        rec.forget_failures_on(site)
        rec.fault_streak = 0
        if not rec.recent_fail:
            continue
        kept = [f for f in rec.recent_fail if f[1] != site]
        for _, _, seq in rec.recent_fail:
            age = rec.seq - seq
            if age < recent:
                rec.window.recent &= ~(1 << age)
        rec.recent_fail.clear()
        rec.recent_fail.extend(kept)


def check_recoveries(b: Books, site: str, site_rec: SiteRec, events: list[Event]) -> None:
    cfg = b.config
    if site_rec.fault is not None:
        rate = 1.0 - site_rec.fails / len(site_rec.entries)
        if rate >= cfg.site_recover_above:
            site_rec.fault = None
            events.append(SiteFault(site, False, f"success back to {rate:.0%}"))
    if b.our_side is not None:
        rate = 1.0 - b.pool_fails / len(b.pool)
        if rate >= cfg.our_side_recover_above:
            b.our_side = None
            events.append(OurSideFault(False, f"pool success back to {rate:.0%}"))


def bench_pair(b: Books, case: PairCase, reason: str, now: float, events: list[Event]) -> None:
    """Take the proxy off the site for a back-off, if the site's share of benches allows it."""
    rec, site, site_rec, pair = case
    cfg = b.config
    if pair.benched_until > now or b.our_side is not None or site_rec.fault is not None:
        return
    # The pool's protections apply per site as well, with their own cap: benching a pair
    # costs only that site, and when most proxies fail on a site the site is at fault
    # anyway. One pair may always go, so small pools can route around a blocking site.
    benched = sum(1 for p in site_rec.pairs.values() if p.benched_until > now)
    serving = len(b.cands)
    if benched + 1 > max(1, int(cfg.pair_bench_cap * serving + 1e-9)):
        return
    if serving - benched - 1 < b.required_in_service():
        return
    seconds = health.backoff(pair.level, cfg, b.random())
    pair.level += 1
    pair.benched_until = now + seconds
    rec.benched_on(site, pair.benched_until)
    b.dirty_benches.append((site, rec.id, pair.benched_until))
    events.append(PairBenched(rec.id, site, seconds, reason))
