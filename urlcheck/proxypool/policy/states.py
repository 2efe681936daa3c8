"""The state machine: quarantine, death, return to service, and the pool's limits on them.

Also membership (proxies added, removed, or changed by another process): what moves a proxy
between states moves it in and out of the candidates.
"""

from __future__ import annotations

from math import sqrt
from typing import TYPE_CHECKING

from urlcheck.proxypool.events import Event, Transition
from urlcheck.proxypool.policy.books import ProxyRec
from urlcheck.proxypool.policy.noise import noise_level
from urlcheck.proxypool.rules import health
from urlcheck.proxypool.rules.health import IN_SERVICE, State

_HEALTHY, _DEGRADED, _PROBING = State.HEALTHY, State.DEGRADED, State.PROBING

if TYPE_CHECKING:
    from urlcheck.proxypool.policy.books import Books
    from urlcheck.proxypool.proxy import Proxy

__all__ = [
    "add",
    "adopt",
    "bench",
    "check_degraded",
    "degrade",
    "kill",
    "remove",
    "return_to_service",
    "reweigh",
    "set_state",
]


def add(b: Books, proxy: Proxy, now: float) -> bool:
    """Add a proxy (healthy), or give a known one its new spec, keeping its health. True: new."""
    rec = b.proxies.get(proxy.id)
    if rec is not None:
        rec.set_spec(proxy, b.config)
        reweigh(b, rec)
        b.refresh_max_weight()
        return False
    rec = ProxyRec(proxy, b.config, now, b.idle_interval())
    b.proxies[rec.id] = rec
    b.counts[State.HEALTHY] += 1
    b.cands.append(rec)
    b.refresh_max_weight()
    return True


def remove(b: Books, proxy_id: str, now: float, events: list[Event]) -> bool:
    rec = b.proxies.pop(proxy_id, None)
    if rec is None:
        return False
    b.counts[rec.state] -= 1
    if rec.state in IN_SERVICE:
        b.cands.remove(rec)
        b.refresh_max_weight()
    enforce_limits(b, now, events)
    return True


def adopt(b: Books, rec: ProxyRec, state: State, until: float, now: float) -> None:
    """Take a state another process committed: no event here, that process reported it."""
    if state is State.QUARANTINED or state is State.DEAD:
        # quarantined: until the back-off ends; dead: until its next (hourly) probe
        rec.until = rec.next_probe_at = until
    if rec.state is state:
        return
    if state is State.PROBING:
        rec.window.reset()
        rec.recent_fail.clear()
        rec.ramp_ok = rec.probe_ok = rec.probe_inconclusive = rec.probe_fail_streak = 0
    _move(b, rec, state, now)
    reweigh(b, rec)


def _move(b: Books, rec: ProxyRec, new: State, now: float) -> State:
    """Put ``rec`` in state ``new``: its clocks, the state counts, the candidates; returns
    the old state."""
    old = rec.state
    if old is State.QUARANTINED:
        rec.quarantine_time += now - rec.state_since
    rec.state = new
    rec.state_since = now
    b.counts[old] -= 1
    b.counts[new] += 1
    was_in, now_in = old in IN_SERVICE, new in IN_SERVICE
    if was_in and not now_in:
        b.cands.remove(rec)
        b.refresh_max_weight()
    elif now_in and not was_in:
        b.cands.append(rec)
        b.refresh_max_weight()
    return old


def set_state(  # noqa: PLR0917
    b: Books,
    rec: ProxyRec,
    new: State,
    reason: str,
    now: float,
    events: list[Event],
    *,
    misconfigured: bool = False,
) -> None:
    old = _move(b, rec, new, now)
    rec.last_transition = (now, old, new, reason)
    b.dirty.add(rec.id)
    events.append(Transition(rec.id, old, new, reason, misconfigured))
    reweigh(b, rec)


def reweigh(b: Books, rec: ProxyRec) -> None:
    # Runs on most releases: health.success_factor and health.latency_factor, inlined.
    cfg = b.config
    window = rec.window
    # (`x if x > y else y` is max(y, x) to the bit, without the builtin's call)
    smoothed = 1.0 - (window.fails + cfg.soft_failure_weight * window.softs) / (window.n + 1)
    factor = (0.0 if smoothed < 0.0 else smoothed) ** cfg.weight_exponent
    floor = cfg.min_weight
    if not factor > floor:
        factor = floor
    own, pool = rec.lat_fast, b.pool_latency
    slowed = rec.slowed = bool(rec.lat_n and pool > 0.0 and own > pool)
    if slowed:
        factor *= max(cfg.latency_weight_floor, sqrt(pool / own))
    state = rec.state
    if state is _HEALTHY:
        rec.weight = rec.static_weight * factor
        # round-robin, least connections and new sticky keys ignore weights, not the safeguards
        rec.share = 1.0
        return
    if state is _DEGRADED:
        factor *= cfg.degraded_weight
    elif state is _PROBING:
        factor *= health.ramp(rec.ramp_ok, cfg)
    rec.weight = rec.static_weight * factor
    rec.share = min(1.0, factor)


