"""Active probes: who is due, through which control URL, and what a result means."""

from __future__ import annotations

from typing import TYPE_CHECKING

from urlcheck.proxypool.events import ControlUrlChanged, Event
from urlcheck.proxypool.policy.outcomes import record_latency
from urlcheck.proxypool.policy.states import (
    bench,
    check_degraded,
    degrade,
    return_to_service,
    reweigh,
    set_state,
)
from urlcheck.proxypool.rules import health
from urlcheck.proxypool.rules.health import IN_SERVICE, State
from urlcheck.proxypool.rules.probes import ControlUrlStats

if TYPE_CHECKING:
    from collections.abc import Sequence

    from urlcheck.proxypool.policy.books import Books, ProxyRec

__all__ = ["add_target", "due_probes", "probe_result"]


def add_target(b: Books, url: str) -> bool:
    """Take one of the crawl's own URLs as a probe target, when no control URL is configured
    and fewer than ``probe_targets`` are known. True: taken."""
    cfg = b.config
    if cfg.control_urls or len(b.control) >= cfg.probe_targets or url in b.control:
        return False
    if not url.startswith(("http://", "https://")):
        return False
    b.control[url] = ControlUrlStats(url, "HEAD")
    return True


def wants_targets(b: Books) -> bool:
    cfg = b.config
    return not cfg.control_urls and len(b.control) < cfg.probe_targets


def due_probes(b: Books, now: float) -> list[tuple[str, str]]:
    cfg = b.config
    if not b.control:
        return []
    due: list[tuple[float, ProxyRec]] = []
    for rec in b.proxies.values():
        if rec.probe_inflight_until > now:
            continue
        state = rec.state
        if state is State.QUARANTINED:
            at = max(rec.until, rec.next_probe_at)
        elif state is State.DEAD:
            at = rec.next_probe_at
        else:
            at = max(rec.last_used, rec.last_probe) + rec.idle_after
        if at <= now:
            due.append((at, rec))
    due.sort(key=lambda item: item[0])
    tasks: list[tuple[str, str]] = []
    for _, rec in due:
        if len(tasks) >= cfg.probe_batch:
            break
        url = control_url_for(b, rec)
        rec.probe_inflight_until = now + cfg.probe_timeout
        tasks.append((rec.id, url))
        stats = b.control[url]
        if (
            rec.state not in IN_SERVICE
            and stats.last_ok_at < now - cfg.probe_idle_max
            and stats.checking_until <= now
            and len(tasks) < cfg.probe_batch
        ):
            # A failed probe counts only against a URL known to work: a busy pool never
            # probes its working proxies, so check the URL through one of them too.
            witness = probe_witness(b, now)
            if witness is not None:
                witness.probe_inflight_until = now + cfg.probe_timeout
                stats.checking_until = now + cfg.probe_timeout
                tasks.append((witness.id, url))
    return tasks


def probe_witness(b: Books, now: float) -> ProxyRec | None:
    healthy = [r for r in b.cands if r.state is State.HEALTHY and r.probe_inflight_until <= now]
    return min(healthy, key=lambda r: r.last_probe, default=None)


def control_url_for(b: Books, rec: ProxyRec) -> str:
    # Rotate per proxy, so that consecutive probes of one proxy use different URLs.
    urls = [u for u, s in b.control.items() if not s.broken] or list(b.control)
    rec.probe_seq += 1
    return urls[rec.probe_seq % len(urls)]


def probe_result(  # noqa: PLR0917
    b: Books, proxy_id: str, control_url: str, ok: bool, latency: float | None, now: float
) -> Sequence[Event]:
    cfg = b.config
    events: list[Event] = []
    stats = b.control.get(control_url)
    if stats is None:
        stats = b.control[control_url] = ControlUrlStats(control_url)
    conclusive = ok or (stats.worked_through_other(proxy_id) and b.our_side is None)
    change = stats.push(
        proxy_id, ok, min(cfg.control_url_broken_after, max(1, len(b.proxies))), now
    )
    if change is not None:
        events.append(ControlUrlChanged(control_url, bool(change), change or "works again"))
    rec = b.proxies.get(proxy_id)
    if rec is None:
        return events
    rec.probe_inflight_until = 0.0
    rec.last_probe = now
    rec.idle_after = b.idle_interval()
    if ok:
        probe_passed(b, rec, latency, now, events)
    elif conclusive:
        probe_failed(b, rec, control_url, now, events)
    else:
        probe_inconclusive(b, rec, now, events)
    return events


def probe_passed(
    b: Books, rec: ProxyRec, latency: float | None, now: float, events: list[Event]
) -> None:
    cfg = b.config
    rec.probe_fail_streak = 0
    state = rec.state
    if state is State.QUARANTINED:
        rec.probe_ok += 1
        rec.next_probe_at = now + cfg.probe_retry_interval
        # Hysteresis: 3 failures put it in, 5 probes in a row and the whole back-off get it out.
        if rec.probe_ok >= cfg.probes_to_return and now >= rec.until:
            return_to_service(b, rec, f"{rec.probe_ok} probes passed in a row", now, events)
    elif state is State.DEAD:
        rec.probe_ok = 1
        rec.until = now
        rec.next_probe_at = now + cfg.probe_retry_interval
        set_state(b, rec, State.QUARANTINED, "a probe passed; probing again", now, events)
    else:
        if latency is not None and latency >= 0.0:
            record_latency(b, rec, latency)
        check_degraded(b, rec, now, events)


def probe_failed(b: Books, rec: ProxyRec, url: str, now: float, events: list[Event]) -> None:
    cfg = b.config
    state = rec.state
    if state is State.QUARANTINED:
        if now >= rec.until:
            bench(b, rec, f"probe of {url} failed", now, events)
        else:
            rec.probe_ok = 0
            rec.next_probe_at = rec.until
    elif state is State.DEAD:
        rec.next_probe_at = now + health.dead_probe_delay(cfg, b.random())
    else:
        rec.probe_fail_streak += 1
        rec.idle_after = cfg.probe_retry_interval  # look again soon
        why = f"{rec.probe_fail_streak} probes failed in a row ({url})"
        if rec.probe_fail_streak >= cfg.recent_failures:
            rec.probe_fail_streak = 0
            bench(b, rec, why, now, events)
        else:
            degrade(b, rec, why, now, events)
            reweigh(b, rec)


def probe_inconclusive(b: Books, rec: ProxyRec, now: float, events: list[Event]) -> None:
    cfg = b.config
    if rec.state is State.QUARANTINED:
        rec.next_probe_at = now + cfg.probe_retry_interval
        if now >= rec.until:
            rec.probe_inconclusive += 1
            if rec.probe_inconclusive >= cfg.probes_to_return:
                reason = "control URLs inconclusive; real traffic decides"
                return_to_service(b, rec, reason, now, events)
    elif rec.state is State.DEAD:
        rec.next_probe_at = now + health.dead_probe_delay(cfg, b.random())
