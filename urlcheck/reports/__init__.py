"""Reports from a job's results: the HTML report, Markdown and JUnit, the run-to-run diff.

Everything here reads ``results.jsonl`` as a stream and keeps aggregates plus capped samples,
so a million rows cost seconds and a few megabytes. The feed exporters
(:mod:`urlcheck.crawl.exporters`) and ``scrapy job report|diff`` are thin adapters.
This package MUST NOT import Scrapy, Twisted, or the adapters (``crawl``, ``spiders``,
``middlewares``, ``extensions``, ``commands``, ``config.crawlconfig``).
"""

from urlcheck.reports.aggregate import Aggregate, ReportData
from urlcheck.reports.source import ResultsSource, SourceError

__all__ = ["Aggregate", "ReportData", "ResultsSource", "SourceError"]
