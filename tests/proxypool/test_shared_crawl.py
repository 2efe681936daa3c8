"""A real crawl on a pool kept in Redis tells the fleet every outcome by its end: the
successes a process holds back (docs/proxypool.md, *One fleet, one judgement*) go out when the
spider closes, for the processes that go on."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv
from tests.redisserver import RedisServer
from tests.sitefixture import ProxyServer, SiteServer, running_proxies
from urlcheck.proxypool.store.redis import key_prefix

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.crawl

SITE_HOSTS = ("127.0.0.2", "127.0.0.3")
PROXY_HOSTS = [f"127.0.0.{i}" for i in range(40, 43)]


@deferred_f_from_coro_f
async def test_every_outcome_of_a_crawl_is_in_the_fleets_log_when_it_ends(tmp_path: Path) -> None:
    with (
        SiteServer(SITE_HOSTS) as site,
        running_proxies([ProxyServer(listen=h) for h in PROXY_HOSTS]) as proxies,
        RedisServer() as server,
    ):
        rows = [site.url(SITE_HOSTS[i % 2], f"/delay/0.01?run=told&i={i}") for i in range(7)]
        csv = write_csv(tmp_path / "in.csv", "url\n" + "".join(f"{u}\n" for u in rows))
        results, crawler = await crawl(
            csv,
            tmp_path / "out.jsonl",
            **FAST,
            URLCHECK_PROXIES=[p.url for p in proxies],
            URLCHECK_PROXY_STORE=server.url,
            URLCHECK_PROXY_POOL_NAME="told",
        )
        client = server.client(decode_responses=True)
        entries = client.lrange(key_prefix("told") + "log", 0, -1)
        client.close()
    assert sorted(r["url"] for r in results) == sorted(rows)
    assert all(r["final_status"] == 200 for r in results)
    lines = [line.split("\t") for entry in entries for line in str(entry).split("\n")[1:]]
    sent = crawler.stats.get_value("urlcheck/proxy/assigned")
    assert sent >= len(rows)  # the rows, and robots.txt, through the proxies
    assert len(lines) == sent  # every one told, the last successes at the close
    assert len(entries) < sent  # in batches
    assert all(code == "0" for _, _, code, _, _ in lines)  # successes
