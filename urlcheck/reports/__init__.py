"""Reports from a job's results: the HTML report, Markdown and JUnit, the run-to-run diff.

Everything here reads ``results.jsonl`` as a stream and keeps aggregates plus capped samples,
so a million rows cost seconds and a few megabytes. Scrapy-free; the feed exporters
(:mod:`urlcheck.exporters`) and ``scrapy job report|diff`` are thin adapters.
"""

from urlcheck.reports.aggregate import Aggregate, ReportData
from urlcheck.reports.source import ResultsSource, SourceError

__all__ = ["Aggregate", "ReportData", "ResultsSource", "SourceError"]
