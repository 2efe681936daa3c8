"""What a crawl does when it cannot write its results or its job files (a full disk, a
filesystem gone read-only, a quota): it stops at the first failure instead of going on
requesting rows whose results it would throw away.

The first failed write logs one ERROR line naming the file and the error, and closes the spider
with reason ``write_failed``: no new row starts, the requests in flight end, and the rows in
hand get no line (the results pipeline writes nothing more), so they are simply not done. The
job is left paused (when meta.json can still be written) and the crawl exits
``WRITE_FAILED`` (docs/jobs.md): once there is room, running it again checks exactly the rows
without a line.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import deferred_from_coro

from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

REASON = "write_failed"  # the spider's close reason
STAT = "urlcheck/write_failed"


@dataclass(frozen=True)
class WriteFailure:
    path: Path
    error: str
    also: set[Path] = field(default_factory=set)  # other files that failed since, each told once


def describe(exc: OSError) -> str:
    return f"[Errno {exc.errno}] {exc.strerror}" if exc.strerror else str(exc)


def write_failed(crawler: Crawler, path: Path, exc: OSError) -> None:
    """Stop the crawl for a failed write of ``path`` (the first failure only; later ones are
    what it causes and are not reported again)."""
    rt = runtime(crawler)
    first = rt.write_failure
    if first is not None:
        if path != first.path and path not in first.also:
            first.also.add(path)
            logger.error("Could not write %s either: %s", path, describe(exc))
        return
    rt.write_failure = WriteFailure(path, describe(exc))
    # A log file on the same full disk fails too: Python's logging would print a traceback
    # for each record it could not write. The one line that matters is below (and on stderr
    # at the end when the log goes to a file: urlcheck.commands.crawl).
    logging.raiseExceptions = False
    if crawler.stats is not None:
        crawler.stats.set_value(STAT, str(path))
    jobdir = crawler.settings.get("JOBDIR")
    logger.error(
        "Could not write %s: %s. Stopping: %s; the rows without a line are checked when it "
        "runs again, once there is room",
        path,
        describe(exc),
        f"job {jobdir} paused" if jobdir else "no new row starts",
    )
    # Not from inside the item being written: Scrapy's scraper would wait for it to end before
    # closing, and for an item of start() (a row given its line without a request) it never
    # sees that end, so the close hung. The spider's start() stops feeding meanwhile.
    call_later(_CLOSE_AFTER, _close, crawler)


_CLOSE_AFTER = 0.1  # seconds: the item in hand is done by then


def _close(crawler: Crawler) -> None:
    engine = crawler.engine
    if engine is not None and engine.spider is not None and engine.running:
        deferred_from_coro(engine.close_spider_async(reason=REASON)).addErrback(
            lambda failure: logger.error("Closing the spider failed: %s", failure.value)
        )
