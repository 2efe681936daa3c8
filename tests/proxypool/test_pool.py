import json
import logging
from collections import Counter

import pytest

from urlcheck.proxypool import (
    ErrorKind,
    ManualClock,
    MemoryStore,
    NoProxyAvailableError,
    Outcome,
    PoolConfig,
    Proxy,
    ProxyPool,
    State,
    store_from_uri,
)
from urlcheck.proxypool.store.redis import RedisStore

from .sim import CONTROL_URLS, OK, TIMEOUT, clock_of, make_pool, new_pool, proxy_urls

pytestmark = pytest.mark.usefixtures("pool_store")


def states(pool: ProxyPool) -> dict[str, str]:
    return {p["id"]: p["state"] for p in pool.snapshot()["proxies"]}


def test_acquire_and_release() -> None:
    pool = make_pool(3)
    lease = pool.acquire("example.com")
    assert lease.site == "example.com"
    assert lease.key is None
    assert not lease.session_lost
    assert not lease.fallback
    assert lease.proxy in pool.proxies
    snapshot = pool.snapshot()
    assert snapshot["totals"]["leases_active"] == 1
    assert sum(p["active"] for p in snapshot["proxies"]) == 1
    pool.release(lease, OK)
    snapshot = pool.snapshot()
    assert snapshot["totals"]["leases_active"] == 0
    assert snapshot["totals"]["outcomes_total"] == 1
    assert snapshot["matrix"]["example.com"][lease.proxy.id]["outcomes"] == 1


def test_a_release_without_outcome_ends_the_lease_and_judges_nothing() -> None:
    # The request never reached the proxy (our address guard refused it): the lease is freed
    # for the cap, but no outcome counts for the proxy, the site or the pair.
    pool = make_pool(1)
    for _ in range(20):
        pool.release(pool.acquire("169.254.169.254"), None)
    lease = pool.acquire("example.com")
    pool.release(lease, OK)
    snapshot = pool.snapshot()
    assert snapshot["totals"]["leases_active"] == 0
    assert snapshot["totals"]["outcomes_total"] == 1
    [proxy] = snapshot["proxies"]
    assert (proxy["state"], proxy["outcomes"], proxy["success_rate"]) == ("healthy", 1, 1.0)
    assert snapshot["matrix"].get("169.254.169.254", {}) == {}
    assert snapshot["sites"].get("169.254.169.254", {"outcomes": 0})["outcomes"] == 0


def test_release_twice_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    pool = make_pool(2)
    lease = pool.acquire("a")
    pool.release(lease, OK)
    with caplog.at_level(logging.WARNING, logger="urlcheck.proxypool"):
        pool.release(lease, TIMEOUT)
    assert pool.snapshot()["totals"]["outcomes_total"] == 1
    assert [r.getMessage() for r in caplog.records] == [
        f"lease {lease.id} on {lease.proxy.id} released twice; ignored"
    ]


def test_empty_pool_raises() -> None:
    pool = new_pool(clock=ManualClock())
    with pytest.raises(NoProxyAvailableError, match="no proxy in the pool"):
        pool.acquire("a")


def test_cap_then_fallback_or_fail_closed() -> None:
    hard = new_pool(["http://h1:1 max_concurrent=1"], clock=ManualClock())
    first_hard = hard.acquire("a")
    with pytest.raises(NoProxyAvailableError, match="every proxy is at its lease cap"):
        hard.acquire("a")  # the cap is hard by default
    hard.release(first_hard, OK)  # a shared store would count it against the next pool
    soft = PoolConfig(hard_lease_cap=False)
    open_pool = new_pool(["http://h1:1 max_concurrent=1"], soft, clock=ManualClock())
    first = open_pool.acquire("a")
    second = open_pool.acquire("a")  # nothing eligible: the least bad one
    assert not first.fallback
    assert second.fallback
    assert second.proxy == first.proxy
    open_pool.release(first, OK)
    open_pool.release(second, OK)  # a shared store would count them against the next pool
    closed = new_pool(
        ["http://h1:1 max_concurrent=1"], PoolConfig(fail_closed=True), clock=ManualClock()
    )
    closed.acquire("a")
    with pytest.raises(NoProxyAvailableError, match="no eligible proxy for a"):
        closed.acquire("a")


def test_per_proxy_cap_spreads_load() -> None:
    pool = new_pool(proxy_urls(4), PoolConfig(max_concurrent=2), clock=ManualClock(), seed=3)
    leases = [pool.acquire("a") for _ in range(8)]
    assert Counter(lease.proxy.id for lease in leases) == {p.id: 2 for p in pool.proxies}
    assert not any(lease.fallback for lease in leases)
    with pytest.raises(NoProxyAvailableError, match="lease cap"):
        pool.acquire("a")


