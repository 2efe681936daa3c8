"""Counts every result into stats (``urlcheck/...``) and logs one summary block at the end.

A row's warnings (``temporary_redirect`` when only warned of, the Location warnings of its hops)
are counted once per row: ``urlcheck/warning/location_backslash`` is the rows that met one.
``many_to_one`` needs every row: it is counted when the crawl closes (docs/urls-and-verdicts.md
section 9.1), and its landing URLs listed in the summary. A job's crawl shows JobControl's
judgement over the whole job (``Runtime.job_landings``) and keeps no tally; a crawl without a
job tallies its own rows.
Rows a bot wall answered (``blocked``) are counted by the wall's vendor:
``urlcheck/blocked/cloudflare``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy import signals

from urlcheck.check.chain import GENERIC_WALL
from urlcheck.check.manytoone import LandingTally, ManyToOne, expected_reached
from urlcheck.check.printable import printable
from urlcheck.check.result import Result, status_class
from urlcheck.crawl.runtime import runtime
from urlcheck.jobs.landings import ManyToOneSeen

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from urlcheck.crawl.runtime import Runtime

logger = logging.getLogger(__name__)


MANY_TO_ONE_SHOWN = 5  # landing URLs listed in the summary block


class Summary:
    def __init__(self, stats: StatsCollector, rt: Runtime) -> None:
        self.stats = stats
        self.runtime = rt
        # many_to_one over this crawl's rows, made at its first redirected row: never with the
        # check off, nor when the job judges it (rt.job_landings, looked at then rather than
        # here, whichever extension was built first).
        self.landings: LandingTally | None = None
        self.block = ""  # the summary block, once the spider has closed (urlcheck check prints it)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        extension = cls(crawler.stats, runtime(crawler))
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
        if item.hops and item.final_url is not None and (landings := self._tally()) is not None:
            reached = expected_reached(item.expected, item.reasons)
            landings.add(
                item.row, item.requested_url, item.final_url, item.hops, expected_reached=reached
            )

    def _tally(self) -> LandingTally | None:
        if self.landings is None and self.runtime.job_landings is None:
            audit = self.runtime.config.check.audit
            if audit.on("many_to_one"):
                self.landings = LandingTally(audit.many_to_one_rows, audit.many_to_one_share)
        return self.landings

    def _many_to_one(self) -> ManyToOneSeen | None:
        """The flagged landings: this crawl's own, or the job's closing judgement."""
        if self.landings is not None:
            return _seen(self.landings.result())
        judged = self.runtime.job_landings
        return judged() if judged is not None else None

    def spider_closed(self, reason: str) -> None:
        many = self._many_to_one()
        if many is not None and many.rows:
            self.stats.set_value("urlcheck/warning/many_to_one", many.rows)
            self.stats.set_value("urlcheck/many_to_one/urls", many.landings)
        stats = self.stats.get_stats()
        lines = [f"urlcheck summary ({reason}): {stats.get('urlcheck/rows', 0)} rows checked"]
        for title, prefix in (
            ("first status", "urlcheck/status/"),
            ("final status", "urlcheck/final_status/"),
            ("verdicts", "urlcheck/verdict/"),
            ("failed checks", "urlcheck/reason/"),
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
        if many is not None and many.landings:
            shown = "; ".join(
                f"{printable(url)} ({rows} rows)" for url, rows in many.urls[:MANY_TO_ONE_SHOWN]
            )
            more = many.landings - MANY_TO_ONE_SHOWN
            lines.append(
                f"  many rows, one landing URL (many_to_one): {shown}"
                + (f"; and {more} more" if more > 0 else "")
            )
        self.block = "\n".join(lines)
        logger.info("%s", self.block)


def _seen(many: ManyToOne) -> ManyToOneSeen:
    """A crawl's own judgement in the shape of the job's."""
    urls = [(x.url, len(x.rows)) for x in many.landings[:MANY_TO_ONE_SHOWN]]
    return ManyToOneSeen(urls, len(many.landings), len(many.rows))


def wall_vendor(item: Result) -> str:
    """The vendor of the wall a ``blocked`` row ended on (its last hop names it)."""
    last = item.chain[-1] if item.chain else None
    return (last.get("vendor") if last is not None else None) or GENERIC_WALL
