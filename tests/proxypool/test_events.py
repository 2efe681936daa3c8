"""The pool's events as log lines: one table of levels, fallback leases throttled, and the
death of a misconfigured proxy (a 407, its host name unknown) a warning where other changes are
news."""

from __future__ import annotations

import logging

import pytest

from urlcheck.proxypool import ManualClock, State
from urlcheck.proxypool.events import (
    ControlUrlChanged,
    Event,
    EventLog,
    FallbackLease,
    LeasesReclaimed,
    OurSideFault,
    PairBenched,
    SiteFault,
    Transition,
)

from .sim import AUTH, OK, TIMEOUT, clock_of, make_pool

POOL_LOGGER = "urlcheck.proxypool.pool"  # docs/proxypool.md, "Logging"


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == POOL_LOGGER]


@pytest.mark.parametrize(
    ("event", "level", "message"),
    [
        (
            Transition("p1", State.HEALTHY, State.QUARANTINED, "5 of 10 failed"),
            logging.INFO,
            "proxy p1: healthy -> quarantined (5 of 10 failed)",
        ),
        (
            Transition("p1", State.HEALTHY, State.DEAD, "auth (407)", misconfigured=True),
            logging.WARNING,
            "proxy p1: healthy -> dead (auth (407))",
        ),
        (
            PairBenched("p1", "a.example", 90.4, "red row"),
            logging.INFO,
            "proxy p1 benched for site a.example for 90s (red row)",
        ),
        (
            SiteFault("a.example", True, "every proxy fails"),
            logging.WARNING,
            "site a.example is at fault, no proxy is blamed for it: every proxy fails",
        ),
        (
            SiteFault("a.example", False, "a 200"),
            logging.INFO,
            "site a.example works again: a 200",
        ),
        (
            OurSideFault(True, "all down"),
            logging.ERROR,
            "ALERT: failures span all proxies and sites; the fault is on our side "
            "(network, probe targets). Quarantines are frozen: all down",
        ),
        (
            OurSideFault(False, "a probe passed"),
            logging.WARNING,
            "our side works again, quarantines resume: a probe passed",
        ),
        (
            LeasesReclaimed(3),
            logging.WARNING,
            "3 leases were never released and expired (a caller crashed or leaks)",
        ),
        (
            ControlUrlChanged("http://127.0.0.2/ok", True, "404 through 4 proxies"),
            logging.WARNING,
            "control URL http://127.0.0.2/ok looks broken (404 through 4 proxies); "
            "its failures count against no proxy",
        ),
        (
            ControlUrlChanged("http://127.0.0.2/ok", False, ""),
            logging.INFO,
            "control URL http://127.0.0.2/ok works again",
        ),
    ],
)
def test_each_event_is_one_line_at_its_level(
    event: Event, level: int, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, POOL_LOGGER)
    EventLog(ManualClock())(event)
    assert logged(caplog) == [(level, message)]


def test_fallback_leases_are_warned_of_once_a_minute_with_their_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, POOL_LOGGER)
    clock = ManualClock()
    log = EventLog(clock)
    lent = FallbackLease("p2", "a.example", State.QUARANTINED)
    log(lent)
    for _ in range(4):
        clock.advance(10.0)
        log(lent)
    clock.advance(20.0)  # a minute after the first warning
    log(lent)
    line = "no eligible proxy for site a.example: lent p2 (quarantined) as a fallback ({} since"
    messages = logged(caplog)
    assert [level for level, _ in messages] == [logging.WARNING, logging.WARNING]
    assert messages[0][1].startswith(line.format("1 fallback leases"))
    assert messages[1][1].startswith(line.format("5 fallback leases"))


@pytest.mark.usefixtures("pool_store")
def test_a_407_kills_its_proxy_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, POOL_LOGGER)
    pool = make_pool(3)
    lease = pool.acquire("a.example")
    pool.release(lease, AUTH)
    deaths = [(level, m) for level, m in logged(caplog) if "-> dead" in m]
    why = "proxy authentication failed (407)"
    assert deaths == [(logging.WARNING, f"proxy {lease.proxy.id}: healthy -> dead ({why})")]


@pytest.mark.usefixtures("pool_store")
def test_a_proxy_that_times_out_leaves_service_as_news_not_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, POOL_LOGGER)
    pool = make_pool(6)
    clock = clock_of(pool)
    bad = pool.proxies[0].id
    for _ in range(300):
        lease = pool.acquire("a.example")
        clock.advance(0.5)
        pool.release(lease, TIMEOUT if lease.proxy.id == bad else OK)
    moves = [(level, m) for level, m in logged(caplog) if m.startswith(f"proxy {bad}: ")]
    assert moves, "the failing proxy never left service"
    assert {level for level, _ in moves} == {logging.INFO}