@pytest.mark.parametrize("strategy", ["weighted", "round_robin", "least_connections"])
def test_every_strategy_uses_every_proxy(strategy: str) -> None:
    pool = new_pool(proxy_urls(5), PoolConfig(strategy=strategy), clock=ManualClock(), seed=1)
    used: Counter[str] = Counter()
    for _ in range(500):
        lease = pool.acquire("a")
        used[lease.proxy.id] += 1
        pool.release(lease, OK)
    assert len(used) == 5
    assert min(used.values()) > 50


def test_round_robin_order() -> None:
    pool = new_pool(proxy_urls(3), PoolConfig(strategy="round_robin"), clock=ManualClock())
    ids = [pool.acquire("a").proxy.id for _ in range(6)]
    assert ids == [p.id for p in pool.proxies] * 2


def test_least_connections_prefers_idle() -> None:
    pool = new_pool(proxy_urls(3), PoolConfig(strategy="least_connections"), clock=ManualClock())
    held = [pool.acquire("a") for _ in range(3)]
    assert len({lease.proxy.id for lease in held}) == 3
    pool.release(held[1], OK)
    assert pool.acquire("a").proxy.id == held[1].proxy.id


def test_add_and_remove_at_run_time(caplog: pytest.LogCaptureFixture) -> None:
    pool = make_pool(2)
    with caplog.at_level(logging.INFO, logger="urlcheck.proxypool"):
        added = pool.add("http://10.9.9.9:3128 weight=3 tags=de")
        assert added.id in {p.id for p in pool.proxies}
        assert pool.remove(added.id)
        assert not pool.remove(added.id)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["proxy 10.9.9.9:3128 added", "proxy 10.9.9.9:3128 removed"]
    assert len(pool.proxies) == 2
    assert pool.get(added.id) is None


def test_readding_updates_spec_and_keeps_health() -> None:
    pool = make_pool(4)
    target = pool.proxies[0]
    clock = clock_of(pool)
    for _ in range(40):
        lease = pool.acquire("a")
        pool.release(lease, TIMEOUT if lease.proxy == target else OK)
        clock.advance(0.1)
    before = {p["id"]: p for p in pool.snapshot()["proxies"]}[target.id]
    pool.add(Proxy.from_url(target.url, weight=5.0))
    after = {p["id"]: p for p in pool.snapshot()["proxies"]}[target.id]
    assert after["static_weight"] == 5.0
    assert after["state"] == before["state"]
    assert after["outcomes"] == before["outcomes"]


def test_proxy_auth_failure_kills_at_once(caplog: pytest.LogCaptureFixture) -> None:
    pool = make_pool(5)
    with caplog.at_level(logging.INFO, logger="urlcheck.proxypool"):
        lease = pool.acquire("a")
        pool.release(lease, Outcome(status=407, latency=0.1))
    assert states(pool)[lease.proxy.id] == State.DEAD
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        f"proxy {lease.proxy.id}: healthy -> dead (proxy authentication failed (407))"
    ]


def test_transitions_are_logged_once_with_reason(caplog: pytest.LogCaptureFixture) -> None:
    pool = make_pool(10)
    target = pool.proxies[0]
    clock = clock_of(pool)
    with caplog.at_level(logging.INFO, logger="urlcheck.proxypool"):
        for _ in range(400):
            lease = pool.acquire("a")
            pool.release(lease, TIMEOUT if lease.proxy == target else OK)
            clock.advance(0.05)
    mine = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"proxy {target}")]
    quarantined = [m for m in mine if "-> quarantined" in m]
    assert len(quarantined) == 1
    assert "back-off" in quarantined[0]
    assert "failures in the last 5" in quarantined[0] or "success" in quarantined[0]
    # nobody else moved
    others = [
        r.getMessage()
        for r in caplog.records
        if "->" in r.getMessage() and not r.getMessage().startswith(f"proxy {target}")
    ]
    assert others == []


