from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from scrapy import Request, Spider
from scrapy.http import Response
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from urlcheck.config.crawlconfig import ConfigError
from urlcheck.middlewares.backoff import HostBackoffMiddleware
from urlcheck.politeness.backoff import BackoffConfig, HostBackoff, parse_retry_after


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


# --- the per-host circuit ----------------------------------------------------------------

from urlcheck.middlewares.circuit import HostCircuitMiddleware  # noqa: E402
from urlcheck.politeness.circuit import HostCircuit, HostUnavailableError, Strike  # noqa: E402
from urlcheck.politeness.pace import HostPace  # noqa: E402


def test_circuit_opens_after_consecutive_exhausted_rows_with_the_evidence():
    circuit = HostCircuit(down_after=2, clock=FakeClock(1_700_000_000.0))
    assert circuit.exhausted("a.test", Strike(503, None, 120.0, 4)) is None
    assert circuit.unavailable("a.test") is None
    down = circuit.exhausted("a.test", Strike(503, None, 120.0, 4))
    assert down is not None and circuit.unavailable("a.test") is down
    assert down.message() == (
        "host a.test unavailable: 2 rows in a row answered 503 on all 4 tries, "
        "last Retry-After 120 s; not requested"
    )
    assert down.as_dict() == {
        "rows_tried": 2,
        "last_status": 503,
        "last_error": None,
        "retry_after": 120.0,
        "tries_per_row": 4,
        "since": "2023-11-14T22:13:20Z",
    }
    assert circuit.exhausted("a.test", Strike(503)) is None  # given up on once
    assert [d.host for d in circuit.hosts()] == ["a.test"]


def test_any_other_answer_resets_the_count_and_hosts_are_separate():
    circuit = HostCircuit(down_after=2)
    circuit.exhausted("a.test", Strike(None, "timeout", None, 3))
    circuit.answered("a.test")
    assert circuit.exhausted("a.test", Strike(None, "timeout", None, 3)) is None
    assert circuit.exhausted("b.test", Strike(429)) is None
    down = circuit.exhausted("a.test", Strike(None, "timeout", None, 3))
    assert down is not None and "failed (timeout) on all 3 tries" in down.message()
    assert circuit.unavailable("b.test") is None
    assert HostCircuit(down_after=0).exhausted("a.test", Strike(503)) is None  # off


def _circuit_middleware(**settings):
    crawler = get_crawler(Spider, settings)
    crawler.spider = crawler._create_spider("test")
    return crawler, HostCircuitMiddleware.from_crawler(crawler)


def test_circuit_middleware_counts_last_outcomes_and_fails_requests_of_a_down_host(caplog):
    from scrapy.exceptions import DownloadTimeoutError

    crawler, middleware = _circuit_middleware()
    backoff = middleware.backoff
    given_up = {"download_slot": "a.test", "retry_times": 3}
    for i in range(2):
        request = Request(f"http://a.test/{i}", meta=dict(given_up))
        request.meta["urlcheck_retry_after"] = 60.0
        assert middleware.process_request(request) is None
        response = Response(request.url, status=503, request=request)
        backoff.pause("a.test", attempt=4)
        with caplog.at_level(logging.WARNING):
            assert middleware.process_response(request, response) is response
    assert not backoff.is_paused("a.test")  # its queued requests go on to fail at once
    assert crawler.stats.get_value("urlcheck/hosts/unavailable") == 1
    [record] = [r for r in caplog.records if r.name == "urlcheck.middlewares.circuit"]
    assert "host a.test unavailable: 2 rows in a row answered 503 on all 4 tries" in record.message
    later = Request("http://a.test/later", meta={"download_slot": "a.test"})
    with pytest.raises(HostUnavailableError, match=r"a\.test unavailable") as raised:
        middleware.process_request(later)
    assert raised.value.unavailable.last.retry_after == 60.0
    assert later.meta["urlcheck_retry_after"] == 60.0
    # Its own refusal is not a network failure of the host; timeouts on the last try are.
    middleware.process_exception(later, raised.value)
    other = Request("http://b.test/", meta={"download_slot": "b.test"})
    middleware.process_exception(other, DownloadTimeoutError("slow"))
    assert middleware.circuit.unavailable("b.test") is None
    middleware.process_exception(other, DownloadTimeoutError("slow"))
    assert middleware.circuit.unavailable("b.test").last.error == "timeout"


def test_circuit_middleware_is_off_with_zero():
    from scrapy.exceptions import NotConfigured

    with pytest.raises(NotConfigured):
        _circuit_middleware(URLCHECK_HOST_DOWN_AFTER=0)


# --- the learned pace -----------------------------------------------------------------------------


