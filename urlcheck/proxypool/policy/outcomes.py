"""Release: one outcome recorded in the windows of the pool, the site, the pair and the proxy,
then judged (latency, weight, recovery; failures go to ``judge``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from urlcheck.proxypool.policy.books import PairCase, PairRec, SiteRec
from urlcheck.proxypool.policy.judge import (
    after_failure,
    check_faults,
    check_recoveries,
    judge_pair,
)
from urlcheck.proxypool.policy.noise import noise_level
from urlcheck.proxypool.policy.states import check_degraded, kill, reweigh, set_state
from urlcheck.proxypool.rules import blame, health
from urlcheck.proxypool.rules.health import State
from urlcheck.proxypool.rules.outcome import (
    CELL,
    FAIL,
    PERMANENT,
    PROXY_FAULT,
    SOFT,
    permanent_reason,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from urlcheck.proxypool.events import Event
    from urlcheck.proxypool.policy.books import Books, ProxyRec

__all__ = ["record", "record_latency"]

_FAST_LATENCY = 0.3  # EWMA weights: recent latency, and the proxy's long-run norm on a site
_SLOW_LATENCY = 0.02
_NO_EVENTS: tuple[Event, ...] = ()
_HEALTHY = State.HEALTHY  # a module global: cheaper than the enum's attribute


def record(  # noqa: PLR0917
    b: Books, rec: ProxyRec, site: str, code: int, latency: float | None, now: float
) -> Sequence[Event]:
    cfg = b.config
    events: list[Event] = []
    fail = code & FAIL
    b.outcomes += 1
    second = int(now)
    bucket = b.buckets[second % 60]
    if bucket[0] != second:
        bucket[0], bucket[1], bucket[2] = second, 0, 0
    bucket[1] += 1
    bucket[2] += not code
    # The pool-wide and site windows see every outcome: they are what blame is judged on.
    pool = b.pool
    if len(pool) == cfg.global_window_size and pool[0][2] & FAIL:
        b.pool_fails -= 1
    pool.append((now, rec.id, code, site))
    site_rec = b.sites.get(site)
    if site_rec is None:
        site_rec = b.sites[site] = SiteRec(cfg)
    site_rec.last_seen = now
    site_rec.n += 1
    entries = site_rec.entries
    if len(entries) == cfg.site_window_size and entries[0][2] & FAIL:
        site_rec.fails -= 1
    entries.append((now, rec.id, code))
    if fail:
        b.pool_fails += 1
        site_rec.fails += 1
        check_faults(b, site, site_rec, events)
    else:
        site_rec.ok += not code
        if site_rec.fault is not None or b.our_side is not None:
            check_recoveries(b, site, site_rec, events)
    pair = site_rec.pairs.get(rec.id)
    if pair is None:
        pair = site_rec.pairs[rec.id] = PairRec(cfg)
    pair.last_seen = now
    pair.n += 1
    pair.ok += not code
    if code or pair.route != 1.0:
        value = 0.0 if fail else (1.0 - cfg.soft_failure_weight if code & SOFT else 1.0)
        route = pair.route = pair.route + b.pair_alpha * (value - pair.route)
        # health.success_factor, inlined: this runs on most releases once failures happen
        # (`x if x > y else y` is max(y, x) to the bit, without the builtin's call)
        factor = (0.0 if route < 0.0 else route) ** cfg.weight_exponent
        floor = cfg.min_weight
        pair.factor = factor if factor > floor else floor
    if code & PERMANENT:
        kill(b, rec, permanent_reason(code), now, events, misconfigured=True)
        return events
    if site_rec.fault is not None or b.our_side is not None:
        return events  # excused: the site or our side is at fault, not this proxy
    pair.window.push(code)
    if not fail:
        if code:
            # rate limited: soft, and for this pair only
            if pair.window.n >= cfg.min_outcomes:
                tripped = health.trip(pair.window, cfg, noise_level(b, now, rec.id))
                if tripped is not None:
                    case = PairCase(rec, site, site_rec, pair)
                    judge_pair(b, case, tripped.reason, now, events)
            return events
        window = rec.window
        moved = window.push(0)
        rec.seq += 1
        rec.row.append((site, 0))
        if site != rec.ok_a:
            rec.ok_b, rec.ok_b_at = rec.ok_a, rec.ok_a_at
            rec.ok_a = site
        rec.ok_a_at = now
        rec.probe_fail_streak = rec.fault_streak = 0
        if latency is not None and latency >= 0.0:
            record_latency(b, rec, latency, pair)
        if (
            rec.state is _HEALTHY
            and not rec.spiking
            and rec.outlier is None
            and not rec.level
            and not pair.level
            and window.n != cfg.min_outcomes
        ):
            # The common case: nothing in after_success applies, and the weight moves only
            # when the window's rates did or latency weighs on it.
            if moved or rec.slowed or rec.lat_fast > b.pool_latency:
                reweigh(b, rec)
            return events
        after_success(b, rec, pair, now, events)
    else:
        # A failure rate most proxies meet on this site, at any level, is the site's: a
        # failure at that rate counts against no proxy, only in the pair's window (which is
        # judged against the site's rate), unless the pair does clearly worse.
        site_rates = None
        if not code & PROXY_FAULT:
            site_rates = blame.shared_site_rates(site_rec.entries, rec.id)
            if site_rates is not None and not health.worse_than(pair.window, cfg, site_rates[0]):
                b.pool[-1] = (now, rec.id, code | CELL, site)  # not the background noise either
                return events
        # A red cell in a green row counts against the pair only; the proxy's own window
        # takes the failures that span its row, and those that are certainly its own.
        cell = (
            not code & PROXY_FAULT
            and len(b.sites) > 1
            and health.red(pair.window, cfg)
            and not rec.benched_elsewhere(site, now)
            and blame.green_row(rec.row, site, cfg)
        )
        rec.row.append((site, 1))
        if cell:
            # marked in the pool window too: not part of the background noise
            b.pool[-1] = (now, rec.id, code | CELL, site)
        else:
            rec.window.push(code)
            rec.seq += 1
            rec.recent_fail.append((now, site, rec.seq))
        # the latest failures all the proxy's own (refused, reset, 407), back to back
        if not code & PROXY_FAULT:
            rec.fault_streak = 0
        else:
            if not rec.fault_streak:
                rec.fault_since = now
            rec.fault_streak += 1
        case = PairCase(rec, site, site_rec, pair)
        after_failure(b, case, code=code, cell=cell, now=now, events=events, site_rates=site_rates)
        if cell:
            return events
    reweigh(b, rec)
    return events


def record_latency(b: Books, rec: ProxyRec, latency: float, pair: PairRec | None = None) -> None:
    """A successful request's latency: the proxy's recent latency (its weight), and, on a site
    (``pair``), the latency over the proxy's own norm there, from which spikes are judged."""
    cfg = b.config
    rec.latencies.append(latency)
    if rec.lat_n == 0:
        rec.lat_fast = latency
    else:
        rec.lat_fast += _FAST_LATENCY * (latency - rec.lat_fast)
    rec.lat_n += 1
    if b.pool_latency == 0.0:
        b.pool_latency = latency
    else:
        b.pool_latency += b.pool_alpha * (latency - b.pool_latency)
    if pair is None:
        return  # a probe: no site to hold it against
    norm = pair.lat_norm
    pair.lat_n += 1
    if norm <= 0.0:
        pair.lat_norm = latency
        return
    ratio = latency / norm
    # The norm is the mean of the pair's first latencies, then a slow moving average; while
    # the proxy's recent ratio is clearly up it learns ten times slower, or it would absorb a
    # fourfold rise before the rise showed as a spike: a lasting change is still learnt, in a
    # few hundred requests.
    steady = rec.lat_ratio <= cfg.latency_recover_factor
    alpha = max(_SLOW_LATENCY if steady else _SLOW_LATENCY / 10, 1.0 / pair.lat_n)
    pair.lat_norm = norm + alpha * (latency - norm)
    if pair.lat_n <= 3:
        return  # a norm of one or two latencies says little yet
    rec.lat_ratio += _FAST_LATENCY * (ratio - rec.lat_ratio)
    rec.lat_rn += 1
    if rec.lat_rn >= cfg.min_outcomes:
        if rec.spiking:
            rec.spiking = rec.lat_ratio > cfg.latency_recover_factor
        else:
            rec.spiking = rec.lat_ratio > cfg.latency_spike_factor


def after_success(b: Books, rec: ProxyRec, pair: PairRec, now: float, ev: list[Event]) -> None:
    cfg = b.config
    state = rec.state
    if state is State.PROBING:
        rec.ramp_ok += 1
        if rec.ramp_ok >= cfg.ramp_requests:
            rec.failed_cycles = 0
            rec.stable_since = now
            set_state(b, rec, State.HEALTHY, "ramp complete: full weight", now, ev)
    elif state is State.HEALTHY or state is State.DEGRADED:
        # A success cannot raise a window's failure rates: a healthy proxy can only be
        # degraded here by a latency spike or the outlier rule, or at the success that
        # brings its window to min_outcomes, the first moment the rate rules apply (its
        # failures may all have come before).
        if (
            state is State.DEGRADED
            or rec.spiking
            or rec.outlier is not None
            or rec.window.n == cfg.min_outcomes
        ):
            check_degraded(b, rec, now, ev)
        if rec.level and now - rec.stable_since >= cfg.backoff_reset_after:
            rec.level = 0  # worked stably for a while: the next quarantine starts short again
    if pair.level and pair.benched_until and now - pair.benched_until >= cfg.backoff_reset_after:
        pair.level = 0
