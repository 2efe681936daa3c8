"""A check crawl in a fresh process, as ``scrapy crawl check`` runs it (its preflight, then the
crawl with urlcheck's settings), that prints, as JSON, how it ended, which modules of
distributed mode (redis-py, ``urlcheck.cluster``) it loaded, and which it has no use for. For
tests/crawl/test_addon.py and bench/startup.py:

    python -m tests.crawl.importset CSV JOBDIR [NAME=VALUE ...]
"""

from __future__ import annotations

import json
import sys

from scrapy.crawler import AsyncCrawlerProcess

from urlcheck.cli import project_settings
from urlcheck.crawl.preflight import preflight
from urlcheck.spiders.check import CheckSpider


def distributed_modules() -> list[str]:
    return sorted(m for m in sys.modules if m.startswith(("redis", "urlcheck.cluster")))


# What a one-process crawl has no use for: aiohttp is Scrapy's RemoteControl's (disabled).
UNNEEDED = ("aiohttp",)


def unneeded_modules() -> list[str]:
    return sorted(m for m in sys.modules if m.split(".")[0] in UNNEEDED)


def main(csv: str, jobdir: str, *settings: str) -> None:
    found = project_settings()
    found.setdict(dict(s.split("=", 1) for s in settings), priority="cmdline")
    found.set("JOBDIR", jobdir, priority="cmdline")
    lock = preflight(found, {"csv": csv})
    process = AsyncCrawlerProcess(found)
    crawler = process.create_crawler(CheckSpider)
    process.crawl(crawler, csv=csv)
    process.start()
    if lock is not None:
        lock.release()
    assert crawler.stats is not None
    reason = crawler.stats.get_value("finish_reason")
    print(
        json.dumps(
            {
                "finish_reason": reason,
                "loaded": distributed_modules(),
                "unneeded": unneeded_modules(),
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
