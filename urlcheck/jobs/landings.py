"""``many_to_one`` over a whole job's results.jsonl, kept compact enough for a million-row job,
for ``scrapy job status`` and a job crawl's summary (docs/jobs.md; the check:
docs/urls-and-verdicts.md section 9.1).

Both judge with :class:`~urlcheck.check.manytoone.HashedLandings`, three 8-byte numbers per
redirected row (24 MB a million): :class:`LandingHashes` reads results.jsonl, where the rows
without a redirect cost a bytes search and no parse, keeps each row's line offset, and reads
the URLs shown back from their first row's line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urlcheck.check.manytoone import HashedLandings, expected_reached
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


class LandingHashes(HashedLandings):
    """The redirected rows of a results file, read from its start on (:meth:`feed`); a row's
    place is its line's offset, from which a flagged landing's URL is read back."""

    def __init__(self, rows: int = 10, share: float = 50.0) -> None:
        super().__init__(rows, share)
        self.offset = 0  # results.jsonl is read up to here (whole lines)
        self.lines = 0  # lines read

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
        self.add_row(
            requested,
            final,
            offset,
            expected_reached=expected_reached(data.get("expected"), data.get("reasons")),
        )

    def result(self, path: Path, limit: int = SHOWN) -> ManyToOneSeen:
        """The flagged landing URLs so far; ``path`` (the file fed) gives back their URLs."""
        found = self.flagged()
        if not found:
            return ManyToOneSeen(read_rows=self.lines)
        # The URLs of the most landed on are read back (ties past _URL_READS: the first landed).
        top = sorted(found, key=lambda f: (-found[f][0], found[f][1]))[: max(limit, _URL_READS)]
        ranked = sorted(
            (
                (found[f][0], _url_at(path, found[f][1]) or f"(the line at byte {found[f][1]})")
                for f in top
            ),
            key=lambda x: (-x[0], x[1]),
        )
        return ManyToOneSeen(
            [(url, n) for n, url in ranked[:limit]],
            len(found),
            sum(n for n, _ in found.values()),
            self.lines,
        )


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
