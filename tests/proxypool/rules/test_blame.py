from urlcheck.proxypool import PoolConfig
from urlcheck.proxypool.rules.blame import (
    Verdict,
    green_row,
    our_side_reason,
    outliers,
    pool_works_since,
    site_fault_reason,
    site_verdict,
)
from urlcheck.proxypool.rules.outcome import FAIL

CFG = PoolConfig()


def entries(rows: list[tuple[float, str, int]]) -> list[tuple[float, str, int]]:
    return rows


def test_peers_green_blames_the_proxy() -> None:
    rows = [(float(t), f"p{t % 5}", 0) for t in range(20)] + [(20.0, "bad", FAIL)]
    verdict = site_verdict(rows, "bad", start=18.0, end=20.0, own_success=0.4, cfg=CFG)
    assert verdict is Verdict.PROXY


def test_peers_failing_blames_the_site() -> None:
    rows = [(float(t), f"p{t % 5}", FAIL) for t in range(20)]
    verdict = site_verdict(rows, "p0", start=18.0, end=20.0, own_success=0.0, cfg=CFG)
    assert verdict is Verdict.SITE


def test_too_few_peers_is_unknown() -> None:
    rows = [(10.0, "p1", 0), (11.0, "me", FAIL)]
    verdict = site_verdict(rows, "me", start=11.0, end=11.0, own_success=0.0, cfg=CFG)
    assert verdict is Verdict.UNKNOWN


def test_same_stretch_of_time_only() -> None:
    # Peers were green a minute ago; since this proxy started failing they fail too.
    rows = [(float(t), "peer", 0) for t in range(30)]
    rows += [(100.0 + t, f"p{t}", FAIL) for t in range(4)]
    verdict = site_verdict(rows, "me", start=100.0, end=104.0, own_success=0.0, cfg=CFG)
    assert verdict is Verdict.SITE
    # Green history far in the past is out of reach altogether.
    old = [(float(t), "peer", 0) for t in range(30)]
    verdict = site_verdict(old, "me", start=500.0, end=501.0, own_success=0.0, cfg=CFG)
    assert verdict is Verdict.UNKNOWN


def test_outcomes_that_arrive_late_still_count() -> None:
    """Another process's successes come in a batch, after later outcomes (docs/proxypool.md):
    a scan that stopped at the first older time would miss the newer ones behind them."""
    own = [(100.0 + t, f"p{t % 3}", 0) for t in range(3)]  # peers green since the failures
    batch = [(90.0 + t / 10, f"q{t % 3}", FAIL) for t in range(5)]  # red before them, late
    rows = [*own, *batch]
    assert site_verdict(rows, "me", start=100.0, end=103.0, own_success=0.0, cfg=CFG) is (
        Verdict.PROXY
    )
    pool = [(at, who, code, "a.test") for at, who, code in rows]
    assert pool_works_since(pool, "me", 100.0, CFG) is True
    # before the failures began, only to make up a shortfall, newest first
    failing = [(95.0, "q0", FAIL), (96.0, "q1", FAIL), (100.0, "p0", 0), (90.0, "q2", 0)]
    assert site_verdict(failing, "me", start=100.0, end=100.0, own_success=0.0, cfg=CFG) is (
        Verdict.SITE
    )


def test_peers_must_be_clearly_better() -> None:
    rows = [(float(t), f"p{t % 4}", FAIL if t % 3 == 0 else 0) for t in range(12)]
    # peers at ~67%: a proxy at 60% is not clearly worse
    verdict = site_verdict(rows, "me", start=10.0, end=11.0, own_success=0.6, cfg=CFG)
    assert verdict is Verdict.SITE
    verdict = site_verdict(rows, "me", start=10.0, end=11.0, own_success=0.2, cfg=CFG)
    assert verdict is Verdict.PROXY


def test_site_fault_needs_most_proxies_failing() -> None:
    spread = [(float(t), f"p{t % 10}", FAIL if t % 5 else 0) for t in range(50)]
    fails = sum(code & FAIL for _, _, code in spread)
    reason = site_fault_reason(spread, fails, CFG)
    assert reason is not None
    assert "of 10 proxies fail here" in reason
    # the same failure count, concentrated on two proxies out of ten: not the site
    one = [(float(t), f"p{t % 10}", FAIL if t % 10 < 2 else 0) for t in range(50)]
    assert site_fault_reason(one, sum(c for _, _, c in one), CFG) is None


def test_our_side_needs_proxies_and_sites() -> None:
    everything = [(float(t), f"p{t % 10}", FAIL, f"s{t % 4}") for t in range(200)]
    assert our_side_reason(everything, 200, CFG) is not None
    one_site = [(float(t), f"p{t % 10}", FAIL, "s0") for t in range(200)]
    assert our_side_reason(one_site, 200, CFG) is None  # that is a site fault
    few_proxies = [
        (float(t), f"p{t % 10}", FAIL if t % 10 < 3 else 0, f"s{t % 4}") for t in range(200)
    ]
    assert our_side_reason(few_proxies, 60, CFG) is None


def test_envoy_outlier_rule() -> None:
    rates = [(f"p{i}", 0.98) for i in range(9)] + [("slow", 0.6)]
    found = outliers(rates, CFG)
    assert set(found) == {"slow"}
    assert outliers(rates[:4], CFG) == {}  # too few hosts
    # 30% at zero success: the bar drops below zero and nobody is an outlier
    bad_batch = [(f"g{i}", 1.0) for i in range(7)] + [(f"b{i}", 0.0) for i in range(3)]
    assert outliers(bad_batch, CFG) == {}
    # a tight, healthy pool does not call 95% an outlier next to 99%
    tight = [(f"p{i}", 0.99) for i in range(9)] + [("p9", 0.95)]
    assert outliers(tight, CFG) == {}


def test_green_row() -> None:
    ok = [("b", 0), ("c", 0)] * 20
    assert green_row(ok, "a", CFG)
    assert green_row([*ok, ("a", 1), ("a", 1)], "a", CFG)  # its failures on a itself
    # one failure elsewhere is one error; two among the last five outcomes are a red row
    assert green_row([*ok, ("b", 1), ("c", 0), ("a", 1)], "a", CFG)
    assert not green_row([*ok, ("b", 1), ("c", 0), ("c", 1)], "a", CFG)
    # failing elsewhere more than noise, however spread out: a red row
    spread = [("b", 0), ("c", 0), ("b", 0), ("c", 0), ("b", 0), ("c", 1)] * 8
    assert not green_row(spread, "a", CFG)
    assert green_row(spread[-12:] + ok, "a", CFG)  # two in 42 outcomes: noise
    # nothing elsewhere lately (a new proxy, a dead one): the cell is the whole row
    assert not green_row([("a", 0)] * 20, "a", CFG)
    assert not green_row([("a", 0), ("a", 1)], "a", CFG)
    assert not green_row([], "a", CFG)
    assert not green_row([("a", 0)] * 3 + [("b", 1)] * 3, "a", CFG)  # worked nowhere else
