"""The pool as the proxy guide means it (issue 15): seeded scenarios on the public API.

Each test drives a real `ProxyPool` on a `ManualClock` through one behaviour the guide asks for:
proxy-only failures take a proxy out fast whatever the noise, probes work with the defaults, every
strategy honours the safeguards, small pools can bench, a site bench moves only that site of a
sticky session, the back-off climbs to an hour, and the smaller rules of point 7.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Callable

import pytest

from urlcheck.proxypool import (
    ErrorKind,
    Lease,
    LeaseCapReached,
    ManualClock,
    NoProxyAvailableError,
    Outcome,
    PoolConfig,
    PoolSnapshot,
    ProxyPool,
    SessionLost,
)

from . import sim
from .sim import AUTH, BLOCKED, CAPTCHA, CONTROL_URLS, OK, TIMEOUT, UNREACHABLE, proxy_urls

pytestmark = pytest.mark.usefixtures("pool_store")  # each scenario on every store

SITES = ["a.example", "b.example", "c.example"]
OUT = ("quarantined", "dead")
IN = ("healthy", "degraded", "probing")


def new_pool(count: int, config: PoolConfig | None = None, *, seed: int = 1) -> ProxyPool:
    return sim.new_pool(proxy_urls(count), config or PoolConfig(), seed=seed)


def clock(pool: ProxyPool) -> ManualClock:
    found = pool._clock
    assert isinstance(found, ManualClock)
    return found


def info(pool: ProxyPool, proxy_id: str) -> dict[str, object]:
    return next(dict(p) for p in pool.snapshot()["proxies"] if p["id"] == proxy_id)


def state(pool: ProxyPool, proxy_id: str) -> str:
    return str(info(pool, proxy_id)["state"])


Behaviour = Callable[[str, str, float, random.Random], Outcome]


def drive(
    pool: ProxyPool,
    behave: Behaviour,
    steps: int,
    *,
    rng: random.Random,
    sites: list[str] = SITES,
    interval: float = 0.05,
    key: Callable[[int], str | None] = lambda i: None,
    probe: Callable[[str, str], bool] | None = None,
) -> tuple[int, int]:
    """Acquire, answer, release, `steps` times; returns (requests, successes)."""
    ok = 0
    next_probe = clock(pool).now
    sent = 0
    for index in range(steps):
        site = sites[rng.randrange(len(sites))]
        try:
            lease = pool.acquire(site, key(index))
        except SessionLost:
            # the key's proxy left: its session ended (session_loss=end), nothing was sent
            clock(pool).advance(interval)
            continue
        outcome = behave(lease.proxy.id, site, clock(pool).now, rng)
        pool.release(lease, outcome)
        sent += 1
        ok += outcome.ok
        clock(pool).advance(interval)
        if probe is not None and clock(pool).now >= next_probe:
            next_probe = clock(pool).now + 1.0
            for task in pool.due_probes():
                pool.report_probe(task.proxy.id, task.control_url, probe(task.proxy.id, ""), 0.1)
    return sent, ok


def noise(rate: float) -> Behaviour:
    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        return TIMEOUT if rng.random() < rate else OK

    return behave


# ---------------------------------------------------------------- 1. noise hides dead proxies


@pytest.mark.parametrize("rate", [0.05, 0.10, 0.15])
@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(UNREACHABLE, id="refused"),
        pytest.param(AUTH, id="407"),
    ],
)
def test_proxy_only_failures_take_it_out_within_three_whatever_the_noise(
    rate: float, failure: Outcome
) -> None:
    pool = new_pool(10, seed=11)
    rng = random.Random(11)
    drive(pool, noise(rate), 3000, rng=rng)  # every proxy fails `rate` of the time, at random
    target = pool.proxies[3].id
    assert state(pool, target) in IN
    failures = 0
    for _ in range(20_000):
        lease = pool.acquire(SITES[rng.randrange(3)])
        if lease.proxy.id == target:
            # the proxy process died: every connection to it is refused
            pool.release(lease, failure)
            failures += 1
            if state(pool, target) in OUT:
                break
        else:
            pool.release(lease, TIMEOUT if rng.random() < rate else OK)
        clock(pool).advance(0.05)
    assert state(pool, target) in OUT
    assert failures <= 3


@pytest.mark.parametrize("rate", [0.05, 0.10, 0.15])
def test_noise_alone_quarantines_nobody(rate: float) -> None:
    # the other side of point 1: ambiguous failures keep their statistical test
    pool = new_pool(10, seed=12)
    drive(pool, noise(rate), 20_000, rng=random.Random(12))
    assert pool.snapshot()["totals"]["quarantines_total"] == 0


# ---------------------------------------------------------------- 2. probes on by default


def _kill_by_failed_cycles(
    pool: ProxyPool, target: str, rng: random.Random, *, probes: bool = False
) -> None:
    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        return UNREACHABLE if proxy_id == target else OK

    def probe(proxy_id: str, url: str) -> bool:
        return proxy_id != target

    for _ in range(400):
        drive(pool, behave, 200, rng=rng, interval=0.5, probe=probe if probes else None)
        if state(pool, target) == "dead":
            return
    raise AssertionError(f"never dead: {info(pool, target)}")


def test_dead_proxy_comes_back_with_the_defaults() -> None:
    # no control URL configured: a dead proxy must still be retried (hourly) and come back
    pool = new_pool(10, PoolConfig(dead_after_cycles=2), seed=21)
    rng = random.Random(21)
    target = pool.proxies[0].id
    _kill_by_failed_cycles(pool, target, rng)
    # the proxy works again; within two hours it must be back in service
    drive(pool, noise(0.0), 7200, rng=rng, interval=1.0)
    assert state(pool, target) in IN


def test_probe_targets_from_the_crawl_bring_a_dead_proxy_back() -> None:
    pool = new_pool(10, PoolConfig(dead_after_cycles=2), seed=22)
    rng = random.Random(22)
    target = pool.proxies[0].id
    assert pool.wants_probe_targets
    assert pool.add_probe_target("http://127.0.0.2/first-row")
    assert not pool.add_probe_target("http://127.0.0.2/first-row")  # known already
    _kill_by_failed_cycles(pool, target, rng, probes=True)
    # probed about hourly while dead, then revived by a passed probe
    probed: list[float] = []
    alive = False
    for _ in range(3 * 3600):
        for task in pool.due_probes():
            assert (task.control_url, task.method) == ("http://127.0.0.2/first-row", "HEAD")
            if task.proxy.id == target:
                probed.append(clock(pool).now)
            pool.report_probe(task.proxy.id, task.control_url, alive or task.proxy.id != target)
        clock(pool).advance(1.0)
        if len(probed) == 2:
            alive = True  # the proxy process is back
    gaps = [b - a for a, b in itertools.pairwise(probed)]
    assert gaps and all(1800 <= gap <= 5400 for gap in gaps[:1])
    assert state(pool, target) != "dead"


def test_dead_proxies_do_not_fill_the_quarantine_cap() -> None:
    pool = new_pool(10, seed=23)
    rng = random.Random(23)
    ids = [p.id for p in pool.proxies]
    for dead in ids[:5]:
        while True:
            lease = pool.acquire("a.example")
            pool.release(lease, AUTH if lease.proxy.id == dead else OK)
            if lease.proxy.id == dead:
                break
    assert [state(pool, p) for p in ids[:5]] == ["dead"] * 5
    target = ids[5]

    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        return UNREACHABLE if proxy_id == target else OK

    drive(pool, behave, 400, rng=rng)
    assert state(pool, target) == "quarantined"
    assert pool.snapshot()["totals"]["quarantine_cap_fill"] <= 1.0


# ---------------------------------------------------------------- 3. every strategy


STRATEGIES = ["weighted", "round_robin", "least_connections", "sticky"]


def _config(strategy: str, **extra: object) -> PoolConfig:
    name = "weighted" if strategy == "sticky" else strategy
    return PoolConfig(strategy=name, **extra)  # type: ignore[arg-type]


def _key(strategy: str) -> Callable[[int], str | None]:
    if strategy == "sticky":
        return lambda i: f"new-visitor-{i}"  # every acquire starts a new session
    return lambda i: None


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_half_open_ramp_holds_under_every_strategy(strategy: str) -> None:
    pool = new_pool(10, _config(strategy, control_urls=CONTROL_URLS), seed=31)
    rng = random.Random(31)
    target = pool.proxies[0].id

    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        return UNREACHABLE if proxy_id == target and not back["up"] else OK

    back = {"up": False}
    drive(pool, behave, 2000, rng=rng, key=_key(strategy))
    assert state(pool, target) == "quarantined"
    back["up"] = True
    while state(pool, target) != "probing":
        for task in pool.due_probes():
            pool.report_probe(task.proxy.id, task.control_url, True, 0.1)
        clock(pool).advance(1.0)
    picked = 0
    for index in range(100):
        lease = pool.acquire(SITES[rng.randrange(3)], _key(strategy)(10_000 + index))
        picked += lease.proxy.id == target
        pool.release(lease, OK)
        clock(pool).advance(0.05)
    # a fair share would be 10; the ramp starts at a tenth of it
    assert picked <= 4


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_failing_proxy_kept_in_service_by_the_cap_gets_little_traffic(strategy: str) -> None:
    # the cap lets one of ten out; the second failing proxy stays in service, degraded
    pool = new_pool(10, _config(strategy, quarantine_cap=0.1), seed=32)
    rng = random.Random(32)
    failing = {p.id for p in pool.proxies[:2]}

    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        return TIMEOUT if proxy_id in failing else OK

    drive(pool, behave, 2000, rng=rng, key=_key(strategy))
    requests, ok = drive(pool, behave, 6000, rng=rng, key=_key(strategy))
    assert ok / requests >= 0.98


# ---------------------------------------------------------------- 4. small pools


def test_three_proxies_bench_the_dead_one() -> None:
    pool = new_pool(3, seed=41)
    rng = random.Random(41)
    target = pool.proxies[1].id

    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        return UNREACHABLE if proxy_id == target else OK

    drive(pool, behave, 100, rng=rng)
    assert state(pool, target) == "quarantined"
    requests, ok = drive(pool, behave, 2000, rng=rng)
    assert ok / requests >= 0.98
    totals = pool.snapshot()["totals"]
    assert totals["in_service"] >= totals["min_in_service"] == 2


# ---------------------------------------------------------------- 5. sticky sessions


def test_site_bench_moves_only_that_sites_requests_of_a_session() -> None:
    pool = new_pool(10, PoolConfig(session_ttl=300.0, session_loss="move"), seed=51)
    rng = random.Random(51)
    home = pool.acquire("b.example", "account-17")
    pool.release(home, OK)
    mine = home.proxy.id

    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        return CAPTCHA if proxy_id == mine and site == "a.example" else OK

    moved: list[Lease] = []
    benched_at = None
    for step in range(4000):
        # background traffic, and the account browsing the three sites now and then
        key = "account-17" if step % 4 == 0 else None
        site = SITES[step // 4 % 3] if key else SITES[rng.randrange(3)]
        lease = pool.acquire(site, key)
        if key is not None:
            if site == "a.example" and lease.proxy.id != mine:
                moved.append(lease)
            else:
                assert lease.proxy.id == mine, (site, step)
                assert not lease.session_lost
        pool.release(lease, behave(lease.proxy.id, site, 0.0, rng))
        clock(pool).advance(0.5)
        benched = pool.snapshot()["matrix"]["a.example"][mine]["benched_until"]
        if benched is not None and benched_at is None:
            benched_at = clock(pool).now
    assert benched_at is not None
    assert moved  # site A moved to another proxy, and said so once
    assert moved[0].session_lost
    assert not any(lease.session_lost for lease in moved[1:])
    assert len({lease.proxy.id for lease in moved}) == 1
    # the account comes back after its session expired: the same IP everywhere, as before
    clock(pool).advance(pool.config.session_ttl + 3600)
    for site in SITES:
        lease = pool.acquire(site, "account-17")
        assert (lease.proxy.id, lease.session_lost) == (mine, False), site
        pool.release(lease, OK)


# ---------------------------------------------------------------- 6. back-off


def _backoffs_until_dead(pool: ProxyPool, target: str) -> list[float]:
    """Quarantine `target` (its probes always fail, others pass) and note each back-off."""
    lengths: list[float] = []
    seen = 0
    for _ in range(40 * 3600):
        now = clock(pool).now
        if not lengths or seen != info(pool, target)["quarantines"]:
            lease = pool.acquire("a.example")
            pool.release(lease, UNREACHABLE if lease.proxy.id == target else OK)
        proxy = info(pool, target)
        if proxy["state"] == "dead":
            return lengths
        if proxy["quarantines"] != seen and proxy["state"] == "quarantined":
            seen = int(proxy["quarantines"])  # type: ignore[call-overload]
            until = proxy["quarantined_until"]
            assert isinstance(until, float)
            lengths.append(until - now)
        for task in pool.due_probes():
            pool.report_probe(task.proxy.id, task.control_url, task.proxy.id != target, 0.1)
        proxy = info(pool, target)
        until = proxy["quarantined_until"]
        noted = proxy["quarantines"] == seen
        if noted and proxy["state"] == "quarantined" and isinstance(until, float) and until > now:
            clock(pool).advance(until - now)  # nothing of the target happens before its probe
        else:
            clock(pool).advance(1.0)
    raise AssertionError(f"not dead after 40 h: {lengths}")


def test_backoff_climbs_to_an_hour_with_jitter_both_ways() -> None:
    pool = new_pool(10, PoolConfig(control_urls=CONTROL_URLS), seed=61)
    lengths = _backoffs_until_dead(pool, pool.proxies[0].id)
    nominal = [min(60.0 * 2**i, 3600.0) for i in range(len(lengths))]
    assert all(0.75 * n <= got <= 1.25 * n for got, n in zip(lengths, nominal, strict=True))
    assert any(got > n for got, n in zip(lengths, nominal, strict=True))  # jitter both ways
    assert sum(1 for got in lengths if got >= 0.75 * 3600) >= 3  # hours at the cap first


def test_proxy_dns_failure_is_dead_at_once() -> None:
    pool = new_pool(10, seed=62)
    lease = pool.acquire("a.example")
    pool.release(lease, Outcome(error=ErrorKind("proxy_dns")))
    assert state(pool, lease.proxy.id) == "dead"


# ---------------------------------------------------------------- 7. smaller ones


def test_lease_cap_is_hard_and_the_fallback_is_visible(caplog: pytest.LogCaptureFixture) -> None:
    pool = new_pool(2, PoolConfig(max_concurrent=2), seed=71)
    held = [pool.acquire("a.example") for _ in range(4)]
    with pytest.raises(NoProxyAvailableError, match="cap"):
        pool.acquire("a.example")
    assert sorted(p["active"] for p in pool.snapshot()["proxies"]) == [2, 2]
    for lease in held:
        pool.release(lease, OK)
    # a fallback (nothing in service) is still lent, and said so
    small = new_pool(2, seed=72)
    drive(small, lambda *_: AUTH, 2, rng=random.Random(72))  # wrong credentials for both
    assert {state(small, p.id) for p in small.proxies} == {"dead"}
    with caplog.at_level(logging.WARNING, logger="urlcheck.proxypool"):
        lease = small.acquire("a.example")
    assert lease.fallback
    assert any("fallback" in r.getMessage() for r in caplog.records)


def test_a_fourfold_latency_rise_is_flagged() -> None:
    pool = new_pool(5, seed=72)
    target = pool.proxies[0].id
    slow = {"on": False}

    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        latency = 0.3 * rng.uniform(0.8, 1.2)
        if proxy_id == target and slow["on"]:
            latency *= 4
        return Outcome(status=200, latency=latency)

    rng = random.Random(72)
    drive(pool, behave, 1000, rng=rng)
    assert state(pool, target) == "healthy"
    slow["on"] = True
    drive(pool, behave, 300, rng=rng)
    proxy = info(pool, target)
    assert proxy["state"] == "degraded"
    transition = proxy["last_transition"]
    assert isinstance(transition, dict)
    assert "latency spike" in transition["reason"]


@pytest.mark.parametrize(
    ("proxies", "failure"), [(10, TIMEOUT), (5, UNREACHABLE)], ids=["timeout", "refused"]
)
def test_pool_wide_outage_is_ours_before_any_quarantine(proxies: int, failure: Outcome) -> None:
    sites = [f"site{i}.example" for i in range(10)]
    for seed in range(3):
        pool = new_pool(proxies, seed=seed)
        rng = random.Random(seed)
        drive(pool, noise(0.01), 2000, rng=rng, sites=sites)
        drive(pool, lambda *_: failure, 600, rng=rng, sites=sites)  # our uplink is down
        totals = pool.snapshot()["totals"]
        assert totals["our_side_fault"] is not None, seed
        assert totals["quarantines_total"] == 0, seed


def test_failing_proxy_blocked_by_the_cap_is_not_reported_probing() -> None:
    pool = new_pool(10, seed=74)
    rng = random.Random(74)
    failing = {p.id for p in pool.proxies[:4]}  # one more than the cap of 3

    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        return UNREACHABLE if proxy_id in failing else OK

    streak = dict.fromkeys(failing, 0)
    worst = 0

    def check(snapshot: PoolSnapshot) -> None:
        nonlocal worst
        for proxy in snapshot["proxies"]:
            if proxy["id"] in failing:
                streak[proxy["id"]] = streak[proxy["id"]] + 1 if proxy["state"] == "probing" else 0
                worst = max(worst, streak[proxy["id"]])

    for _ in range(300):
        drive(pool, behave, 60, rng=rng, interval=0.5)
        check(pool.snapshot())
    # probing (half-open) is a short test; failing all along, it must not last 5 minutes
    assert worst <= 10


def test_a_death_travels_with_its_next_probe_time() -> None:
    # two processes on one store: the one that did not see the 407 must not revive the dead
    # proxy at once (it used to take "dead" with no probe time, i.e. due now)
    clock = ManualClock()
    store = sim.STORE()
    first = ProxyPool(proxy_urls(5), store=store, clock=clock, seed=81)
    second = ProxyPool(store=store, clock=clock, seed=82)
    lease = first.acquire("a.example")
    first.release(lease, AUTH)
    dead = lease.proxy.id
    clock.advance(1.0)
    for _ in range(600):  # ten minutes of the second process's traffic, no probe target
        other = second.acquire("b.example")
        assert other.proxy.id != dead
        second.release(other, OK)
        clock.advance(1.0)
    assert state(second, dead) == "dead"
    clock.advance(2 * 3600)  # its hourly retry: back to half-open, real traffic decides
    second.release(second.acquire("b.example"), OK)
    assert state(second, dead) == "probing"


# ---------------------------------------------------------------- issue 26: the guide's cases


def _hard_site(rate: float, bad: Outcome, dead: str | None = None) -> Behaviour:
    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        if proxy_id == dead:
            return TIMEOUT
        return bad if site == "hard.example" and rng.random() < rate else OK

    return behave


def test_guide_case_1_a_dead_proxy_is_out_after_3_failures() -> None:
    """Case 1: one proxy fails on every site (a red row): out within "3 of the last 5"."""
    pool = new_pool(20, seed=61)
    dead = pool.proxies[7].id
    rng = random.Random(61)
    failures = 0
    for _ in range(2000):
        lease = pool.acquire(SITES[rng.randrange(3)])
        failed = lease.proxy.id == dead
        failures += failed
        pool.release(lease, TIMEOUT if failed else OK)
        clock(pool).advance(0.05)
        if state(pool, dead) == "quarantined":
            break
    assert state(pool, dead) == "quarantined"
    assert failures == 3


def test_guide_case_3_a_proxy_blocked_by_1_site_is_benched_there_only() -> None:
    """Case 3: a red cell in a green row: the pair is benched, the proxy keeps its state,
    its weight and its traffic everywhere else."""
    pool = new_pool(20, seed=63)
    target = pool.proxies[3].id
    rng = random.Random(63)

    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        return BLOCKED if (proxy_id, site) == (target, "a.example") else OK

    drive(pool, behave, 3000, rng=rng)
    snap = pool.snapshot()
    assert snap["matrix"]["a.example"][target]["benched_until"] is not None
    assert state(pool, target) == "healthy"
    assert snap["totals"]["quarantines_total"] == 0
    assert sim.benched_pairs(snap) == [("a.example", target)]
    assert snap["matrix"]["b.example"][target]["success_rate"] == 1.0


@pytest.mark.parametrize("bad", [TIMEOUT, CAPTCHA], ids=["timeouts", "captchas"])
@pytest.mark.parametrize("sites", [["hard.example"], ["hard.example", "a.example", "b.example"]])
@pytest.mark.parametrize("rate", [0.15, 0.30], ids=["15pct", "30pct"])
def test_guide_case_4_a_site_failing_for_every_proxy_blames_none(
    rate: float, sites: list[str], bad: Outcome
) -> None:
    """Case 4: failures correlated on one site, at 15% or 30% for every proxy (timeouts or
    captchas), are the site's: no proxy is quarantined, hardly any degraded or benched there
    (the issue measured 6 of 20 quarantined, all 20 degraded, 7.5-9.3 benched)."""
    pool = new_pool(20, seed=64)
    world = sim.Sim(pool, _hard_site(rate, bad), sites, seed=64)
    degraded_most = 0

    def check(snap: PoolSnapshot) -> None:
        nonlocal degraded_most
        degraded_most = max(degraded_most, snap["totals"]["states"]["degraded"])

    world.run(6000, check=check, check_every=50)
    snap = pool.snapshot()
    # (one quarantine, at most: a proxy whose captchas on a 30% site come in a long run)
    assert snap["totals"]["quarantines_total"] <= (1 if bad is CAPTCHA and rate > 0.2 else 0)
    assert degraded_most <= 3
    assert len(sim.benched_pairs(snap)) <= 2


@pytest.mark.parametrize("rate", [0.15, 0.30], ids=["15pct", "30pct"])
def test_guide_case_4_still_finds_a_dead_proxy_on_the_failing_site(rate: float) -> None:
    """The control: the site's rate excuses no proxy that does clearly worse there."""
    pool = new_pool(20, seed=65)
    dead = pool.proxies[5].id
    world = sim.Sim(pool, _hard_site(rate, TIMEOUT, dead), ["hard.example"], seed=65)
    world.run(3000)
    assert state(pool, dead) == "quarantined"
    assert world.per_proxy[dead] <= 12


