"""Pages of a job's results.jsonl, read from byte offsets, so a page costs O(page), not O(job).

The file is append-only within a run, and a re-run or re-check replaces it (a rename, so a new
inode); a page is therefore addressed by a byte offset (``after``) plus the file's generation,
and holds only whole lines (a line still being written is left for the next read). A client
that asks again from ``next`` gets every line exactly once.

Unfiltered pages and pages filtered by text read the file from the offset (text: up to a byte
budget per request, then ``more`` says go on from ``next``). Pages filtered by verdict, status
class, error or host use :class:`ResultsIndex`: line starts and posting lists, caught up from
the last byte indexed on each use, so each byte is parsed once in the server's life, and a page
then costs the page plus a few binary searches.
"""

from __future__ import annotations

import json
import re
import threading
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urlcheck.check.result import STATUS_CLASSES, status_class
from urlcheck.check.urls import host_key
from urlcheck.jobs.counts import VERDICTS, verdict_key
from urlcheck.serve.sites import site_of

PAGE_DEFAULT = 50
PAGE_MAX = 500
SCAN_BUDGET = 8 << 20  # bytes a text search or a poll reads per request at most
FIELD_MAX = 4096  # characters of one string field in an answer; the rest is cut ("…")
_CHUNK = 1 << 20
_FIRST_READ = 64 << 10
_ERROR = re.compile(r"[a-z][a-z0-9_]{0,39}")
_EMPTY = array("I")


class FilterError(ValueError):
    """A filter the API cannot apply; the message names it."""


@dataclass(frozen=True, slots=True)
class Filters:
    verdict: str | None = None  # pass, fail, none
    status: str | None = None  # 2xx ... 5xx, other, error
    error: str | None = None  # an error kind
    host: str | None = None  # the row's first host
    text: str | None = None  # in the row's URLs, error or expected target

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> Filters:
        def value(name: str, limit: int) -> str | None:
            raw = (query.get(name) or "").strip()
            if len(raw) > limit:
                raise FilterError(f"{name}: at most {limit} characters")
            return raw or None

        verdict, status = value("verdict", 8), value("status", 8)
        error, host, text = value("error", 40), value("host", 255), value("text", 200)
        if verdict is not None and verdict not in VERDICTS:
            raise FilterError(f"verdict must be one of {', '.join(VERDICTS)}")
        if status is not None and status not in STATUS_CLASSES:
            raise FilterError(f"status must be one of {', '.join(STATUS_CLASSES)}")
        if error is not None and not _ERROR.fullmatch(error):
            raise FilterError("error must be an error kind such as timeout or dns")
        return cls(verdict, status, error, _host_of(host) if host else None, text)

    def indexed(self) -> list[tuple[str, str]]:
        """The indexed criteria, as posting-list keys."""
        pairs = (("verdict", self.verdict), ("status", self.status), ("error", self.error))
        keys = [(name, value) for name, value in pairs if value is not None]
        if self.host is not None:
            keys.append(("host", self.host))
        return keys

    @property
    def empty(self) -> bool:
        return not self.indexed() and self.text is None

    def matches(self, result: Mapping[str, Any]) -> bool:
        if self.verdict is not None and verdict_key(result.get("verdict")) != self.verdict:
            return False
        if self.status is not None and status_class(result.get("final_status")) != self.status:
            return False
        if self.error is not None and result.get("error") != self.error:
            return False
        if self.host is not None and row_host(result) != self.host:
            return False
        return self.text is None or self.text.lower() in searchable(result)


def _host_of(given: str) -> str:
    """The host a filter names, keyed as rows are (`row_host`): what a user pastes, a host, a
    host with its port, a URL, a name in Unicode, finds its rows."""
    return host_key(given if "//" in given else f"//{given}") or given.lower()


def row_host(result: Mapping[str, Any]) -> str:
    url = result.get("requested_url") or result.get("url") or ""
    return host_key(url) if isinstance(url, str) else ""


def searchable(result: Mapping[str, Any]) -> str:
    parts = [result.get(k) for k in ("url", "final_url", "expected", "error", "error_message")]
    for hop in result.get("chain") or ():
        if isinstance(hop, dict):
            parts.extend((hop.get("url"), hop.get("location"), hop.get("location_raw")))
    return "\n".join(p for p in parts if isinstance(p, str)).lower()


def bounded(value: Any) -> Any:
    """``value`` with every string cut to FIELD_MAX characters: answers stay small whatever a
    site sent (a Location may be 64 KiB)."""
    if isinstance(value, str):
        return value if len(value) <= FIELD_MAX else value[:FIELD_MAX] + "…"
    if isinstance(value, list):
        return [bounded(v) for v in value]
    if isinstance(value, dict):
        return {str(k): bounded(v) for k, v in value.items()}
    return value


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("row"), int) else None