def bench_blocked(b: Books) -> str | None:
    """Why no further proxy may leave service now, if so."""
    out = b.counts[State.QUARANTINED]
    cap = b.quarantine_cap()
    if out + 1 > cap:
        return f"quarantine cap reached ({out} quarantined, cap {cap})"
    required = b.required_in_service()
    if len(b.cands) - 1 < required:
        return f"minimum in service ({required})"
    return None


def bench(b: Books, rec: ProxyRec, reason: str, now: float, events: list[Event]) -> None:
    """Quarantine (or, after too many failed cycles, kill) a proxy, if the pool allows it."""
    cfg = b.config
    if b.our_side is not None:
        return  # quarantines freeze while the fault is ours
    if rec.state in IN_SERVICE:
        blocked = bench_blocked(b)
        if blocked is not None:
            why = f"{reason}; kept in service: {blocked}"
            if rec.state is State.PROBING:
                # Not half-open any more: it failed its test. Say so, at the degraded weight.
                rec.ramp_ok = 0
                set_state(b, rec, State.DEGRADED, why, now, events)
            else:
                degrade(b, rec, why, now, events)
            return
    if rec.state is State.PROBING or rec.state is State.QUARANTINED:
        rec.failed_cycles += 1
    if rec.failed_cycles >= cfg.dead_after_cycles:
        why = f"{reason}; {rec.failed_cycles} failed quarantine cycles"
        kill(b, rec, why, now, events)
        return
    seconds = health.backoff(rec.level, cfg, b.random())
    rec.level += 1
    rec.until = now + seconds
    rec.next_probe_at = rec.until
    rec.probe_ok = rec.probe_inconclusive = 0
    rec.quarantines += 1
    b.quarantine_log.append(now)
    set_state(b, rec, State.QUARANTINED, f"{reason}; back-off {seconds:.0f}s", now, events)


def kill(
    b: Books,
    rec: ProxyRec,
    reason: str,
    now: float,
    events: list[Event],
    *,
    misconfigured: bool = False,
) -> None:
    """Take the proxy out for good (probed now and then); ``misconfigured`` when the proxy
    list is wrong (a 407, a proxy host that does not resolve), which is logged as a warning."""
    # `until` carries the next probe to the other processes (see `adopt`)
    rec.until = rec.next_probe_at = now + health.dead_probe_delay(b.config, b.random())
    if rec.state is State.DEAD:
        return
    set_state(b, rec, State.DEAD, reason, now, events, misconfigured=misconfigured)
    enforce_limits(b, now, events)


def return_to_service(
    b: Books, rec: ProxyRec, reason: str, now: float, events: list[Event]
) -> None:
    """Quarantine over: half-open, with fresh windows and a small share of traffic."""
    rec.window.reset()
    rec.recent_fail.clear()
    rec.ramp_ok = rec.probe_ok = rec.probe_inconclusive = rec.probe_fail_streak = 0
    rec.spiking = False
    rec.lat_ratio, rec.lat_rn = 1.0, 0
    rec.outlier = None
    set_state(b, rec, State.PROBING, reason, now, events)


def enforce_limits(b: Books, now: float, events: list[Event]) -> None:
    """Keep the cap and the minimum when the pool shrinks (removals, 407 deaths): bring back
    the quarantined proxies due soonest. Better doubtful proxies than too few."""
    while b.counts[State.QUARANTINED]:
        required = b.required_in_service()
        cap = b.quarantine_cap()
        out = b.counts[State.QUARANTINED]
        if len(b.cands) < required:
            reason = f"keeping the minimum of {required} in service"
        elif out > cap:
            reason = f"keeping under the quarantine cap of {cap}"
        else:
            return
        waiting = [r for r in b.proxies.values() if r.state is State.QUARANTINED]
        return_to_service(b, min(waiting, key=lambda r: r.until), reason, now, events)


def degrade(b: Books, rec: ProxyRec, why: str, now: float, events: list[Event]) -> None:
    """Lower the weight first (only a healthy proxy changes state; the reason is logged)."""
    if rec.state is State.HEALTHY:
        set_state(b, rec, State.DEGRADED, why, now, events)


def check_degraded(b: Books, rec: ProxyRec, now: float, events: list[Event]) -> None:
    cfg = b.config
    if rec.state is not State.HEALTHY and rec.state is not State.DEGRADED:
        return
    noise = noise_level(b, now, rec.id)
    captchas = noise_level(b, now, rec.id, captcha=True)
    why = health.degrade_reason(rec.window, cfg, noise, captchas)
    if why is None and rec.spiking:
        why = f"latency spike ({rec.lat_ratio:.1f} x its usual on the same sites)"
    if why is None and rec.outlier is not None:
        why = f"outlier: {rec.outlier}"
    if rec.state is State.HEALTHY:
        if why is not None:
            set_state(b, rec, State.DEGRADED, why, now, events)
    elif why is None and health.recovered(rec.window, cfg, noise, captchas):
        set_state(b, rec, State.HEALTHY, "recovered", now, events)
