from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from scrapy import Request, Spider
from scrapy.http import Response
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from urlcheck.backoff import BackoffConfig, HostBackoff, parse_retry_after
from urlcheck.config import ConfigError
from urlcheck.middlewares.backoff import HostBackoffMiddleware


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("attempt", "retry_after", "expected"),
    [
        (1, None, 30),
        (2, None, 60),
        (3, None, 120),
        (4, None, 240),
        (5, None, 300),
        (9, None, 300),
        (1, 45, 45),
        (2, 10, 60),
        (1, 3600, 300),
        (1, 0, 30),
    ],
)
def test_schedule_doubles_honours_retry_after_and_caps(attempt, retry_after, expected):
    assert BackoffConfig().wait(attempt, retry_after) == expected


def test_retry_after_both_forms():
    now = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after(b"120") == 120
    assert parse_retry_after(" 7 ") == 7
    date = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert parse_retry_after(date.encode(), now=now.timestamp()) == pytest.approx(90)
    past = format_datetime(now - timedelta(seconds=90), usegmt=True)
    assert parse_retry_after(past, now=now.timestamp()) == 0
    for bad in (None, b"", b"soon", b"-5", b"1.5", b"Wed, 99 Foo 2026"):
        assert parse_retry_after(bad) is None


def test_pause_is_per_host_and_expires_with_the_clock():
    clock = FakeClock()
    backoff = HostBackoff(BackoffConfig(), clock)
    assert backoff.pause("a.test", attempt=1) == 30
    assert backoff.is_paused("a.test") and not backoff.is_paused("b.test")
    clock.now += 29.9
    [paused] = backoff.paused()
    assert (paused.host, paused.attempt) == ("a.test", 1)
    assert paused.seconds_left == pytest.approx(0.1)
    clock.now += 0.1
    assert not backoff.is_paused("a.test") and backoff.paused() == []


def test_a_shorter_pause_never_cuts_a_longer_one():
    clock = FakeClock()
    backoff = HostBackoff(BackoffConfig(), clock)
    backoff.pause("a.test", attempt=3)  # 120 s
    backoff.pause("a.test", attempt=1)  # 30 s
    assert backoff.paused_until("a.test") == clock.now + 120


def test_bad_settings_name_the_setting():
    with pytest.raises(ConfigError, match=r"URLCHECK_BACKOFF_BASE.*'soon'"):
        BackoffConfig.from_settings(Settings({"URLCHECK_BACKOFF_BASE": "soon"}))
    with pytest.raises(ConfigError, match=r"URLCHECK_BACKOFF_RETRIES.*>= 0"):
        BackoffConfig.from_settings(Settings({"URLCHECK_BACKOFF_RETRIES": -1}))
    config = BackoffConfig.from_settings(Settings({"URLCHECK_BACKOFF_HTTP_CODES": "429, 503,520"}))
    assert config.http_codes == (429, 503, 520)


def _middleware(**settings):
    crawler = get_crawler(Spider, {"URLCHECK_BACKOFF_BASE": 30, **settings})
    crawler.spider = crawler._create_spider("test")
    middleware = HostBackoffMiddleware.from_crawler(crawler)
    middleware.backoff.clock = FakeClock()
    return crawler, middleware


def test_middleware_pauses_the_host_and_retries_through_scrapy(caplog):
    crawler, middleware = _middleware()
    request = Request("http://a.test/x", meta={"download_slot": "a.test"}, priority=0)
    response = Response(request.url, status=429, headers={"Retry-After": "45"}, request=request)
    with caplog.at_level(logging.INFO):
        retry = middleware.process_response(request, response)
    assert isinstance(retry, Request) and retry.url == request.url
    assert retry.meta["retry_times"] == 1 and retry.priority == 1 and retry.dont_filter
    assert retry.meta["urlcheck_retry_after"] == 45
    assert middleware.backoff.paused()[0].seconds_left == 45
    assert crawler.stats.get_value("urlcheck/backoff/pauses") == 1
    assert crawler.stats.get_value("urlcheck/backoff/reason_count/backoff_429") == 1
    assert "Host a.test answered 429" in caplog.text and "pausing that host 45 s" in caplog.text


def test_middleware_gives_the_response_back_after_the_last_retry():
    _, middleware = _middleware()
    request = Request("http://a.test/x", meta={"download_slot": "a.test", "retry_times": 3})
    response = Response(request.url, status=503, request=request)
    assert middleware.process_response(request, response) is response
    assert middleware.backoff.paused() == []


def test_middleware_ignores_other_statuses():
    _, middleware = _middleware()
    request = Request("http://a.test/x")
    for status in (200, 301, 404, 500):
        response = Response(request.url, status=status, request=request)
        assert middleware.process_response(request, response) is response


def test_paused_hosts_are_reported_with_attempt_and_time_left(caplog):
    _, middleware = _middleware()
    clock = middleware.backoff.clock
    middleware.backoff.pause("slow.test", attempt=2)  # 60 s
    clock.now += 20
    with caplog.at_level(logging.INFO, logger="urlcheck.middlewares.backoff"):
        middleware._report_paused()
    assert caplog.messages == ["Host slow.test is backing off (attempt 2 of 4): 40 s left"]
    clock.now += 40
    caplog.clear()
    middleware._report_paused()
    assert caplog.messages == []
