"""Prometheus metrics: the real /metrics endpoint scraped during real crawls, and the textfile
written at the end."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections import Counter

import pytest
from prometheus_client.parser import text_string_to_metric_families
from scrapy import Spider, signals
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.conftest import FAST, crawl, project_settings, write_csv
from tests.sitefixture import ProxyServer, SiteServer, running_proxies
from urlcheck.check.result import status_class
from urlcheck.config.crawlconfig import ConfigError, MetricsConfig
from urlcheck.extensions.metrics import Metrics


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name, frozenset(sample.labels.items())] = sample.value
    return found


def value(found, name, **labels):
    return found.get((name, frozenset(labels.items())))


def test_off_unless_asked_and_settings_are_checked():
    with pytest.raises(NotConfigured) as caught:
        Metrics.from_crawler(get_crawler(Spider))
    assert not str(caught.value)  # bare: off is not a mistake
    config = MetricsConfig.from_settings(Settings({"URLCHECK_METRICS_PORT": "9410"}))
    assert (config.port, config.host, config.file) == (9410, "127.0.0.1", None)
    for name, bad in (
        ("URLCHECK_METRICS_PORT", "metrics"),
        ("URLCHECK_METRICS_PORT", 70000),
        ("URLCHECK_METRICS_INTERVAL", 0),
    ):
        with pytest.raises(ConfigError, match=name):
            MetricsConfig.from_settings(Settings({"URLCHECK_METRICS_PORT": 1, name: bad}))


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:  # loopback only
        return response.read().decode()


async def _start(runner, crawler, **kwargs) -> tuple[asyncio.Future[None], str]:
    """Start the crawl; returns it running and the URL of its /metrics once served."""
    opened = asyncio.get_running_loop().create_future()

    def on_opened() -> None:
        opened.set_result(None)

    crawler.signals.connect(on_opened, signal=signals.spider_opened)  # a weak reference
    running = asyncio.ensure_future(runner.crawl(crawler, **kwargs))
    await asyncio.wait_for(opened, 30)
    [extension] = [e for e in crawler.extensions.middlewares if isinstance(e, Metrics)]
    while extension.url is None:
        assert not running.done()
        await asyncio.sleep(0.02)
    return running, extension.url


@pytest.mark.crawl
@deferred_f_from_coro_f
async def test_metrics_endpoint_during_a_crawl_and_textfile_at_the_end(site, tmp_path):
    from urlcheck.spiders.check import CheckSpider

    u = site.url
    rows = [
        f"{u('127.0.0.7', '/chain/1')},{u('127.0.0.7', '/chain/0')}",
        f"{u('127.0.0.7', '/redirect/302?to=/ok')},{u('127.0.0.7', '/ok')}",
        f"{u('127.0.0.7', '/status/404')},",
        "mailto:someone@example.com,",
        f"{u('127.0.0.8', '/delay/2')},",  # still in flight while we scrape
    ]
    csv = write_csv(tmp_path / "in.csv", "url,expected\n" + "\n".join(rows) + "\n")
    out, prom = tmp_path / "out.jsonl", tmp_path / "metrics" / "urlcheck.prom"
    runner = AsyncCrawlerRunner(
        project_settings(
            **FAST,
            URLCHECK_METRICS_PORT=0,
            URLCHECK_METRICS_INTERVAL=0.05,
            URLCHECK_METRICS_FILE=str(prom),
        )
    )
    crawler = runner.create_crawler(CheckSpider)
    running, url = await _start(runner, crawler, csv=str(csv), out=str(out))
    assert url.startswith("http://127.0.0.1:")
    for _ in range(200):
        during = samples(await asyncio.to_thread(_get, url))
        if (
            value(during, "urlcheck_rows_total") == 4
            and value(during, "urlcheck_done_rows") == 4  # counted when the line is written
            and value(during, "urlcheck_requests_in_flight") == 1
        ):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(f"never saw 4 rows done and the slow one in flight: {during}")
    assert value(during, "urlcheck_input_rows") == 5
    assert value(during, "urlcheck_done_rows") == 4
    assert value(during, "urlcheck_hosts_backoff") == 0
    assert not running.done()
    await running

    results = [__import__("json").loads(line) for line in out.read_text().splitlines()]
    final = samples(prom.read_text())
    assert value(final, "urlcheck_rows_total") == len(results) == 5
    for cls, count in Counter(status_class(r["final_status"]) for r in results).items():
        assert value(final, "urlcheck_results_total", status_class=cls) == count
    for verdict, count in Counter(r["verdict"] or "none" for r in results).items():
        assert value(final, "urlcheck_verdicts_total", verdict=verdict) == count
    assert value(final, "urlcheck_errors_total", kind="invalid_url") == 1
    assert value(final, "urlcheck_requests_in_flight") == 0
    assert value(final, "urlcheck_proxy_acquire_seconds_count") == 0  # the crawl ran direct
    with pytest.raises(urllib.error.URLError):  # the server closed with the spider
        _get(url)


@pytest.mark.crawl
@deferred_f_from_coro_f
async def test_hosts_slowed_down_and_unavailable_during_and_after_a_crawl(site, tmp_path):
    from urlcheck.crawl.runtime import runtime
    from urlcheck.spiders.check import CheckSpider

    u = site.url
    slow, down = "127.0.0.4", "127.0.0.5"
    rows = [
        u(slow, "/ratelimit/2?id=metricshosts"),  # 429, 429, 200: delay 0.3 s, then 0.6 s
        *(u(down, f"/always/503?id=metricshosts&i={i}") for i in range(3)),
        u("127.0.0.9", "/delay/8?id=metricshosts"),  # keeps the crawl (and /metrics) up
    ]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    prom = tmp_path / "urlcheck.prom"
    runner = AsyncCrawlerRunner(
        project_settings(
            DOWNLOAD_DELAY=0,
            AUTOTHROTTLE_ENABLED=False,
            CONCURRENT_REQUESTS_PER_DOMAIN=1,
            URLCHECK_BACKOFF_BASE=0.2,
            URLCHECK_HOST_DOWN_AFTER=2,
            URLCHECK_METRICS_PORT=0,
            URLCHECK_METRICS_INTERVAL=0.05,
            URLCHECK_METRICS_FILE=str(prom),
        )
    )
    crawler = runner.create_crawler(CheckSpider)
    running, url = await _start(runner, crawler, csv=str(csv), out=str(tmp_path / "out.jsonl"))
    for _ in range(400):
        during = samples(await asyncio.to_thread(_get, url))
        if value(during, "urlcheck_hosts_unavailable") == 1:
            break
        assert value(during, "urlcheck_hosts_unavailable") == 0
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(f"never saw the down host given up on: {during}")
    assert not running.done(), "the slow row keeps the crawl running"
    assert value(during, "urlcheck_hosts_slowed") == 1
    assert value(during, "urlcheck_host_delay_max_seconds") == 0.6
    # Two ladders of the down host at least: 2 x (0.2 + 0.4 + 0.8) s, overlapping or not.
    assert value(during, "urlcheck_backoff_seconds_total") >= 1.4
    await running

    final = samples(prom.read_text())
    assert value(final, "urlcheck_hosts_unavailable") == 1
    assert value(final, "urlcheck_hosts_slowed") == 1
    assert value(final, "urlcheck_host_delay_max_seconds") == 0.6
    assert value(final, "urlcheck_hosts_backoff") == 0
    paused = runtime(crawler).backoff.paused_seconds()
    assert set(paused) == {slow, down} and paused[slow] == pytest.approx(0.6)
    assert value(final, "urlcheck_backoff_seconds_total") == pytest.approx(sum(paused.values()))
    assert value(final, "urlcheck_errors_total", kind="host_unavailable") == 1


@pytest.mark.crawl
@deferred_f_from_coro_f
async def test_proxy_metrics(tmp_path):
    good, blocked = "127.0.0.31", "127.0.0.30"
    with (
        SiteServer(("127.0.0.3",), log_path=tmp_path / "site.jsonl") as site,
        running_proxies([ProxyServer(listen=h) for h in (blocked, good)]) as proxies,
    ):
        rows = [site.url("127.0.0.3", f"/by-client?blocked={blocked}&i={i}") for i in range(8)]
        csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
        prom = tmp_path / "urlcheck.prom"
        results, crawler = await crawl(
            csv,
            tmp_path / "out.jsonl",
            **FAST,
            URLCHECK_PROXIES=[p.url for p in proxies],
            URLCHECK_PROXY_STICKY="none",
            URLCHECK_PROXY_STRATEGY="round-robin",
            URLCHECK_METRICS_FILE=str(prom),
        )
        names = {p.listen: p.address for p in proxies}
    assert len(results) == 8
    final = samples(prom.read_text())
    assert value(final, "urlcheck_proxy_responses_total", proxy=names[blocked], outcome="captcha")
    answered = sum(1 for r in results if r["final_status"] == 200 and not r["error"])
    assert answered >= 6
    ok = value(final, "urlcheck_proxy_responses_total", proxy=names[good], outcome="ok")
    assert ok == answered  # each row answered through the good proxy released one ok lease
    assigned = crawler.stats.get_value("urlcheck/proxy/assigned")
    assert value(final, "urlcheck_proxy_acquire_seconds_count") == assigned > 8
    for proxy in names.values():
        states = [
            v
            for (n, labels), v in final.items()
            if n == "urlcheck_proxy_state" and ("proxy", proxy) in labels
        ]
        assert sorted(states) == [0, 0, 0, 0, 1]
    assert value(final, "urlcheck_proxy_captcha_ratio", proxy=names[blocked]) > 0


def test_a_port_in_use_is_logged_and_the_crawl_goes_on(tmp_path, caplog):
    import logging
    import socket

    from urlcheck.crawl.runtime import runtime

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        crawler = get_crawler(
            Spider,
            {"URLCHECK_METRICS_PORT": port, "URLCHECK_METRICS_FILE": str(tmp_path / "m.prom")},
        )
        extension = Metrics(crawler, runtime(crawler))
        with caplog.at_level(logging.ERROR, logger="urlcheck.extensions.metrics"):
            extension.spider_opened()
        assert extension.server is None
        assert f"cannot serve on 127.0.0.1 port {port}" in caplog.text
        extension.spider_closed()
    assert "urlcheck_rows_total 0.0" in (tmp_path / "m.prom").read_text()
