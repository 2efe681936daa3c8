"""Passive health: outcome windows, states, and the rules that move a proxy between them.

Everything here is a pure function of a window, a few numbers and the config; the policy
(``policy/``) applies it to its books, whatever store holds the shared state.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from enum import StrEnum
from itertools import repeat
from typing import TYPE_CHECKING, NamedTuple

from urlcheck.proxypool.rules.outcome import BLOCK, CAPTCHA, FAIL, SOFT, WINDOW_BITS

if TYPE_CHECKING:
    from urlcheck.proxypool.config import PoolConfig

__all__ = ["IN_SERVICE", "State", "Trip", "Window"]


class State(StrEnum):
    HEALTHY = "healthy"
    DEGRADED = "degraded"  # in service with a lower weight
    QUARANTINED = "quarantined"  # benched for a back-off, then probed
    PROBING = "probing"  # half-open: back in service on a ramping share of traffic
    DEAD = "dead"  # probed only rarely


IN_SERVICE = frozenset({State.HEALTHY, State.DEGRADED, State.PROBING})


class Window:
    """The last ``size`` outcome codes, with running counts, plus a bitmask of recent failures.

    Successes are the common case and carry no information beyond their number, so the codes are
    only materialised once a non-zero code arrives: a healthy pair costs a few integers.
    """

    __slots__ = ("_codes", "_mask", "_size", "blocks", "captchas", "fails", "n", "recent", "softs")

    def __init__(self, size: int, recent: int) -> None:
        self._size = size
        self._mask = (1 << recent) - 1
        self._codes: deque[int] | None = None
        self.n = 0  # outcomes in the window
        self.fails = 0
        self.softs = 0
        self.captchas = 0
        self.blocks = 0
        self.recent = 0  # bit i set: the (i+1)-th most recent outcome failed

    def push(self, code: int) -> bool:
        """Add an outcome; True when the rate inputs (``n``, ``fails``, ``softs``) may have
        moved."""
        code &= WINDOW_BITS
        codes = self._codes
        if codes is None:
            if not code:
                self.recent = (self.recent << 1) & self._mask
                if self.n < self._size:
                    self.n += 1
                    return True
                return False
            codes = self._codes = deque(repeat(0, self.n), maxlen=self._size)
        moved = code != 0
        if self.n == self._size:
            old = codes[0]
            if old:
                self._count(old, -1)
                moved = True
        else:
            self.n += 1
            moved = True
        codes.append(code)
        if code:
            self._count(code, 1)
        self.recent = ((self.recent << 1) | (code & FAIL)) & self._mask
        return moved

    def _count(self, code: int, step: int) -> None:
        if code & FAIL:
            self.fails += step
        if code & SOFT:
            self.softs += step
        if code & CAPTCHA:
            self.captchas += step
        if code & BLOCK:
            self.blocks += step

    def reset(self) -> None:
        self._codes = None
        self.n = self.fails = self.softs = self.captchas = self.blocks = self.recent = 0

    @property
    def recent_failures(self) -> int:
        return self.recent.bit_count()

    def success_rate(self, soft_weight: float) -> float:
        """Share of successes; 1.0 when empty. A soft failure counts as ``soft_weight`` of one."""
        n = self.n
        if not n:
            return 1.0
        return 1.0 - (self.fails + soft_weight * self.softs) / n

    def smoothed_success(self, soft_weight: float) -> float:
        """Success rate with one imagined success, so that 1 failure in 1 is not zero."""
        n = self.n
        return 1.0 - (self.fails + soft_weight * self.softs) / (n + 1)


class Trip(NamedTuple):
    reason: str
    sustained: bool  # a rate over min_outcomes, not a short burst


def trip(
    window: Window, cfg: PoolConfig, noise: float = 0.0, captcha_noise: float = 0.0
) -> Trip | None:
    """Has this window crossed the failure threshold? Failure is accumulated, never one error.

    ``noise`` is the failure rate of a typical proxy right now (on the site, for a pair's
    window), ``captcha_noise`` its captcha rate. Every rule also asks that chance alone, at
    that rate, would reach this many failures (captchas) with probability
    ``trip_false_alarm`` at most: in a clean pool 3 of the last 5 is enough, where everyone
    fails (or meets captchas) now and then it is not.
    """
    n = window.n
    alarm = cfg.trip_false_alarm
    noise = round(noise, 3)
    if n >= cfg.min_outcomes:
        rate = window.success_rate(cfg.soft_failure_weight)
        if rate < cfg.quarantine_below and chance(n, round((1.0 - rate) * n), noise) <= alarm:
            return Trip(f"success {rate:.0%} < {cfg.quarantine_below:.0%} over {n}", True)
        captcha = window.captchas / n
        if (
            captcha >= cfg.captcha_quarantine_rate
            and chance(n, window.captchas, round(captcha_noise, 3)) <= alarm
        ):
            return Trip(f"captcha rate {captcha:.0%} over {n}", True)
    failures = window.recent_failures
    if failures >= cfg.recent_failures and chance(cfg.recent_window, failures, noise) <= alarm:
        return Trip(f"{failures} failures in the last {cfg.recent_window}", False)
    return None


@functools.lru_cache(maxsize=4096)
def chance(n: int, k: int, p: float) -> float:
    """P(at least k failures among n outcomes), each failing with probability p."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    return math.fsum(math.comb(n, j) * p**j * (1.0 - p) ** (n - j) for j in range(k, n + 1))


