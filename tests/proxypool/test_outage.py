import logging

import pytest

from urlcheck.proxypool import ManualClock
from urlcheck.proxypool.outage import Outage


def test_an_outage_is_logged_once_then_every_30s_and_measured(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock(0.0)
    outage = Outage(clock)
    assert outage.succeeded() is None
    caplog.set_level(logging.INFO, "urlcheck.proxypool.outage")
    for _ in range(65):  # a request retried every second
        outage.failed(ConnectionError("refused"))
        clock.advance(1.0)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3
    assert warnings[0].startswith("proxy store unreachable (refused)")
    assert "still unreachable after 30s" in warnings[1]
    assert "after 60s" in warnings[2]
    assert outage.down and outage.elapsed() == 65.0
    assert outage.succeeded() == 65.0
    assert not outage.down and outage.count == 1
    assert outage.succeeded() is None