@pytest.mark.parametrize("size", [3, 4, 5, 10, 20, 50])
def test_3_of_the_last_5_takes_a_failing_proxy_out_in_every_pool_size(size: int) -> None:
    """docs/proxypool.md: in a clean pool, "3 of the last 5" stands, whatever its size (its
    own failures do not raise the noise it is judged against). One site: with several, two
    failures in a row on one site of a proxy green elsewhere are a red cell, the pair's."""
    pool = new_pool(size, seed=size)
    target = pool.proxies[-1].id
    rng = random.Random(size)
    drive(pool, lambda *_: OK, 200, rng=rng, sites=SITES[:1])  # a history first
    failures = 0
    for _ in range(50 * size):
        lease = pool.acquire(SITES[0])
        failed = lease.proxy.id == target
        failures += failed
        pool.release(lease, TIMEOUT if failed else OK)
        clock(pool).advance(0.05)
        if state(pool, target) == "quarantined":
            break
    # quarantined at the third, or one failure later in a pool of three, where "our side first" may
    # not yet have seen enough of the other proxies' outcomes since the first failure
    assert failures <= (4 if size <= 3 else 3)
    assert state(pool, target) == "quarantined"


def test_a_single_control_url_that_breaks_benches_no_proxy() -> None:
    """With one control URL, its breaking is found (failures through 3 proxies since it last
    worked) before any idle proxy is benched for it (the issue: 3 of 10, the cap)."""
    config = PoolConfig(control_urls=(CONTROL_URLS[0],), probe_idle_min=5.0, probe_idle_max=10.0)
    pool = new_pool(10, config, seed=66)
    rng = random.Random(66)
    broken_at = 100.0
    drive(pool, lambda *_: OK, 200, rng=rng, probe=lambda *_: True)  # it works at first
    start = clock(pool).now
    for _ in range(600):  # idle: only probes
        clock(pool).advance(0.5)
        for task in pool.due_probes():
            works = clock(pool).now - start < broken_at
            pool.report_probe(task.proxy.id, task.control_url, works, 0.1)
    snap = pool.snapshot()
    assert snap["control_urls"][0]["broken"]
    assert snap["totals"]["quarantines_total"] == 0
    assert snap["totals"]["states"]["quarantined"] == 0