def test_pace_doubles_on_429_and_honours_a_short_retry_after():
    pace = HostPace(floor=0.3, maximum=10, ease_after=3)
    assert pace.delay("a.test") == 0.3
    assert pace.too_fast("a.test") == 0.6
    assert pace.too_fast("a.test") == 1.2
    assert pace.too_fast("a.test", retry_after=5) == 5
    assert pace.too_fast("a.test", retry_after=3600) == 10  # an outage, not a pace: capped doubling
    assert pace.delay("b.test") == 0.3
    assert pace.learned()["a.test"].too_fast == 4 and "b.test" not in pace.learned()
    assert HostPace(floor=0.0).too_fast("c.test") == 0.3  # from DOWNLOAD_DELAY=0 too
    assert HostPace(enabled=False).too_fast("c.test") == 0.3


def test_pace_eases_halfway_to_the_last_too_fast_delay_and_settles():
    # A host that 429s anything closer than 1 s: the trace bench/politeness.py measures.
    pace = HostPace(floor=0.3, maximum=10, ease_after=20)
    limit, too_fast, trace = 1.0, 0, [pace.delay("h")]
    for _ in range(200):
        if pace.delay("h") < limit:
            too_fast += 1
            pace.too_fast("h")
        else:
            pace.answered("h")
        if trace[-1] != round(pace.delay("h"), 3):
            trace.append(round(pace.delay("h"), 3))
    assert trace == [0.3, 0.6, 1.2, 0.9, 1.2, 1.05]
    assert too_fast == 3


def test_pace_forgets_a_429_after_long_clean_runs_and_eases_to_the_floor():
    pace = HostPace(floor=0.3, maximum=10, ease_after=2)
    pace.too_fast("h")  # 0.6, bad 0.3
    for _ in range(2):
        pace.answered("h")
    assert pace.delay("h") == pytest.approx(0.45)  # halfway between 0.3 and 0.6
    for _ in range(2 * 30):
        pace.answered("h")
    assert pace.delay("h") == 0.3


def test_pace_resumes_where_an_earlier_run_left_it_and_eases_by_the_same_rule():
    pace = HostPace(floor=0.3, maximum=2.0, ease_after=2)
    pace.resume("h", 1.05, too_fast=3, bad=0.9, good=1.05, patience=1)
    assert pace.delay("h") == 1.05 and pace.learned()["h"].too_fast == 3
    for _ in range(2 * 8):  # converged: it stays put until FORGET_AFTER runs in all
        pace.answered("h")
    assert pace.delay("h") == 1.05
    pace.answered("h")
    pace.answered("h")  # the tenth converged run: the 429 is forgotten, it probes lower
    assert pace.delay("h") == pytest.approx(0.525)
    # Within this run's floor and maximum; a host that taught nothing is left alone.
    pace.resume("big", 60.0, too_fast=1, bad=30.0, good=60.0, patience=99)
    assert pace.delay("big") == 2.0 and pace.learned()["big"].state() == {
        "bad": 2.0,
        "good": 2.0,
        "patience": 9,
    }
    pace.resume("plain", 0.3)
    assert "plain" not in pace.learned()
    off = HostPace(enabled=False)
    off.resume("h", 1.05, too_fast=3)
    assert off.delay("h") == 0.3


def test_the_host_report_starts_a_jobs_hosts_from_its_hosts_json(tmp_path):
    import json

    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    from urlcheck.crawl.runtime import runtime
    from urlcheck.extensions.hostreport import HostReport

    hosts = {
        "a.test": {"delay": 1.2, "too_fast": 2, "pace": {"bad": 0.6, "good": 1.2, "patience": 0}},
        "b.test": {"delay": 0.3, "too_fast": 0, "unavailable": {"rows_tried": 2}},
        "c.test": {"delay": "fast", "too_fast": 1},  # a job file is not trusted
        "d.test": {"delay": float("inf"), "too_fast": 1},
        "e.test": {"delay": 0.9, "too_fast": 1, "pace": "?"},
        "f.test": ["not", "an", "entry"],
    }
    (tmp_path / "hosts.json").write_text(json.dumps({"hosts": hosts}))
    crawler = get_crawler(Spider, {"JOBDIR": str(tmp_path)})
    HostReport.from_crawler(crawler).spider_opened()
    pace = runtime(crawler).backoff.pace
    assert {h: (k.delay, k.too_fast, k.bad, k.good) for h, k in pace.learned().items()} == {
        "a.test": (1.2, 2, 0.6, 1.2),
        "e.test": (0.9, 1, None, None),
    }
    off = get_crawler(Spider, {"JOBDIR": str(tmp_path), "URLCHECK_HOST_PACE_ENABLED": False})
    HostReport.from_crawler(off).spider_opened()
    assert runtime(off).backoff.pace.learned() == {}


