"""The crawl's log, safe for a terminal: every record its handlers emit is made printable
(:class:`urlcheck.check.printable.PrintableRecords`), so a CSV's or a site's text logged by any
component (a file name, a URL, an error) shows its ESC sequences and bidi controls as escapes.

Scrapy installs its log handler on the root logger, and replaces it once the crawler's settings
are final (after the extensions are built); this extension adds the filter to the root logger's
handlers when the engine starts and when the spider opens (each handler once), before the spider
reads its input. It removes nothing: a filter that only escapes is harmless to whatever logs
after the crawl in the same process.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy import signals

from urlcheck.check.printable import install

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class PrintableLogs:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = cls()
        for signal in (signals.engine_started, signals.spider_opened):
            crawler.signals.connect(extension.install, signal=signal)
        return extension

    def install(self) -> None:
        install(logging.getLogger().handlers)
