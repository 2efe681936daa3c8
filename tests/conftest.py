from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.settings import Settings

from tests.redisserver import RedisServer
from tests.sitefixture import SiteServer
from urlcheck.cluster import connect

if TYPE_CHECKING:
    import redis

HOSTS = tuple(f"127.0.0.{i}" for i in range(2, 10))


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    """A redis-server of the test module's own, on a free loopback port (a module that needs a
    fresh one per test overrides this)."""
    with RedisServer() as srv:
        yield srv


@pytest.fixture
def client(server: RedisServer) -> Iterator[redis.Redis]:
    """A client of `server`, emptied first (and started again if a test stopped it)."""
    if not server.running:
        server.start()
    c = connect(server.url)
    c.flushall()  # our own server
    yield c
    c.close()


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteServer]:
    log = tmp_path_factory.mktemp("site") / "requests.jsonl"
    with SiteServer(HOSTS, log_path=log) as server:
        yield server


def project_settings(**overrides: Any) -> Settings:
    settings = Settings()
    settings.setmodule("urlcheck.settings", priority="project")
    settings.update({"LOG_LEVEL": "INFO", **overrides}, priority="cmdline")
    return settings


# Functional crawl tests check what is reported, not the pace: politeness gets its own tests.
FAST = {
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 4,
}


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


async def crawl(csv: Path, out: Path, **settings: Any) -> tuple[list[dict[str, Any]], Any]:
    """Run a real check crawl in this process; returns the result lines and the crawler."""
    from urlcheck.spiders.check import CheckSpider

    runner = AsyncCrawlerRunner(project_settings(**settings))
    crawler = runner.create_crawler(CheckSpider)
    await runner.crawl(crawler, csv=str(csv), out=str(out))
    lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    return [json.loads(line) for line in lines], crawler
