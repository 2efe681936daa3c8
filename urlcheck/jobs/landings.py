"""``many_to_one`` over a whole job's results.jsonl, kept compact enough for a million-row job,
for ``scrapy job status`` (docs/jobs.md; the check: docs/urls-and-verdicts.md section 9.1).

:class:`~urlcheck.check.manytoone.LandingTally` keeps every landing URL and its rows: fine for a
report, too much for a crawl that runs beside a million rows. :class:`LandingHashes` keeps, per
redirected row, three 8-byte numbers (the hash of its comparable final URL, that of its source
host, the offset of its line): 24 MB for a million redirected rows, nothing for the others,
which a bytes search skips without parsing. Its judgement is the tally's: counting sketches
pick the few final URLs (and host, URL pairs) that can reach the limits, which are then counted
exactly; the URLs shown are read back from their first row's line.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urlcheck.check.manytoone import SHARE_FLOOR, expected_reached
from urlcheck.check.urls import InvalidURL, comparable, host_key
from urlcheck.jobs.nofollow import open_nofollow

__all__ = ["SHOWN", "LandingHashes", "ManyToOneSeen"]

SHOWN = 20  # landing URLs kept in meta.json
_URL_CHARS = 2048  # a landing URL as meta.json keeps it (a hostile site's can be huge)
_CHUNK = 1 << 16  # a small read buffer: the crawl reads the file beside its own tail reads
_LINE_MAX = 1 << 24  # a line to read back longer than this is not read
_URL_READS = 200  # landing URLs read back from results.jsonl at most, to pick the SHOWN
# The redirect count, as Result.to_json_line writes it (a string value escapes its quotes).
_HOPS_RE = re.compile(rb', "hops": (0|[1-9][0-9]{0,5}), "chain": ')


@dataclass(frozen=True)
class ManyToOneSeen:
    """meta.json's ``many_to_one``: the flagged landing URLs (most rows first, at most
    :data:`SHOWN`), how many there are, the rows landing on them, over the first ``read_rows``
    lines of results.jsonl."""

    urls: list[tuple[str, int]] = field(default_factory=list)
    landings: int = 0
    rows: int = 0
    read_rows: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "urls": [{"url": url, "rows": n} for url, n in self.urls],
            "landings": self.landings,
            "rows": self.rows,
            "read_rows": self.read_rows,
        }

    @classmethod
    def from_dict(cls, data: object) -> ManyToOneSeen:
        if not isinstance(data, Mapping):
            raise ValueError("many_to_one must be an object or null")
        urls = data.get("urls", [])
        if not isinstance(urls, list):
            raise ValueError("many_to_one.urls must be a list")
        found: list[tuple[str, int]] = []
        for item in urls[:SHOWN]:
            if not isinstance(item, Mapping) or not isinstance(item.get("url"), str):
                raise ValueError("many_to_one.urls items must be objects with a url")
            found.append((item["url"][:_URL_CHARS], _count(item, "rows", "many_to_one.urls")))
        return cls(
            found,
            _count(data, "landings", "many_to_one"),
            _count(data, "rows", "many_to_one"),
            _count(data, "read_rows", "many_to_one"),
        )


def _count(data: Mapping[str, Any], key: str, where: str) -> int:
    value = data.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{where}.{key} must be a non-negative integer")
    return value


def _nonzero(value: int) -> int:
    return value or 1  # 0 marks a row that reached its expected target


class LandingHashes:
    """The redirected rows of a results file, read from its start on (:meth:`feed`)."""

    def __init__(self, rows: int = 10, share: float = 50.0) -> None:
        self.rows_limit = rows
        self.share = share
        self.offset = 0  # results.jsonl is read up to here (whole lines)
        self.lines = 0  # lines read
        self.finals = array("q")  # per redirected row: its landing's hash, 0 if it reached
        self.hosts = array("q")  # its source host's hash
        self.offsets = array("q")  # its line's offset

    def nbytes(self) -> int:
        return sum(a.itemsize * len(a) for a in (self.finals, self.hosts, self.offsets))

    def feed(self, path: Path, max_bytes: int | None = None) -> int:
        """Read the whole lines past :attr:`offset` (at most about ``max_bytes`` of them); the
        lines read. Lines without a redirect cost a bytes search each."""
        read = 0
        try:
            src = open_nofollow(path, "rb", buffering=_CHUNK)
        except FileNotFoundError:
            return 0
        with src:
            src.seek(self.offset)
            for line in src:
                if not line.endswith(b"\n"):
                    break  # still being written: the next call reads it
                at = self.offset
                self.offset += len(line)
                read += 1
                m = _HOPS_RE.search(line)
                if m is None or m[1] != b"0":
                    self._add_line(line, at)
                if max_bytes is not None and (max_bytes := max_bytes - len(line)) <= 0:
                    break
        self.lines += read
        return read

    def _add_line(self, line: bytes, offset: int) -> None:
        try:
            data = json.loads(line)
        except ValueError:
            return
        if not isinstance(data, dict):
            return
        hops, final, requested = data.get("hops"), data.get("final_url"), data.get("requested_url")
        if not isinstance(data.get("row"), int) or not isinstance(hops, int) or not hops:
            return
        if not isinstance(final, str) or not isinstance(requested, str):
            return
        self.add(
            requested,
            final,
            offset,
            expected_reached=expected_reached(data.get("expected"), data.get("reasons")),
        )

    def add(
        self, requested_url: str, final_url: str, offset: int, *, expected_reached: bool = False
    ) -> None:
        """One redirected row that ended at a response (LandingTally.add's rows)."""
        self.hosts.append(hash(host_key(requested_url)))
        self.offsets.append(offset)
        if expected_reached:
            self.finals.append(0)
            return
        try:
            key = comparable(final_url)
        except InvalidURL:
            key = final_url
        self.finals.append(_nonzero(hash(key)))

    def result(self, path: Path, limit: int = SHOWN) -> ManyToOneSeen:
        """The flagged landing URLs so far; ``path`` (the file fed) gives back their URLs."""
        finals, hosts = self.finals, self.hosts
        flagged = set(_at_least(lambda: (f for f in finals if f), len(finals), self.rows_limit + 1))
        # A (host, landing) pair as one number: two random 64-bit hashes XORed.
        pairs = _at_least(
            lambda: (h ^ f for h, f in zip(hosts, finals, strict=True) if f),
            len(finals),
            SHARE_FLOOR,
        )
        if pairs:
            # The candidates' hosts and their landings: another pass, now that they are few.
            wanted: dict[int, set[int]] = {}
            for h, f in zip(hosts, finals, strict=True):
                if f and h ^ f in pairs:
                    wanted.setdefault(h, set()).add(f)
            redirected = dict.fromkeys(wanted, 0)
            for h in hosts:
                if h in redirected:
                    redirected[h] += 1
            for h, landed in wanted.items():
                for f in landed:
                    n = pairs[h ^ f]
                    if n * 100 > self.share * redirected[h]:
                        flagged.add(f)
        if not flagged:
            return ManyToOneSeen(read_rows=self.lines)
        counts = dict.fromkeys(flagged, 0)
        first: dict[int, int] = {}
        for f, offset in zip(finals, self.offsets, strict=True):
            if f in counts:
                counts[f] += 1
                first.setdefault(f, offset)
        # The URLs of the most landed on are read back (ties past _URL_READS: the first landed).
        top = sorted(counts, key=lambda f: (-counts[f], first[f]))[: max(limit, _URL_READS)]
        ranked = sorted(
            ((counts[f], _url_at(path, first[f]) or f"(the line at byte {first[f]})") for f in top),
            key=lambda x: (-x[0], x[1]),
        )
        return ManyToOneSeen(
            [(url, n) for n, url in ranked[:limit]],
            len(counts),
            sum(counts.values()),
            self.lines,
        )


def _at_least(values: Callable[[], Iterable[int]], size: int, floor: int) -> dict[int, int]:
    """The values (``values()`` gives them, twice) seen at least ``floor`` times, with their
    exact counts, without a dict of every value: a counting sketch (a byte per bucket, 4
    buckets per value) finds the few buckets that can hold such a value; only their values are
    counted."""
    buckets = max(1024, 4 * size)
    sketch = bytearray(buckets)
    for v in values():
        i = v % buckets
        if sketch[i] < 255:
            sketch[i] += 1
    counts: dict[int, int] = {}
    for v in values():
        if sketch[v % buckets] >= floor:
            counts[v] = counts.get(v, 0) + 1
    return {v: n for v, n in counts.items() if n >= floor}


def _url_at(path: Path, offset: int) -> str | None:
    """The final URL on the line at ``offset``, cut to what meta.json keeps."""
    try:
        with open_nofollow(path, "rb") as src:
            src.seek(offset)
            line = src.readline(_LINE_MAX)
        data = json.loads(line)
    except (OSError, ValueError):
        return None
    url = data.get("final_url") if isinstance(data, dict) else None
    return url[:_URL_CHARS] if isinstance(url, str) else None
