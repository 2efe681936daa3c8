"""Whether a results file is this job's: each line's URL must be its row's URL in the input.

A results path can be another job's (``-a out=`` pointing at it) or not results at all; taking
its rows as done would skip rows nobody checked. So before a resume trusts a results file, the
input's URLs are read once into a compact array of hashes (8 bytes a row) for
:func:`urlcheck.jobs.done.scan_results` to compare each line with; a file that is not the job's
is renamed aside, never read as done and never rewritten.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

from urlcheck.check.result import url_hash
from urlcheck.input.csvfile import CsvSource
from urlcheck.input.kind import open_source
from urlcheck.input.sitemap import URLSET, SitemapSource

if TYPE_CHECKING:
    from pathlib import Path


def row_url_hashes(input_path: Path, sheet: str | None = None) -> array[int] | None:
    """The hash (:func:`urlcheck.check.result.url_hash`) of every row's URL cell, by row number
    (index 0 unused; 0 for a number no row has); of a workbook, the rows of ``sheet`` (else
    its first). None for a sitemap index: its rows come from the sitemaps it names, fetched by
    the crawl."""
    source = open_source(input_path)
    if source.kind == "xlsx" and sheet:
        source.close()
        source = open_source(input_path, sheet=sheet)
    try:
        if isinstance(source, CsvSource):
            hashes = array("q", [0])
            hashes.extend(map(url_hash, source.urls()))  # rows are dense: the fast path
            return hashes
        if isinstance(source, SitemapSource) and source.root != URLSET:
            return None
        hashes = array("q", [0])
        for record in source.records():
            if record.row >= len(hashes):
                hashes.extend([0] * (record.row + 1 - len(hashes)))
            hashes[record.row] = url_hash(record.url)
        return hashes
    finally:
        source.close()
