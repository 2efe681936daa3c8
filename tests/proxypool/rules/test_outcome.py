import pytest

from urlcheck.proxypool import ErrorKind, Outcome
from urlcheck.proxypool.rules.outcome import (
    BLOCK,
    CAPTCHA,
    FAIL,
    PERMANENT,
    PROXY_FAULT,
    SOFT,
    classify,
)


@pytest.mark.parametrize("status", [200, 301, 404, 410, 500, 403])
def test_site_answers_are_successes_for_the_proxy(status: int) -> None:
    outcome = Outcome(status=status, latency=0.2)
    assert classify(outcome) == 0
    assert outcome.ok


@pytest.mark.parametrize("status", [429, 503])
def test_rate_limits_are_soft(status: int) -> None:
    assert classify(Outcome(status=status)) == SOFT
    assert not Outcome(status=status).ok


def test_rate_limited_flag() -> None:
    assert classify(Outcome(status=200, rate_limited=True)) == SOFT


@pytest.mark.parametrize(
    "kind", [ErrorKind.CONNECT, ErrorKind.TIMEOUT, ErrorKind.TLS, ErrorKind.CONNECTION_LOST]
)
def test_ambiguous_errors_fail(kind: ErrorKind) -> None:
    assert classify(Outcome(error=kind)) == FAIL


def test_proxy_faults() -> None:
    assert classify(Outcome(error=ErrorKind.PROXY_UNREACHABLE)) == FAIL | PROXY_FAULT
    assert classify(Outcome(error=ErrorKind.PROXY_AUTH)) == FAIL | PROXY_FAULT | PERMANENT
    assert classify(Outcome(status=407)) == FAIL | PROXY_FAULT | PERMANENT


def test_captcha_and_block_kinds() -> None:
    assert classify(Outcome(status=200, captcha="recaptcha")) == FAIL | CAPTCHA
    assert classify(Outcome(status=403, block=True)) == FAIL | BLOCK
    # a captcha wins over a rate limit: it is a hard signal
    assert classify(Outcome(status=429, captcha=True)) == FAIL | CAPTCHA
