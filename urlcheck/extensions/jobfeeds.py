"""Feed exports (``-o out.csv``) of a job: written from results.jsonl at the end of every run.

Scrapy's FeedExporter streams the items of one run. A job often takes several runs (Ctrl-C,
crash, resume), and a streamed ``-o`` then holds a second header half-way down, or only the
last run's rows. For a job this extension instead writes each feed at the end of every run
from the job's results file, sorted by row, through Scrapy's own feed machinery (the same
storages, FEED_EXPORTERS formats, item filters, batches and post-processing), replacing a local
file's previous content. So the export always covers every row the job has done, once.
Without a job it is Scrapy's FeedExporter, unchanged. Reference: docs/jobs.md, "Exports".
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from scrapy import signals
from scrapy.extensions.feedexport import FeedExporter

from urlcheck.check.result import Result
from urlcheck.crawl.runtime import runtime
from urlcheck.jobs.done import row_offsets
from urlcheck.jobs.nofollow import open_nofollow

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def job_items(path: Path) -> Iterator[Result]:
    """The results file's lines as items, in row order (one pass to index, then a seek each)."""
    rows, offsets = row_offsets(path)
    order = sorted(range(len(rows)), key=rows.__getitem__)
    with open_nofollow(path, "rb") as src:
        for index in order:
            src.seek(offsets[index])
            yield Result.from_dict(json.loads(src.readline()))


def _is_local(uri: str) -> bool:
    scheme = urlparse(uri).scheme
    return scheme in ("", "file") or len(scheme) == 1  # a Windows drive letter


class JobFeeds(FeedExporter):
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        if not crawler.settings.get("JOBDIR") or not runtime(crawler).config.results_enabled:
            # No job, or no results file to export from: Scrapy's streaming export.
            return FeedExporter.from_crawler(crawler)
        exporter = cls(crawler)  # NotConfigured without FEEDS
        for uri, options in exporter.feeds.items():
            # Every run writes the whole job: a local file is replaced, never appended to.
            if _is_local(uri):
                options["overwrite"] = True
        crawler.signals.connect(exporter.export_job, signals.spider_closed)
        return exporter

    async def export_job(self, spider: Spider) -> None:
        path = runtime(self.crawler).results_path
        if path is None or not path.exists():
            return
        # Synchronous up to close_spider: the whole file is read before anything else (the
        # job lock's release among them) runs.
        self.open_spider(spider)
        count = 0
        for item in job_items(path):
            self.item_scraped(item, spider)
            count += 1
        logger.info("Exporting %d rows of the job from %s", count, path)
        await self.close_spider(spider)
