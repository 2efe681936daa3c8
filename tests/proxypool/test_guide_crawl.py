"""Probes on with the defaults (issue 15.2), end to end: a real crawl through real forward proxies
on loopback, one of which dies and is started again mid-crawl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scrapy import signals
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, project_settings, write_csv
from tests.sitefixture import ProxyServer, SiteServer, running_proxies, unused_port
from urlcheck.crawl.failures import classify_exception
from urlcheck.crawl.runtime import runtime
from urlcheck.middlewares.proxy import error_kind
from urlcheck.proxypool import ErrorKind, State
from urlcheck.proxypool.events import Event, Transition

pytestmark = pytest.mark.crawl

SITE_HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
GOOD = ("127.0.0.40", "127.0.0.41", "127.0.0.42")
REVENANT = "127.0.0.43"


@deferred_f_from_coro_f
async def test_a_dead_proxy_comes_back_when_its_process_is_restarted(tmp_path: Path) -> None:
    port = unused_port(REVENANT)
    revenant = ProxyServer(listen=REVENANT, port=port, log_path=tmp_path / "revenant.jsonl")
    revenant.start()
    revenant.stop()  # the proxy process died before the crawl began
    with (
        SiteServer(SITE_HOSTS, log_path=tmp_path / "site.jsonl") as site,
        running_proxies([ProxyServer(listen=h) for h in GOOD]) as proxies,
    ):
        rows = [site.url(h, f"/delay/0.05?run=revive&i={i}") for i in range(40) for h in SITE_HOSTS]
        csv = write_csv(tmp_path / "in.csv", "url\n" + "".join(f"{u}\n" for u in rows))
        out = tmp_path / "out.jsonl"
        # Everything at the defaults but the timings, shrunk from minutes to seconds (the
        # hosts' delay too: 40 rows a host last 6 s, time enough to die and come back), and a
        # half-open proxy's first share (so that a short crawl sees it carry traffic); no
        # control URL is configured: the probes go to the crawl's own URLs.
        runner = AsyncCrawlerRunner(
            project_settings(
                DOWNLOAD_DELAY=0.1,
                URLCHECK_PROXIES=[p.url for p in proxies] + [f"http://{REVENANT}:{port}"],
                URLCHECK_PROXY_STICKY="none",
                URLCHECK_PROXY_STRATEGY="round-robin",  # its turn comes soon, dead or alive
                URLCHECK_PROXY_BACKOFF_BASE=0.5,
                URLCHECK_PROXY_BACKOFF_MAX=1.0,
                URLCHECK_PROXY_DEAD_AFTER_CYCLES=1,
                URLCHECK_PROXY_DEAD_PROBE_INTERVAL=1.0,
                URLCHECK_PROXY_PROBE_RETRY_INTERVAL=0.2,
                URLCHECK_PROXY_PROBES_TO_RETURN=2,
                URLCHECK_PROXY_PROBE_INTERVAL=0.1,
                URLCHECK_PROXY_RAMP_START=0.5,
            )
        )
        crawler = runner.create_crawler("check")
        moves: list[Transition] = []

        def watch(event: Event) -> None:
            if isinstance(event, Transition) and event.proxy_id.startswith(REVENANT):
                moves.append(event)
                if event.new is State.DEAD and not any(m.old is State.DEAD for m in moves):
                    revenant.spawn()  # restarted; it answers once it has bound its port

        def opened() -> None:
            pool = runtime(crawler).proxy_pool
            assert pool is not None
            pool.subscribe(watch)

        crawler.signals.connect(opened, signal=signals.spider_opened)
        try:
            await runner.crawl(crawler, csv=str(csv), out=str(out))
        finally:
            revenant.stop()
        results: list[dict[str, Any]] = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(results) == len(rows)
    assert all(r["final_status"] == 200 for r in results)
    path = [(m.old.value, m.new.value) for m in moves]
    assert ("quarantined", "dead") in path or ("probing", "dead") in path, path
    # dead, then a passed probe, then half-open and real traffic again
    assert ("dead", "quarantined") in path, path
    revived = path.index(("dead", "quarantined"))
    assert ("quarantined", "probing") in path[revived:], path
    assert "a probe passed" in moves[revived].reason
    probes = [e for e in site.log() if e["method"] == "HEAD" and "run=revive" in e["path"]]
    assert {e["client"].rsplit(":", 1)[0] for e in probes} >= {REVENANT}  # probed through it
    served = [e for e in revenant.log() if e["method"] == "GET"]
    assert served, "the revived proxy carried crawl traffic again"
    stats = crawler.stats.get_stats()
    assert stats.get("urlcheck/proxy/probes/passed", 0) >= 2
    snapshot = json.loads((tmp_path / "proxies.json").read_text())
    state = next(p["state"] for p in snapshot["proxies"] if p["display"] == f"{REVENANT}:{port}")
    assert state in ("probing", "healthy", "degraded")


@deferred_f_from_coro_f
async def test_requests_wait_for_a_lease_under_the_hard_cap(tmp_path: Path) -> None:
    with (
        SiteServer(SITE_HOSTS, log_path=tmp_path / "site.jsonl") as site,
        ProxyServer(listen=GOOD[0], log_path=tmp_path / "proxy.jsonl") as proxy,
    ):
        rows = [site.url(h, f"/delay/0.2?run=cap&i={i}") for i in range(4) for h in SITE_HOSTS]
        csv = write_csv(tmp_path / "in.csv", "url\n" + "".join(f"{u}\n" for u in rows))
        results, crawler = await crawl(
            csv,
            tmp_path / "out.jsonl",
            **FAST,
            URLCHECK_PROXIES=[f"{proxy.url} max_concurrent=1"],
            URLCHECK_PROXY_STICKY="none",
        )
        seen = [e for e in site.log() if "run=cap" in e["path"]]
    assert len(results) == len(rows)
    assert all(r["final_status"] == 200 and r["error"] is None for r in results)
    stats = crawler.stats.get_stats()
    assert stats.get("urlcheck/proxy/cap_waits", 0) > 0  # three hosts at once, one lease
    assert "urlcheck/proxy/unavailable" not in stats
    assert _most_in_flight(seen) == 1  # the site saw the proxy's requests one at a time


def _most_in_flight(log: list[dict[str, Any]]) -> int:
    """Most requests in flight at once, from the site's arrival and departure times."""
    edges = sorted(
        [(e["t_arrival"], 1) for e in log] + [(e["t_departure"], -1) for e in log],
        key=lambda edge: (edge[0], edge[1]),  # a departure before an arrival at the same time
    )
    most = current = 0
    for _, step in edges:
        current += step
        most = max(most, current)
    return most


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (403, ErrorKind.PROXY_UNREACHABLE),
        (405, ErrorKind.PROXY_UNREACHABLE),
        (407, ErrorKind.PROXY_AUTH),
        (502, ErrorKind.CONNECT),
        (504, ErrorKind.CONNECT),
    ],
)
def test_a_refused_connect_is_the_proxys(status: int, kind: ErrorKind) -> None:
    from scrapy.core.downloader.handlers.http11 import TunnelError

    refused = TunnelError(
        "Could not open CONNECT tunnel with proxy 127.0.0.40:3128 "
        f"[{{'status': {status}, 'reason': b'Nope'}}]"
    )
    assert error_kind(refused, classify_exception(refused)[0]) is kind
    # a proxy that does not answer at all is the proxy's too; a timeout stays ambiguous
    assert error_kind(ConnectionRefusedError(), "connect") is ErrorKind.PROXY_UNREACHABLE
    assert error_kind(TimeoutError(), "timeout") is ErrorKind.TIMEOUT