def test_middleware_learns_the_pace_from_429_only():
    crawler, middleware = _middleware(DOWNLOAD_DELAY=0.3)
    pace = middleware.backoff.pace
    request = Request("http://a.test/x", meta={"download_slot": "a.test"})
    middleware.process_response(request, Response(request.url, status=503, request=request))
    assert pace.delay("a.test") == pace.floor
    middleware.process_response(request, Response(request.url, status=429, request=request))
    assert pace.delay("a.test") == 2 * pace.floor
    assert crawler.stats.get_value("urlcheck/pace/raised") == 1


def test_network_errors_through_a_proxy_do_not_count_against_the_host():
    from scrapy.exceptions import DownloadConnectionRefusedError

    _, middleware = _circuit_middleware()
    request = Request("http://a.test/", meta={"download_slot": "a.test", "proxy": "http://p:1"})
    for _ in range(3):
        middleware.process_exception(request, DownloadConnectionRefusedError("refused"))
    assert middleware.circuit.unavailable("a.test") is None


def test_hosts_json_is_merged_across_runs(tmp_path):
    import json

    from urlcheck.extensions.hostreport import write_hosts

    write_hosts(tmp_path, {"a.test": {"delay": 1.2, "too_fast": 2, "unavailable": None}})
    write_hosts(tmp_path, {"b.test": {"delay": 0.3, "too_fast": 0, "unavailable": {"rows": 2}}})
    write_hosts(tmp_path, {"a.test": {"delay": 0.6, "too_fast": 1, "unavailable": None}})
    hosts = json.loads((tmp_path / "hosts.json").read_text())["hosts"]
    assert hosts == {
        "a.test": {"delay": 0.6, "too_fast": 1, "unavailable": None},
        "b.test": {"delay": 0.3, "too_fast": 0, "unavailable": {"rows": 2}},
    }
    assert not list(tmp_path.glob("*.tmp"))


def test_hosts_json_adds_up_back_off_time_over_the_runs_of_a_job(tmp_path):
    import json

    from urlcheck.extensions.hostreport import write_hosts

    write_hosts(tmp_path, {"a.test": {"delay": 0.6, "too_fast": 2, "backoff_seconds": 0.6}})
    write_hosts(tmp_path, {"a.test": {"delay": 0.3, "too_fast": 1, "backoff_seconds": 0.2}})
    write_hosts(tmp_path, {"b.test": {"delay": 0.3, "too_fast": 0, "backoff_seconds": 0.4}})
    hosts = json.loads((tmp_path / "hosts.json").read_text())["hosts"]
    assert hosts["a.test"] == {"delay": 0.3, "too_fast": 1, "backoff_seconds": 0.8}
    assert hosts["b.test"]["backoff_seconds"] == 0.4


def test_hosts_json_keeps_a_distributed_jobs_totals_as_they_are(tmp_path):
    """A distributed job's back-off times are the job's totals so far (from Redis): a restarted
    coordinator writes them again, not on top of the last run's."""
    import json

    from urlcheck.extensions.hostreport import write_hosts

    write_hosts(tmp_path, {"a.test": {"delay": 0.6, "backoff_seconds": 0.6}}, totals=True)
    write_hosts(tmp_path, {"a.test": {"delay": 0.6, "backoff_seconds": 0.9}}, totals=True)
    hosts = json.loads((tmp_path / "hosts.json").read_text())["hosts"]
    assert hosts["a.test"]["backoff_seconds"] == 0.9


def test_time_paused_counts_overlapping_pauses_once_and_stops_when_resumed():
    clock = FakeClock()
    backoff = HostBackoff(BackoffConfig(base=10.0), clock)
    assert backoff.paused_seconds() == {}
    backoff.pause("a.test", attempt=1)  # 10 s
    clock.now += 4
    assert backoff.paused_seconds() == {"a.test": 4}  # a pause still running counts up to now
    backoff.pause("a.test", attempt=2)  # 20 s from now: 14 s more than the first one asked
    backoff.pause("a.test", attempt=1)  # inside the longer pause: nothing more
    clock.now += 30
    assert backoff.paused_seconds() == {"a.test": 24}
    backoff.pause("a.test", attempt=1)
    backoff.pause("b.test", attempt=3)  # 40 s
    clock.now += 5
    backoff.resume("b.test")  # given up on after 5 s: the rest of its pause never happened
    clock.now += 100
    assert backoff.paused_seconds() == {"a.test": 34, "b.test": 5}
    assert not backoff.is_paused("a.test") and not backoff.is_paused("b.test")
