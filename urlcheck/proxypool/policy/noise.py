"""The background: how often a typical proxy fails (and meets captchas) right now.

The rules that take a proxy out (``health.trip``) or lower its weight (``health.degrade_reason``)
ask whether chance alone, at that rate, would give its record; the rate is pooled over the
proxies in service that are not failing outright, leaving out the one being judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from urlcheck.proxypool.policy.books import MAINTENANCE_EVERY
from urlcheck.proxypool.rules.health import State
from urlcheck.proxypool.rules.outcome import CAPTCHA, CELL, FAIL

if TYPE_CHECKING:
    from urlcheck.proxypool.policy.books import Books

__all__ = ["measure_noise", "noise_level"]


def noise_level(
    b: Books, now: float, exclude: str | None = None, *, captcha: bool = False
) -> float:
    """Failure rate of a typical proxy in service: what chance alone produces right now,
    leaving out ``exclude``, the proxy being judged: its own failures are what the rules look
    for, not the background (counted in, a failing proxy in a small pool raised the bar of
    "3 of 5" to 4). Measured once a second."""
    if now - b.noise_at >= MAINTENANCE_EVERY:
        measure_noise(b, now)
    fails = b.noise_captchas if captcha else b.noise_fails
    total = b.noise_total
    if exclude is not None:
        part = b.noise_parts.get(exclude)
        if part is not None:
            fails -= part[1] if captcha else part[0]
            total -= part[2]
    return fails / total if total > 0 else 0.0


def measure_noise(b: Books, now: float) -> None:
    cfg = b.config
    # Pooled over the proxies that are not failing outright: the bad ones are what the
    # rules look for, not part of the background.
    fails = captchas = total = 0.0
    parts: dict[str, tuple[float, float, float]] = {}
    failing: set[str] = set()
    for r in b.cands:
        window = r.window
        n = window.n
        if not n or r.state is State.PROBING:
            continue
        bad = window.fails + cfg.soft_failure_weight * window.softs
        if bad > (1.0 - cfg.quarantine_below) * n:
            failing.add(r.id)
        elif n >= cfg.min_outcomes:
            fails += bad
            captchas += window.captchas
            total += n
            parts[r.id] = (bad, window.captchas, n)
    if total < len(b.pool):
        # Too little per-proxy history yet (a fresh pool): take the pool's recent outcomes,
        # leaving out those of proxies failing outright and the red cells of green rows.
        fails = captchas = total = 0.0
        counts: dict[str, list[float]] = {}
        for _, proxy_id, code, _ in b.pool:
            if proxy_id not in failing and not code & CELL:
                failed, captcha = code & FAIL, (code & CAPTCHA) >> 2
                total += 1
                fails += failed
                captchas += captcha
                count = counts.get(proxy_id)
                if count is None:
                    counts[proxy_id] = [failed, captcha, 1.0]
                else:
                    count[0] += failed
                    count[1] += captcha
                    count[2] += 1
        parts = {pid: (f, c, n) for pid, (f, c, n) in counts.items()}
    b.noise_at = now
    b.noise_fails, b.noise_captchas, b.noise_total = fails, captchas, total
    b.noise_parts = parts
