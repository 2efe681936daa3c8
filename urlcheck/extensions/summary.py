"""Counts every result into stats (``urlcheck/...``) and logs one summary block at the end.

A row's warnings (``temporary_redirect`` when only warned of, the Location warnings of its hops)
are counted once per row: ``urlcheck/warning/location_backslash`` is the rows that met one.
Rows a bot wall answered (``blocked``) are counted by the wall's vendor:
``urlcheck/blocked/cloudflare``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy import signals

from urlcheck.check.chain import GENERIC_WALL
from urlcheck.check.result import Result, status_class

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


class Summary:
    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self.block = ""  # the summary block, once the spider has closed (urlcheck check prints it)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        extension = cls(crawler.stats)
        crawler.signals.connect(extension.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def item_scraped(self, item: object) -> None:
        if not isinstance(item, Result):
            return
        inc = self.stats.inc_value
        inc("urlcheck/rows")
        inc(f"urlcheck/status/{status_class(item.status)}")
        if item.error is None and not item.loop:
            inc(f"urlcheck/final_status/{status_class(item.final_status)}")
        if item.hops:
            inc("urlcheck/redirected")
        if item.loop:
            inc("urlcheck/loops")
        if item.error:
            inc(f"urlcheck/error/{item.error}")
            if item.error == "blocked":
                inc(f"urlcheck/blocked/{wall_vendor(item)}")
        if item.verdict:
            inc(f"urlcheck/verdict/{item.verdict}")
            for reason in item.reasons:
                inc(f"urlcheck/reason/{reason}")
        for warning in item.warnings:  # each once per row (urlcheck.check.result.hop_warnings)
            inc(f"urlcheck/warning/{warning}")

    def spider_closed(self, reason: str) -> None:
        stats = self.stats.get_stats()
        lines = [f"urlcheck summary ({reason}): {stats.get('urlcheck/rows', 0)} rows checked"]
        for title, prefix in (
            ("first status", "urlcheck/status/"),
            ("final status", "urlcheck/final_status/"),
            ("verdicts", "urlcheck/verdict/"),
            ("errors", "urlcheck/error/"),
            ("bot walls (rows)", "urlcheck/blocked/"),
            ("warnings (rows)", "urlcheck/warning/"),
        ):
            found = sorted((k[len(prefix) :], v) for k, v in stats.items() if k.startswith(prefix))
            if found:
                lines.append(f"  {title}: " + ", ".join(f"{k} {v}" for k, v in found))
        for title, key in (("redirected", "urlcheck/redirected"), ("loops", "urlcheck/loops")):
            if stats.get(key):
                lines.append(f"  {title}: {stats[key]}")
        self.block = "\n".join(lines)
        logger.info("%s", self.block)


def wall_vendor(item: Result) -> str:
    """The vendor of the wall a ``blocked`` row ended on (its last hop names it)."""
    last = item.chain[-1] if item.chain else None
    return (last.get("vendor") if last is not None else None) or GENERIC_WALL
