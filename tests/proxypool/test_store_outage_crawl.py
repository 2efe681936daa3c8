"""A real crawl through loopback proxies whose pool lives in Redis, with that Redis restarted
(losing everything) mid-crawl: requests wait for it, no row is lost, the outage is counted."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv
from tests.redisserver import RedisServer
from tests.sitefixture import ProxyServer, SiteServer, running_proxies

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.crawl

SITE_HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
PROXY_HOSTS = [f"127.0.0.{i}" for i in range(30, 34)]
ROWS = 40


def restart_when(site: SiteServer, server: RedisServer, seen: int, down_for: float) -> None:
    """Once `seen` requests reached the site, stop Redis, and start it again (empty)."""
    deadline = time.monotonic() + 60
    while len(site.log()) < seen and time.monotonic() < deadline:
        time.sleep(0.02)
    server.stop()
    time.sleep(down_for)
    server.start()


@deferred_f_from_coro_f
async def test_redis_restarted_mid_crawl_loses_no_row(tmp_path: Path) -> None:
    with (
        SiteServer(SITE_HOSTS, log_path=tmp_path / "site.jsonl") as site,
        running_proxies([ProxyServer(listen=h) for h in PROXY_HOSTS]) as proxies,
        RedisServer() as server,
    ):
        rows = [site.url(SITE_HOSTS[i % 3], f"/delay/0.2?run=outage&i={i}") for i in range(ROWS)]
        csv = write_csv(tmp_path / "in.csv", "url\n" + "".join(f"{u}\n" for u in rows))
        out = tmp_path / "out.jsonl"
        chaos = threading.Thread(target=restart_when, args=(site, server, 6, 2.5), daemon=True)
        chaos.start()
        results, crawler = await crawl(
            csv,
            out,
            **FAST,
            URLCHECK_PROXIES=[p.url for p in proxies],
            URLCHECK_PROXY_STICKY="none",
            URLCHECK_PROXY_STORE=server.url,
            URLCHECK_PROXY_POOL_NAME="outage-test",
        )
        chaos.join(30)
    assert not chaos.is_alive()
    assert sorted(r["url"] for r in results) == sorted(rows)  # each row once
    assert all(r["final_status"] == 200 for r in results)
    stats = crawler.stats.get_stats()
    assert stats["urlcheck/proxy/store_outages"] >= 1
    assert stats["urlcheck/proxy/store_outage_s"] > 0
