"""urlcheck's own signals, sent through the crawler's signal manager as Scrapy's are.

They are documented in docs/signals.md, with their arguments. Please don't add a signal here
without documenting it there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

job_paused = object()
job_resumed = object()
proxy_acquired = object()
proxy_released = object()


async def wait_while_paused(crawler: Crawler) -> None:
    """Return once the job is not paused; for a spider's lazy ``start()`` loop, which a paused
    engine still consumes (only the scheduler stops being drained)."""
    while crawler.engine.paused and crawler.crawling:
        await crawler.signals.wait_for(job_resumed)