def whole_lines(path: Path, start: int, budget: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line) for each whole line from ``start`` that ends within ``budget`` bytes of
    it (the first line always, however long: a caller always gets on)."""
    try:
        source = path.open("rb")
    except FileNotFoundError:
        return
    limit = start + budget
    size = _FIRST_READ  # a page is a few dozen lines: read that much first, then more
    with source:
        source.seek(start)
        offset, pending = start, b""
        while offset < limit or offset == start:
            chunk = source.read(size)
            size = min(size * 4, _CHUNK)
            if not chunk:
                return
            data = pending + chunk
            begin = 0
            while (newline := data.find(b"\n", begin)) >= 0:
                end = offset + newline + 1 - begin
                if end > limit and offset > start:
                    return
                yield offset, data[begin : newline + 1]
                offset, begin = end, newline + 1
            pending = data[begin:]


@dataclass
class Page:
    results: list[dict[str, Any]]
    next: int  # the offset to ask from for what follows
    more: bool  # there may be more lines before the end of the file (a full page, or a budget)
    total: int | None = None  # lines matching the filters, when known cheaply


def read_after(
    path: Path, after: int, limit: int, filters: Filters, *, budget: int = SCAN_BUDGET
) -> Page:
    """Up to ``limit`` matching lines after ``after``, reading the file forward."""
    if limit <= 0:
        return Page([], after, False)
    results: list[dict[str, Any]] = []
    position = after
    for offset, line in whole_lines(path, after, budget):
        if len(results) >= limit:
            return Page(results, position, True)
        position = offset + len(line)
        result = _decode(line)
        if result is not None and (filters.empty or filters.matches(result)):
            results.append(bounded(result))
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        size = 0
    return Page(results, position, size - position > 0 and _has_newline(path, position))


def _has_newline(path: Path, position: int) -> bool:
    """Whether a whole line starts at ``position`` (a budget ran out), not just a torn tail."""
    with path.open("rb") as source:
        source.seek(position)
        while chunk := source.read(_CHUNK):
            if b"\n" in chunk:
                return True
    return False


class ResultsIndex:
    """Line starts and posting lists (verdict, status class, error, first host) of one results
    file, and the sites its chains visited. Thread-safe; rebuilt when the file is replaced."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._reset(None)

    def _reset(self, ident: tuple[int, int] | None) -> None:
        self.ident = ident
        self.end = 0  # bytes indexed: the end of the last whole line
        self.starts = array("q")
        self.postings: dict[tuple[str, str], array[int]] = {}
        self.sites: set[str] = set()

    @property
    def lines(self) -> int:
        return len(self.starts)

    def catch_up(self, budget: int | None = None) -> None:
        """Index what was appended since the last call (about ``budget`` bytes of it)."""
        with self._lock:
            try:
                info = self.path.stat()
            except FileNotFoundError:
                self._reset(None)
                return
            ident = (info.st_dev, info.st_ino)
            if ident != self.ident or info.st_size < self.end:
                self._reset(ident)
            if info.st_size > self.end:
                size = info.st_size - self.end
                for offset, line in whole_lines(self.path, self.end, min(size, budget or size)):
                    self._add(offset, line)
                    self.end = offset + len(line)

    def _add(self, offset: int, line: bytes) -> None:
        number = len(self.starts)
        self.starts.append(offset)
        result = _decode(line)
        if result is None:
            return  # an unreadable line: counted in no list
        keys = [
            ("verdict", verdict_key(result.get("verdict"))),
            ("status", status_class(result.get("final_status"))),
            ("host", row_host(result)),
        ]
        error = result.get("error")
        if isinstance(error, str):
            keys.append(("error", error))
        for key in keys:
            self.postings.setdefault(key, array("I")).append(number)
        for hop in result.get("chain") or ():
            if isinstance(hop, dict) and isinstance(hop.get("url"), str):
                self.sites.add(site_of(host_key(hop["url"])))

    def page(self, after: int, limit: int, filters: Filters) -> Page:
        """Up to ``limit`` lines after ``after`` matching ``filters`` (at least one indexed)."""
        self.catch_up()
        with self._lock, self.path.open("rb") as source:
            lists = sorted((self.postings.get(key, _EMPTY) for key in filters.indexed()), key=len)
            first, others = lists[0], lists[1:]
            total = len(first) if not others and filters.text is None else None
            starts, end = self.starts, self.end
            results: list[dict[str, Any]] = []
            read = 0
            for n in first[bisect_left(first, bisect_left(starts, after)) :]:
                if not _in_all(n, others):
                    continue
                start = starts[n]
                if len(results) >= limit or read > SCAN_BUDGET:
                    return Page(results, start, True, total)
                stop = starts[n + 1] if n + 1 < len(starts) else end
                source.seek(start)
                line = source.read(stop - start)
                read += len(line)
                result = _decode(line)
                if result is not None and (filters.text is None or filters.matches(result)):
                    results.append(bounded(result))
            return Page(results, max(end, after), False, total)


def _in_all(number: int, lists: list[array[int]]) -> bool:
    for values in lists:
        at = bisect_left(values, number)
        if at >= len(values) or values[at] != number:
            return False
    return True