def test_snapshot_is_json_and_complete() -> None:
    pool = make_pool(3)
    clock = clock_of(pool)
    for index in range(30):
        lease = pool.acquire("a" if index % 2 else "b")
        pool.release(lease, Outcome(status=200, latency=0.1 + index / 100))
        clock.advance(1.0)
    snapshot = pool.snapshot()
    again = json.loads(json.dumps(snapshot))
    assert again == snapshot
    totals = snapshot["totals"]
    assert totals["proxies"] == 3
    assert totals["states"]["healthy"] == 3
    assert totals["in_service"] == 3
    assert totals["quarantine_cap"] == 1  # one of three may go: min_in_service keeps two
    assert totals["success_rate"] == 1.0
    assert totals["throughput"] == pytest.approx(30 / 60)
    proxy = snapshot["proxies"][0]
    assert proxy["latency_p50"] is not None
    assert proxy["latency_p95"] is not None
    assert proxy["latency_p95"] >= proxy["latency_p50"]
    assert proxy["success_rate"] == 1.0
    assert set(snapshot["matrix"]) == {"a", "b"}
    assert set(snapshot["sites"]) == {"a", "b"}


def test_due_probes_without_control_urls_is_empty() -> None:
    pool = make_pool(3)
    clock_of(pool).advance(3600)
    assert pool.due_probes() == []


def test_idle_proxies_are_probed_a_few_at_a_time() -> None:
    config = PoolConfig(control_urls=CONTROL_URLS, probe_batch=3)
    pool = new_pool(proxy_urls(8), config, clock=ManualClock(), seed=5)
    clock = clock_of(pool)
    clock.advance(29.0)
    assert pool.due_probes() == []  # nobody idle for 30 s yet
    clock.advance(32.0)
    first = pool.due_probes()
    assert len(first) == 3  # never all at once
    assert {t.control_url for t in first} <= set(CONTROL_URLS)
    second = pool.due_probes()
    assert len(second) == 3
    assert not {t.proxy.id for t in first} & {t.proxy.id for t in second}  # in flight
    for task in first + second:
        pool.report_probe(task.proxy.id, task.control_url, True, 0.1)
    rest = pool.due_probes()
    assert len(rest) == 2
    assert pool.due_probes() == []
    pool.report_probe("nobody:1", CONTROL_URLS[0], False)  # unknown proxy: ignored


def test_unreported_probe_is_reissued_after_timeout() -> None:
    config = PoolConfig(control_urls=CONTROL_URLS, probe_batch=1)
    pool = new_pool(proxy_urls(1), config, clock=ManualClock())
    clock_of(pool).advance(61)
    (task,) = pool.due_probes()
    assert pool.due_probes() == []
    clock_of(pool).advance(config.probe_timeout + 1)
    (again,) = pool.due_probes()
    assert again.proxy == task.proxy


def test_store_from_uri() -> None:
    assert isinstance(store_from_uri("memory://"), MemoryStore)
    redis_store = store_from_uri("redis://127.0.0.1:6379/0", "a-name")
    assert isinstance(redis_store, RedisStore)
    assert redis_store.name == "a-name"
    assert redis_store.server_time
    redis_store.close()
    with pytest.raises(ValueError, match="unknown store"):
        store_from_uri("sqlite:///x")


def test_error_kinds_reach_the_matrix() -> None:
    pool = make_pool(2)
    lease = pool.acquire("a")
    pool.release(lease, Outcome(error=ErrorKind.TLS, latency=1.0))
    cell = pool.snapshot()["matrix"]["a"][lease.proxy.id]
    assert cell["outcomes"] == 1
    assert cell["success_rate"] == 0.0


def test_end_session_starts_a_new_session_on_the_next_acquire():
    from urlcheck.proxypool import ManualClock, Outcome

    pool = new_pool([f"http://127.0.0.{i}:3128" for i in range(20, 30)], clock=ManualClock(0.0))
    first = pool.acquire("a.test", key="visitor")
    pool.release(first, Outcome(status=200, latency=0.1))
    again = pool.acquire("a.test", key="visitor")
    assert again.proxy.id == first.proxy.id
    pool.release(again, Outcome(status=200, latency=0.1))
    assert pool.end_session("visitor") is True
    assert pool.end_session("visitor") is False
    fresh = pool.acquire("a.test", key="visitor")
    assert not fresh.session_lost
    pool.release(fresh, Outcome(status=200, latency=0.1))


def test_early_failures_are_judged_once_the_window_is_full():
    # Both captchas come before the 10th outcome (min_outcomes), then only successes: the
    # success that fills the window is the first moment the rates may be judged.
    from urlcheck.proxypool import ManualClock, Outcome

    clock = ManualClock(0.0)
    pool = new_pool([f"http://127.0.0.{i}:3128" for i in range(20, 25)], clock=clock, seed=1)
    target = pool.proxies[0].id
    outcomes = [Outcome(status=200, latency=0.1, captcha="recaptcha")] * 2
    outcomes += [Outcome(status=200, latency=0.1)] * 8
    for outcome in outcomes:
        while (lease := pool.acquire("a.test")).proxy.id != target:
            pool.release(lease, Outcome(status=200, latency=0.1))
            clock.advance(0.01)
        pool.release(lease, outcome)
        clock.advance(0.01)
    state = {p["id"]: p["state"] for p in pool.snapshot()["proxies"]}[target]
    assert state == "degraded"


