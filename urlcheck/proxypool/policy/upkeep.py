"""Maintenance, at most once a second: back-offs over (without control URLs), the outlier rule,
and dropping idle sites."""

from __future__ import annotations

from typing import TYPE_CHECKING

from urlcheck.proxypool.policy import sessions
from urlcheck.proxypool.policy.books import MAINTENANCE_EVERY
from urlcheck.proxypool.policy.states import check_degraded, return_to_service
from urlcheck.proxypool.rules import blame
from urlcheck.proxypool.rules.health import State

if TYPE_CHECKING:
    from urlcheck.proxypool.events import Event
    from urlcheck.proxypool.policy.books import Books

__all__ = ["maintain"]

_SWEEP_EVERY = 60.0


def maintain(b: Books, now: float, events: list[Event]) -> None:
    cfg = b.config
    b.next_maintenance = now + MAINTENANCE_EVERY
    if (b.counts[State.QUARANTINED] or b.counts[State.DEAD]) and not b.control:
        # Nothing to probe with: the real traffic of the half-open state is the probe, for a
        # quarantined proxy when its back-off is over, for a dead one at its (hourly) probe time.
        for rec in list(b.proxies.values()):
            if rec.state is State.QUARANTINED and rec.until <= now:
                return_to_service(b, rec, "back-off over (no probe target)", now, events)
            elif rec.state is State.DEAD and rec.next_probe_at <= now:
                return_to_service(b, rec, "hourly retry (no probe target)", now, events)
    if now >= b.next_outlier:
        b.next_outlier = now + cfg.outlier_interval
        run_outlier_rule(b, now, events)
    if now >= b.next_sweep:
        b.next_sweep = now + _SWEEP_EVERY
        sweep(b, now)


def run_outlier_rule(b: Books, now: float, events: list[Event]) -> None:
    cfg = b.config
    rates = [
        (r.id, r.window.success_rate(cfg.soft_failure_weight))
        for r in b.cands
        if r.window.n >= cfg.outlier_min_outcomes and r.state is not State.PROBING
    ]
    found = blame.outliers(rates, cfg)
    for rec in list(b.cands):
        if rec.state is State.PROBING:
            continue
        outlier = found.get(rec.id)
        if outlier != rec.outlier:
            rec.outlier = outlier
            check_degraded(b, rec, now, events)


def sweep(b: Books, now: float) -> None:
    sessions.sweep(b, now)
    horizon = now - b.config.site_idle_ttl
    for site in [s for s, rec in b.sites.items() if rec.last_seen < horizon]:
        del b.sites[site]
    for site_rec in b.sites.values():
        stale = [
            pid
            for pid, p in site_rec.pairs.items()
            if p.last_seen < horizon and p.benched_until <= now
        ]
        for pid in stale:
            del site_rec.pairs[pid]