def test_a_change_of_site_is_no_latency_spike_but_a_slower_proxy_is() -> None:
    """Latency is judged against each proxy's own norm on each site: the URL list moving from a
    fast host to a slow one degrades nobody (the issue: all 5, for 2,330-2,780 requests),
    while one proxy four times slower on the same sites is degraded within a few requests."""
    pool = new_pool(5, seed=67)
    for index in range(3000):
        site, latency = ("fast.example", 0.2) if index < 1500 else ("slow.example", 1.5)
        lease = pool.acquire(site)
        pool.release(lease, Outcome(status=200, latency=latency))
        clock(pool).advance(0.05)
        assert pool.snapshot()["totals"]["states"]["degraded"] == 0 if index % 100 == 0 else True
    slow = pool.proxies[0].id
    seen_slow = 0
    for index in range(1000):
        lease = pool.acquire(("fast.example", "slow.example")[index % 2])
        late = lease.proxy.id == slow
        seen_slow += late
        base = 0.2 if lease.site == "fast.example" else 1.5
        pool.release(lease, Outcome(status=200, latency=base * (4 if late else 1)))
        clock(pool).advance(0.05)
        if state(pool, slow) == "degraded":
            break
    assert state(pool, slow) == "degraded"
    assert seen_slow <= 15


