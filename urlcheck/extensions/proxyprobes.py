"""Drives the proxy pool's active probes and reports the pool's state.

The pool decides which proxies are due and what a result means; this extension sends the
probes, every ``URLCHECK_PROXY_PROBE_INTERVAL`` seconds, as ordinary scheduled requests (so they
keep the control hosts' politeness). Without configured control URLs, the first URL of each of
the crawl's first hosts is offered to the pool as a probe target (probed with HEAD; any answer
of the site passes), so probes work with the defaults. It also logs the pool's state counts every
``URLCHECK_PROXY_REPORT_INTERVAL`` seconds, and at close logs a per-proxy table, puts the
pool's totals into stats and writes ``proxies.json`` (the pool snapshot, with the proxy x
site matrix) next to the results.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from urlcheck.check.urls import host_key
from urlcheck.crawl import meta as m
from urlcheck.crawl.runtime import runtime
from urlcheck.jobs.nofollow import open_nofollow
from urlcheck.proxypool import StoreUnavailable

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector
    from twisted.python.failure import Failure

    from urlcheck.proxypool import PoolSnapshot, ProbeTask, ProxyPool

logger = logging.getLogger(__name__)

_IDLE_AFTER = 5.0  # seconds without a proxied request after which probing pauses
# What a proxy answers itself rather than passing on the site's answer: a HEAD probe of one of
# the crawl's own URLs fails with these, and passes with any other status.
_PROXY_STATUSES = frozenset({407, 502, 504})


class ProxyProbes:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.pool: ProxyPool | None = None
        self._probe_loop = create_looping_call(self._send_probes)
        self._report_loop = create_looping_call(self._report)
        self._assigned = 0
        self._active_at = time.monotonic()
        self._target_hosts: set[str] = set()
        # A probe of one of the crawl's URLs is judged by the address guard as the request it
        # was taken from (a hop after a public answer stays one): target URL -> guard context.
        self._target_context: dict[str, dict[str, Any]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if runtime(crawler).config.proxies is None:
            raise NotConfigured  # the crawl runs direct
        extension = cls(crawler)
        crawler.signals.connect(extension._opened, signal=signals.spider_opened)
        crawler.signals.connect(extension._closed, signal=signals.spider_closed)
        crawler.signals.connect(extension._scheduled, signal=signals.request_scheduled)
        return extension

    def _opened(self) -> None:
        rt = runtime(self.crawler)
        if rt.proxy_pool is None or rt.config.proxies is None:
            return  # the proxy middleware is not in DOWNLOADER_MIDDLEWARES
        self.pool = rt.proxy_pool
        self._probe_loop.start(rt.config.proxies.probe_interval, now=False)
        self._report_loop.start(rt.config.proxies.report_interval, now=False)

    def _scheduled(self, request: Request) -> None:
        """The first URL of each of the crawl's first hosts: a probe target, if the pool wants
        one (no control URLs configured)."""
        pool = self.pool
        if pool is None or m.PROBE_PROXY in request.meta or not pool.wants_probe_targets:
            return
        host = host_key(request.url)
        if host not in self._target_hosts and pool.add_probe_target(request.url):
            self._target_hosts.add(host)
            self._target_context[request.url] = m.guard_context(request.meta)

    def _crawl_is_working(self, stats: StatsCollector) -> bool:
        """Probes serve the crawl's traffic: with no row left in flight they would only keep
        a finished crawl from closing."""
        feeder = runtime(self.crawler).feeder
        if feeder is not None and feeder.exhausted and feeder.in_flight == 0:
            return False
        assigned = stats.get_value("urlcheck/proxy/assigned", 0)
        now = time.monotonic()
        if assigned != self._assigned:
            self._assigned, self._active_at = assigned, now
        return now - self._active_at < _IDLE_AFTER

    def _send_probes(self) -> None:
        pool, engine, stats = self.pool, self.crawler.engine, self.crawler.stats
        if pool is None or engine is None or stats is None or not self._crawl_is_working(stats):
            return
        try:
            tasks = pool.due_probes()
        except StoreUnavailable:
            return  # the proxy middleware logs and counts the outage
        for task in tasks:
            stats.inc_value("urlcheck/proxy/probes/sent")
            engine.crawl(self.probe_request(task))

    def probe_request(self, task: ProbeTask) -> Request:
        """The request that probes ``task.proxy_id`` through ``task.control_url``: a crawl URL
        taken as a target carries the guard context of the request it was taken from."""
        return Request(
            task.control_url,
            method=task.method,
            callback=self._probe_done,
            errback=self._probe_failed,
            dont_filter=True,
            priority=10,
            meta={
                m.PROBE_PROXY: task.proxy_id,
                "download_slot": host_key(task.control_url),
                "handle_httpstatus_all": True,
                "dont_retry": True,
                "dont_redirect": True,
                m.PROBE_STARTED: time.monotonic(),
                m.PROBE_CONTROL: task.control_url,
                **self._target_context.get(task.control_url, {}),
            },
        )

    def _probe_done(self, response: Response) -> None:
        status = response.status
        if response.request is not None and response.request.method == "HEAD":
            ok = status not in _PROXY_STATUSES  # one of the crawl's own URLs: the site answered
        else:
            ok = 200 <= status < 300
        self._report_probe(response.meta, ok)

    def _probe_failed(self, failure: Failure) -> None:
        self._report_probe(failure.request.meta, False)  # type: ignore[attr-defined]

    def _report_probe(self, meta: dict[str, Any], ok: bool) -> None:
        pool, stats = self.pool, self.crawler.stats
        if pool is None or stats is None:
            return
        stats.inc_value(f"urlcheck/proxy/probes/{'passed' if ok else 'failed'}")
        latency = time.monotonic() - meta[m.PROBE_STARTED]
        try:
            pool.report_probe(meta[m.PROBE_PROXY], meta[m.PROBE_CONTROL], ok, latency)
        except StoreUnavailable:
            logger.debug("probe result dropped: the proxy store is unreachable")

    def _report(self) -> None:
        if self.pool is None:
            return
        try:
            snapshot = self.pool.snapshot()
        except StoreUnavailable:
            return
        logger.info("Proxy pool: %s", _state_counts(snapshot))

    def _closed(self) -> None:
        for loop in (self._probe_loop, self._report_loop):
            if loop.running:
                loop.stop()
        pool = self.pool
        if pool is None:
            return
        try:
            snapshot = pool.snapshot()
        except StoreUnavailable as exc:
            logger.warning("Proxy pool snapshot not written: %s", exc)
            return
        stats = self.crawler.stats
        assert stats is not None
        for state, count in _state_counts(snapshot).items():
            stats.set_value(f"urlcheck/proxy/state/{state}", count)
        logger.info("Proxy pool at close:\n%s", _table(snapshot))
        path = self._snapshot_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with open_nofollow(path, "w", encoding="utf-8") as out:  # never through a link
            out.write(json.dumps(snapshot, indent=2, default=str))
        logger.info("Proxy pool snapshot written to %s", path)

    def _snapshot_path(self) -> Path:
        results = runtime(self.crawler).results_path
        if results is not None:
            return results.with_name("proxies.json")
        jobdir = self.crawler.settings.get("JOBDIR")
        return Path(jobdir) / "proxies.json" if jobdir else Path("proxies.json")


def _state_counts(snapshot: PoolSnapshot) -> dict[str, int]:
    return dict(snapshot["totals"]["states"])


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _table(snapshot: PoolSnapshot) -> str:
    rows = [
        f"  {'proxy':<24} {'state':<12} {'weight':>6} {'success':>7} {'captcha':>7} "
        f"{'block':>6} {'p50 ms':>7} {'quarantines':>11}"
    ]
    for proxy in snapshot["proxies"]:
        p50 = proxy["latency_p50"]
        rows.append(
            f"  {proxy['display']:<24} {proxy['state']:<12} {proxy['weight']:>6.2f} "
            f"{_pct(proxy['success_rate']):>7} {_pct(proxy['captcha_rate']):>7} "
            f"{_pct(proxy['block_rate']):>6} {'-' if p50 is None else f'{p50 * 1000:.0f}':>7} "
            f"{proxy['quarantines']:>11}"
        )
    faults = snapshot["totals"]["sites_at_fault"]
    if faults:
        rows.append(f"  sites at fault (no proxy blamed): {', '.join(faults)}")
    return "\n".join(rows)
