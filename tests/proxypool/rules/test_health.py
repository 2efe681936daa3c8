import random

import pytest

from urlcheck.proxypool import PoolConfig
from urlcheck.proxypool.rules.health import (
    Window,
    backoff,
    chance,
    degrade_reason,
    latency_factor,
    percentile,
    ramp,
    recovered,
    red,
    success_factor,
    trip,
)
from urlcheck.proxypool.rules.outcome import CAPTCHA, FAIL, SOFT

CFG = PoolConfig()


def window_of(codes: list[int], size: int = 50) -> Window:
    window = Window(size, 5)
    for code in codes:
        window.push(code)
    return window


def test_window_counts_and_evicts() -> None:
    window = window_of([0] * 3 + [FAIL] + [0] * 2, size=4)
    assert window.n == 4
    assert window.fails == 1
    window.push(0)
    window.push(0)
    window.push(0)  # the failure falls out
    assert window.fails == 0
    assert window.n == 4


def test_window_stays_lazy_while_clean() -> None:
    window = window_of([0] * 60)
    assert window.n == 50
    assert window._codes is None
    window.push(FAIL)
    assert window._codes is not None
    assert window.n == 50
    assert window.fails == 1


def test_recent_failures_bits() -> None:
    window = window_of([FAIL, FAIL, 0, FAIL, 0])
    assert window.recent_failures == 3
    window.push(0)  # the oldest failure leaves the last five
    assert window.recent_failures == 2


def test_success_rate_with_soft_failures() -> None:
    window = window_of([0] * 6 + [SOFT] * 4)
    assert window.success_rate(0.25) == pytest.approx(0.9)
    assert window.smoothed_success(0.25) == pytest.approx(1 - 1 / 11)
    assert Window(50, 5).success_rate(0.25) == 1.0


def test_burst_trips_in_a_clean_pool() -> None:
    tripped = trip(window_of([0] * 20 + [FAIL, 0, FAIL, FAIL]), CFG)
    assert tripped is not None
    assert not tripped.sustained
    assert "3 failures in the last 5" in tripped.reason
    assert trip(window_of([0] * 20 + [FAIL, 0, FAIL, 0]), CFG) is None


def test_burst_needs_more_where_failures_are_common() -> None:
    codes = [0] * 20 + [FAIL, 0, FAIL, FAIL]
    assert trip(window_of(codes), CFG, noise=0.0) is not None
    assert trip(window_of(codes), CFG, noise=0.05) is None
    assert trip(window_of([0] * 20 + [FAIL] * 5), CFG, noise=0.05) is not None
    # everyone fails 15% of the time: five in a row is no longer news
    assert trip(window_of([0] * 45 + [FAIL] * 5), CFG, noise=0.15) is None


def test_sustained_rate_trips_after_min_outcomes() -> None:
    assert trip(window_of([FAIL, 0, 0] * 2 + [0, FAIL, 0]), CFG) is None  # only 9 outcomes
    tripped = trip(window_of([FAIL, 0, 0, 0] * 4), CFG)
    assert tripped is None  # 75% success
    tripped = trip(window_of([FAIL, 0, 0] * 5), CFG)
    assert tripped is not None
    assert tripped.sustained


def test_captcha_threshold_is_more_sensitive() -> None:
    codes = ([FAIL | CAPTCHA] + [0] * 4) * 4  # 80% success, 20% captcha
    window = window_of(codes)
    assert window.success_rate(0.25) >= CFG.quarantine_below
    tripped = trip(window, CFG)
    assert tripped is not None
    assert "captcha" in tripped.reason


def test_degrade_and_hysteresis() -> None:
    window = window_of([FAIL] * 6 + [0] * 44)  # 88% success
    assert degrade_reason(window, CFG) is not None
    assert not recovered(window, CFG)
    window.push(0)  # a failure leaves the window: 90%
    # back at the degrade bar, but under the recovery bar: a degraded proxy stays degraded
    assert degrade_reason(window, CFG) is None
    assert not recovered(window, CFG)
    for _ in range(3):
        window.push(0)  # 96%
    assert recovered(window, CFG)


def test_backoff_doubles_caps_and_jitters() -> None:
    lengths = [backoff(level, CFG, 0.5) for level in range(8)]
    assert lengths == [60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 3600.0, 3600.0]
    rng = random.Random(3)
    jittered = [backoff(2, CFG, rng.random()) for _ in range(100)]
    assert min(jittered) >= 240.0 * (1 - CFG.backoff_jitter)
    assert max(jittered) <= 240.0 * (1 + CFG.backoff_jitter)
    assert min(jittered) < 240.0 < max(jittered)  # jitter both ways: the mean stays on the step
    assert len(set(jittered)) == 100  # benched together, back apart
    assert backoff(60, CFG, 1.0) <= CFG.backoff_max * (1 + CFG.backoff_jitter)


def test_ramp_is_slow_start() -> None:
    assert ramp(0, CFG) == pytest.approx(CFG.ramp_start)
    steps = [ramp(k, CFG) for k in range(CFG.ramp_requests + 5)]
    assert steps == sorted(steps)
    assert steps[CFG.ramp_requests] == 1.0


def test_weight_factors() -> None:
    assert success_factor(1.0, CFG) == 1.0
    assert success_factor(0.0, CFG) == CFG.min_weight  # less traffic, not none
    assert success_factor(0.5, CFG) == pytest.approx(0.125)
    assert latency_factor(0.2, 0.4, CFG) == 1.0
    assert latency_factor(1.6, 0.4, CFG) == pytest.approx(0.5)
    assert latency_factor(100.0, 0.4, CFG) == CFG.latency_weight_floor


def test_chance_is_a_binomial_tail() -> None:
    assert chance(5, 3, 0.0) == 0.0
    assert chance(5, 0, 0.3) == 1.0
    assert chance(5, 5, 0.5) == pytest.approx(1 / 32)
    assert chance(5, 3, 0.01) == pytest.approx(9.85e-6, rel=0.01)


def test_percentile() -> None:
    values = sorted(float(v) for v in range(1, 101))
    assert percentile(values, 0.5) in (50.0, 51.0)
    assert percentile(values, 0.95) in (95.0, 96.0)
    assert percentile([], 0.5) is None


def test_a_red_cell_failed_twice_in_a_row_or_is_under_the_quarantine_bar() -> None:
    assert not red(window_of([]), CFG)
    assert red(window_of([FAIL | CAPTCHA]), CFG)  # one captcha in one
    assert not red(window_of([0] * 19 + [FAIL]), CFG)  # one failure in a green record: noise
    assert red(window_of([0] * 18 + [FAIL] * 2), CFG)  # twice in a row
    assert not red(window_of([0] * 5 + [FAIL, 0, FAIL, 0, FAIL, 0]), CFG)  # 73%, never twice
    assert red(window_of([0] * 5 + [FAIL, 0, FAIL, 0, FAIL, 0, FAIL]), CFG)  # 67%
    assert red(window_of([0] * 7 + [FAIL | CAPTCHA, 0, FAIL | CAPTCHA]), CFG)  # captchas 20%...
    assert not red(window_of([0] * 8 + [FAIL | CAPTCHA, 0, FAIL | CAPTCHA]), CFG)  # ...18%
    assert not red(window_of([SOFT] * 10), CFG)  # rate limits are soft