def test_a_sticky_session_waits_at_its_proxys_hard_cap() -> None:
    """Sticky sessions respect the lease cap: the key's next lease over its proxy's cap waits
    (LeaseCapReached) rather than exceed it (the issue: 16 leases on a proxy capped at 8); a new
    key goes elsewhere."""
    pool = new_pool(4, PoolConfig(max_concurrent=8), seed=68)
    held = [pool.acquire("a.example", "account-1") for _ in range(8)]
    home = held[0].proxy.id
    assert {lease.proxy.id for lease in held} == {home}
    with pytest.raises(LeaseCapReached, match="sticky session's proxy is at its lease cap"):
        pool.acquire("a.example", "account-1")
    other = [pool.acquire("a.example", f"account-{i}") for i in range(2, 20)]
    assert home not in {lease.proxy.id for lease in other}
    pool.release(held.pop(), OK)
    assert pool.acquire("a.example", "account-1").proxy.id == home  # its turn came
    active = {p["id"]: p["active"] for p in pool.snapshot()["proxies"]}
    assert all(n <= 8 for n in active.values())


def test_a_session_whose_proxy_left_ends_unless_told_to_move() -> None:
    pool = new_pool(5, seed=69)
    lease = pool.acquire("a.example", "account-9")
    pool.release(lease, OK)
    pool.remove(lease.proxy.id)
    with pytest.raises(SessionLost):
        pool.acquire("a.example", "account-9")
    fresh = pool.acquire("a.example", "account-9")  # a new session
    assert not fresh.session_lost and fresh.proxy.id != lease.proxy.id
    moving = new_pool(5, PoolConfig(session_loss="move"), seed=69)
    first = moving.acquire("a.example", "account-9")
    moving.release(first, OK)
    moving.remove(first.proxy.id)
    assert moving.acquire("a.example", "account-9").session_lost
