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

if TYPE_CHECKING:
    from pathlib import Path


def row_url_hashes(csv_path: Path) -> array[int]:
    """The hash (:func:`urlcheck.check.result.url_hash`) of every data row's URL cell, by row
    number (index 0 unused)."""
    hashes = array("q", [0])
    with CsvSource(csv_path) as source:
        hashes.extend(map(url_hash, source.urls()))
    return hashes
