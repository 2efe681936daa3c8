"""The pool's snapshot (format: docs/proxypool.md), built from the books."""

from __future__ import annotations

from typing import TYPE_CHECKING

from urlcheck.proxypool.rules import health
from urlcheck.proxypool.rules.health import State

if TYPE_CHECKING:
    from urlcheck.proxypool.policy.books import Books, ProxyRec
    from urlcheck.proxypool.snapshot import (
        CellStats,
        ControlUrlInfo,
        PoolSnapshot,
        ProxyStats,
        SiteStats,
        TransitionInfo,
    )

__all__ = ["snapshot"]


def snapshot(
    b: Books,
    now: float,
    leases_active: int,
    sessions: int,
    active: dict[str, int] | None = None,
) -> PoolSnapshot:
    """A JSON-serialisable picture of the books; leases and sessions are counted by the store,
    and so are the leases per proxy (`active`) when processes share it."""
    cfg = b.config
    proxies = [proxy_stats(b, rec, now, active) for rec in b.proxies.values()]
    ids = set(b.proxies)
    recent = sorted(b.sites.items(), key=lambda item: -item[1].last_seen)
    recent = recent[: cfg.snapshot_sites]
    sites: dict[str, SiteStats] = {}
    matrix: dict[str, dict[str, CellStats]] = {}
    for name, site_rec in recent:
        n = len(site_rec.entries)
        sites[name] = {
            "outcomes": site_rec.n,
            "success_rate": 1.0 - site_rec.fails / n if n else 1.0,
            "at_fault": site_rec.fault is not None,
            "fault_reason": site_rec.fault,
        }
        matrix[name] = {
            pid: {
                "outcomes": p.n,
                "success_rate": p.ok / p.n if p.n else 1.0,
                "recent_success": p.route,
                "benched_until": p.benched_until if p.benched_until > now else None,
            }
            for pid, p in site_rec.pairs.items()
            if pid in ids
        }
    seconds = [s for s in b.buckets if now - 60 < s[0] <= now]
    outcomes = sum(s[1] for s in seconds)
    total = len(b.proxies)
    cap = b.quarantine_cap()
    out = b.counts[State.QUARANTINED]
    controls: list[ControlUrlInfo] = [
        {"url": s.url, "broken": s.broken, "ok": s.ok, "failed": s.failed}
        for s in b.control.values()
    ]
    return {
        "time": now,
        "totals": {
            "proxies": total,
            "states": {state.value: n for state, n in b.counts.items()},
            "in_service": len(b.cands),
            "min_in_service": b.required_in_service(),
            "quarantine_cap": cap,
            "quarantine_cap_fill": out / cap if cap else float(out > 0),
            "quarantines_total": sum(r.quarantines for r in b.proxies.values()),
            "quarantines_last_hour": sum(1 for t in b.quarantine_log if t > now - 3600),
            "leases_active": leases_active,
            "sessions": sessions,
            "outcomes_total": b.outcomes,
            "throughput": outcomes / 60.0,
            "success_rate": sum(s[2] for s in seconds) / outcomes if outcomes else None,
            "our_side_fault": b.our_side,
            "sites_at_fault": sorted(s for s, r in b.sites.items() if r.fault),
        },
        "proxies": proxies,
        "sites": sites,
        "matrix": matrix,
        "control_urls": controls,
    }


def proxy_stats(
    b: Books, rec: ProxyRec, now: float, active: dict[str, int] | None = None
) -> ProxyStats:
    cfg = b.config
    window = rec.window
    n = window.n
    latencies = sorted(rec.latencies)
    quarantined = rec.state is State.QUARANTINED
    transition: TransitionInfo | None = None
    if rec.last_transition is not None:
        at, old, new, reason = rec.last_transition
        transition = {"at": at, "old": old.value, "new": new.value, "reason": reason}
    return {
        "id": rec.id,
        "display": rec.proxy.display,
        "tags": sorted(rec.proxy.tags),
        "state": rec.state.value,
        "weight": rec.weight,
        "static_weight": rec.static_weight,
        "success_rate": window.success_rate(cfg.soft_failure_weight) if n else None,
        "captcha_rate": window.captchas / n if n else None,
        "block_rate": window.blocks / n if n else None,
        "latency_p50": health.percentile(latencies, 0.5),
        "latency_p95": health.percentile(latencies, 0.95),
        "outcomes": n,
        "active": rec.active if active is None else active.get(rec.id, 0),
        "max_concurrent": rec.cap,
        "quarantines": rec.quarantines,
        "quarantine_seconds": rec.quarantine_time + (now - rec.state_since if quarantined else 0.0),
        "quarantined_until": rec.until if quarantined else None,
        "failed_cycles": rec.failed_cycles,
        "last_transition": transition,
    }