def _serve(pool: ProxyPool, target: str, site: str, outcome: Outcome) -> bool:
    """Release `outcome` for the next lease of `target` on `site`, the others' leases OK.
    False when `target` is not leased for `site` (benched there, or out of service)."""
    clock = clock_of(pool)
    for _ in range(200):
        lease = pool.acquire(site)
        clock.advance(0.05)
        if lease.proxy.id == target:
            pool.release(lease, outcome)
            return True
        pool.release(lease, OK)
    return False


def _info(pool: ProxyPool, target: str) -> dict[str, object]:
    return {p["id"]: dict(p) for p in pool.snapshot()["proxies"]}[target]


CAPTCHA = Outcome(status=200, captcha="recaptcha", latency=0.1)


def test_a_red_cell_in_a_green_row_counts_for_the_pair_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = make_pool(5, seed=3)
    target = pool.proxies[0].id
    for _ in range(20):
        assert _serve(pool, target, "b", OK)
    with caplog.at_level(logging.INFO, logger="urlcheck.proxypool"):
        captchas = 0
        while _serve(pool, target, "a", CAPTCHA):  # site a blocks it: until benched there
            captchas += 1
            assert _serve(pool, target, "b", OK)
            assert captchas < 10
    assert captchas == 3  # three in a row: benched for a
    snapshot = pool.snapshot()
    cell = snapshot["matrix"]["a"][target]
    assert cell["benched_until"] is not None
    assert cell["success_rate"] == 0.0
    info = _info(pool, target)
    # the proxy itself is untouched: no failure, no captcha, full weight, still healthy
    assert (info["state"], info["success_rate"], info["captcha_rate"]) == ("healthy", 1.0, 0.0)
    assert info["weight"] == pytest.approx(1.0, abs=0.01)
    assert [r.getMessage() for r in caplog.records if "->" in r.getMessage()] == []
    assert _serve(pool, target, "b", OK)  # and it keeps serving b


def test_a_cell_turning_red_counts_from_its_second_failure() -> None:
    # Site a worked through the proxy, then starts blocking it: the first captcha is one error
    # in a green record (it counts, as noise would); from the second one the cell is red.
    pool = make_pool(5, seed=3)
    target = pool.proxies[0].id
    for _ in range(10):
        for site in ("a", "b"):
            assert _serve(pool, target, site, OK)
    captchas = 0
    while _serve(pool, target, "a", CAPTCHA):
        captchas += 1
        assert _serve(pool, target, "b", OK)
        assert captchas < 10
    assert captchas >= 3
    assert pool.snapshot()["matrix"]["a"][target]["benched_until"] is not None
    info = _info(pool, target)
    assert info["state"] == "healthy"
    assert isinstance(info["outcomes"], int)
    assert info["captcha_rate"] == pytest.approx(1 / info["outcomes"])


def test_failures_on_several_sites_count_against_the_proxy() -> None:
    pool = make_pool(5, seed=3)
    target = pool.proxies[0].id
    for _ in range(10):
        for site in ("a", "b", "c"):
            assert _serve(pool, target, site, OK)
    for _ in range(30):
        if _info(pool, target)["state"] == "quarantined":
            break
        for site in ("a", "b", "c"):
            _serve(pool, target, site, TIMEOUT)
    info = _info(pool, target)
    assert info["state"] == "quarantined"  # its row is red: the proxy's fault
    assert isinstance(info["success_rate"], float) and info["success_rate"] < 0.95


def test_certain_faults_on_one_site_count_against_the_proxy() -> None:
    pool = make_pool(5, seed=3)
    target = pool.proxies[0].id
    for _ in range(10):
        for site in ("a", "b"):
            assert _serve(pool, target, site, OK)
    unreachable = Outcome(error=ErrorKind.PROXY_UNREACHABLE, latency=1.0)
    assert _serve(pool, target, "a", unreachable)
    info = _info(pool, target)
    assert isinstance(info["success_rate"], float) and info["success_rate"] < 1.0


def test_with_one_site_in_sight_the_cell_is_the_row() -> None:
    pool = make_pool(5, seed=3)
    target = pool.proxies[0].id
    for _ in range(10):
        assert _serve(pool, target, "a", OK)
    assert _serve(pool, target, "a", CAPTCHA)
    info = _info(pool, target)
    assert isinstance(info["captcha_rate"], float) and info["captcha_rate"] > 0.0
