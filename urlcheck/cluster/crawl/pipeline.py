"""Commits each result to the job in Redis (the exactly-once point: the row's ``done`` bit),
instead of writing it here; the coordinator alone writes results.jsonl.

The item is then dropped (quietly, at DEBUG): the local ResultsPipeline must not write it, and
the coordinator reports it (``item_scraped``, so the summary and meta.json count it) when it
reaches results.jsonl, whichever process checked it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import DropItem, NotConfigured

from urlcheck.check.result import Result
from urlcheck.cluster.crawl.runtime import ClusterRuntime
from urlcheck.cluster.errors import ClusterError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class ClusterResultsPipeline:
    def __init__(self, crawler: Crawler, runtime: ClusterRuntime) -> None:
        self.crawler = crawler
        self.runtime = runtime

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = ClusterRuntime.for_crawler(crawler)
        if runtime is None:
            raise NotConfigured
        return cls(crawler, runtime)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, Result):
            return item
        row = item.row
        line = item.to_json_line().decode("utf-8").rstrip("\n")
        runtime = self.runtime
        lease = runtime.book.pop(row)
        scheduler = runtime.scheduler
        try:
            if lease is not None:
                then = scheduler.then() if scheduler is not None else None
                asked = runtime.book.clock()
                done = runtime.frontier.complete_result(
                    lease,
                    line,
                    delay=runtime.delay_for(lease.host),
                    gap=runtime.gap_for(lease.host),
                    then=then,
                    pace=runtime.pace_event(lease.host),
                )
                committed = done.committed
                if done.claim is not None and scheduler is not None:
                    scheduler.accept(done.claim, asked)
            else:  # judged without a request, or its lease was lost meanwhile: first one wins
                committed = runtime.frontier.commit(row, line)
        except ClusterError as exc:
            self._inc("urlcheck/cluster/unavailable")
            raise DropItem(
                f"row {row}: Redis did not confirm the result ({exc}); "
                "unless it recorded it, the row is checked again",
                log_level="WARNING",
            ) from None
        if committed:
            runtime.rows_done += 1
            self._inc("urlcheck/cluster/committed")
        else:
            self._inc("urlcheck/cluster/duplicates")
        raise DropItem(f"row {row} committed to the job in Redis", log_level="DEBUG")

    def _inc(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)