def degrade_reason(
    window: Window, cfg: PoolConfig, noise: float = 0.0, captcha_noise: float = 0.0
) -> str | None:
    """The softer rule: a proxy degraded this way keeps traffic, at a lower weight. Like the
    trip rules, against what a typical proxy meets now (``noise``, ``captcha_noise``): a record
    that chance alone would give a typical proxy once in a hundred times is not a reason."""
    n = window.n
    if n < cfg.min_outcomes:
        return None
    rate = window.success_rate(cfg.soft_failure_weight)
    if rate < cfg.degrade_below and unusual(n, round((1.0 - rate) * n), noise):
        return f"success {rate:.0%} < {cfg.degrade_below:.0%} over {n}"
    captcha = window.captchas / n
    if captcha >= cfg.captcha_degrade_rate and unusual(n, window.captchas, captcha_noise):
        return f"captcha rate {captcha:.0%} over {n}"
    return None


def unusual(n: int, k: int, rate: float) -> bool:
    """Would `k` failures in `n` come from `rate` by chance once in a hundred times at most?"""
    return chance(n, k, round(rate, 3)) <= WORSE_THAN_SITE


def worse_than(window: Window, cfg: PoolConfig, rate: float) -> bool:
    """Does a (proxy, site) window fail clearly more than ``rate``, the rate the site's other
    proxies meet there? Its recent failures or its record would come from that rate by chance
    once in a hundred times at most."""
    p = round(rate, 3)
    return (
        chance(cfg.recent_window, window.recent_failures, p) <= WORSE_THAN_SITE
        or chance(window.n, window.fails, p) <= WORSE_THAN_SITE
    )


#: How unlikely a pair's failures must be at its site's shared rate to be its own.
WORSE_THAN_SITE = 0.01


def red(window: Window, cfg: PoolConfig) -> bool:
    """Is this (proxy, site) cell red? Its last two outcomes failed, or its record, however
    short, is under the quarantine bars. One failure in a green cell is noise."""
    if window.recent & 3 == 3:
        return True
    n = window.n
    return n > 0 and (
        window.success_rate(cfg.soft_failure_weight) < cfg.quarantine_below
        or window.captchas >= cfg.captcha_quarantine_rate * n
    )


def recovered(
    window: Window, cfg: PoolConfig, noise: float = 0.0, captcha_noise: float = 0.0
) -> bool:
    """Hysteresis: a degraded proxy needs a clearly better record than the one that degraded it,
    or one that is plainly a typical proxy's now (chance gives it a typical proxy half the time
    at least)."""
    n = window.n
    if n < cfg.min_outcomes:
        return window.fails == 0
    fails = round((1.0 - window.success_rate(cfg.soft_failure_weight)) * n)
    return (
        fails <= (1.0 - cfg.recover_above) * n or chance(n, fails, round(noise, 3)) >= 0.5
    ) and (
        window.captchas < cfg.captcha_degrade_rate / 2 * n
        or chance(n, window.captchas, round(captcha_noise, 3)) >= 0.5
    )


def backoff(level: int, cfg: PoolConfig, rand: float) -> float:
    """Quarantine length: base * 2**level (1, 2, 4, ... min), capped at ``backoff_max``, then
    moved up or down at random by up to ``backoff_jitter``.

    Jitter both ways keeps the mean on the guide's steps while proxies benched together come
    back apart; the cap is therefore "about" ``backoff_max``, at most (1 + jitter) times it.
    """
    raw = min(cfg.backoff_base * 2.0 ** min(level, 64), cfg.backoff_max)
    return raw * (1.0 + cfg.backoff_jitter * (2.0 * rand - 1.0))


def dead_probe_delay(cfg: PoolConfig, rand: float) -> float:
    """Seconds to the next probe of a dead proxy: ``dead_probe_interval``, give or take a quarter,
    so dead proxies are not all probed in the same second."""
    return cfg.dead_probe_interval * (0.75 + 0.5 * rand)


def ramp(ok_since_return: int, cfg: PoolConfig) -> float:
    """Share of full weight for a half-open proxy: slow start, linear in its successes."""
    done = min(1.0, ok_since_return / cfg.ramp_requests)
    return cfg.ramp_start + (1.0 - cfg.ramp_start) * done


def success_factor(smoothed: float, cfg: PoolConfig) -> float:
    return max(cfg.min_weight, math.pow(max(smoothed, 0.0), cfg.weight_exponent))


def latency_factor(own: float, pool: float, cfg: PoolConfig) -> float:
    """A proxy slower than the pool's average loses weight with the square root of the ratio."""
    if own <= pool or own <= 0.0:
        return 1.0
    return max(cfg.latency_weight_floor, math.sqrt(pool / own))


def percentile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]
