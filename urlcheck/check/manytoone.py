"""``many_to_one``: many redirected rows landing on one URL, a sign of a migration that sends old
pages to a catch-all page rather than to their own (docs/urls-and-verdicts.md section 9.1).

It needs every row, so it is computed once the rows are written, never on a row's own line:
the summary at the end of a crawl, the reports, ``job status`` and ``job diff`` read it from
results.jsonl and flag the rows there. A row counts when its chain redirected and ended at a
response, and it was not sent where its expected target says (the sheet asked for that one).
A final URL is flagged when more than ``rows`` such rows land on it, or, for a source host with
at least :data:`SHARE_FLOOR` of them, more than ``share`` percent of the host's redirected rows.

A million redirected rows each landing on a page of its own is the common case of an audit,
and nothing in it is flagged: :class:`HashedLandings` keeps per redirected row three 8-byte
numbers (its landing's hash, its source host's, where the row is), 24 MB a million, and no URL;
counting sketches pick the few landings that can reach the limits, which are then counted
exactly.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from urlcheck.check.urls import InvalidURL, comparable, host_key

__all__ = [
    "SHARE_FLOOR",
    "HashedLandings",
    "Landing",
    "LandingTally",
    "ManyToOne",
    "expected_reached",
]

SHARE_FLOOR = 3  # the share rule needs this many rows: 2 of a host's 3 redirects is no pattern


@dataclass(slots=True)
class Landing:
    """One final URL many rows land on."""

    url: str  # as one of the first rows that landed there had it
    rows: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ManyToOne:
    """The flagged final URLs, most rows first, and every row flagged."""

    landings: list[Landing]
    rows: frozenset[int]

    def to_dict(self, limit: int = 20) -> list[dict[str, Any]]:
        return [{"url": x.url, "rows": len(x.rows)} for x in self.landings[:limit]]


def landing_key(final_url: str) -> int:
    """A landing as a non-zero number: the hash of its URL compared as verdicts compare."""
    try:
        key = comparable(final_url)
    except InvalidURL:
        key = final_url
    return hash(key) or 1  # 0 marks a row that reached its expected target


class HashedLandings:
    """The redirected rows, as numbers; ``place`` says where a row is (its number, its line's
    offset): what the judgement gives back for the landings it flags."""

    def __init__(self, rows: int = 10, share: float = 50.0) -> None:
        self.rows_limit = rows
        self.share = share
        self.finals = array("q")  # per redirected row: its landing's key, 0 if it reached
        self.hosts = array("q")  # its source host's hash
        self.places = array("q")  # where it is

    def nbytes(self) -> int:
        return sum(a.itemsize * len(a) for a in (self.finals, self.hosts, self.places))

    def add_row(
        self, requested_url: str, final_url: str, place: int, *, expected_reached: bool = False
    ) -> int:
        """One redirected row that ended at a response; its landing's key (0: not counted)."""
        self.hosts.append(hash(host_key(requested_url)))
        self.places.append(place)
        final = 0 if expected_reached else landing_key(final_url)
        self.finals.append(final)
        return final

    def flagged(self) -> dict[int, tuple[int, int]]:
        """The flagged landings: key -> (rows landing there, the first one's place)."""
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
                    if pairs[h ^ f] * 100 > self.share * redirected[h]:
                        flagged.add(f)
        counts = dict.fromkeys(flagged, 0)
        first: dict[int, int] = {}
        for f, place in zip(finals, self.places, strict=True):
            if f in counts:
                counts[f] += 1
                first.setdefault(f, place)
        return {f: (n, first[f]) for f, n in counts.items()}


class LandingTally(HashedLandings):
    """Rows added one at a time (a crawl's items, a results file's lines), judged at the end.

    The URL a flagged landing is shown with is kept from its second row on (a landing is
    flagged from three rows): a two-bit filter of the keys seen tells a landing seen before,
    so the rows that land on a page of their own keep no URL (a false positive keeps one)."""

    def __init__(self, rows: int = 10, share: float = 50.0) -> None:
        super().__init__(rows, share)
        self._urls: dict[int, str] = {}
        self._seen = bytearray(1 << 12)  # bits; grows with the rows (16 a row)

    def add(
        self,
        row: int,
        requested_url: str | None,
        final_url: str | None,
        hops: int,
        *,
        expected_reached: bool = False,
    ) -> None:
        if not hops or final_url is None or requested_url is None:
            return
        final = self.add_row(requested_url, final_url, row, expected_reached=expected_reached)
        if final:
            if len(self.finals) << 1 > len(self._seen):
                self._grow()
            if self._mark(final):
                self._urls.setdefault(final, final_url)

    def _mark(self, key: int) -> bool:
        """Set the key's two bits; whether both were set already (seen before, or not)."""
        seen, bits = self._seen, len(self._seen) << 3
        i, j = key % bits, (key >> 32) % bits
        had = seen[i >> 3] >> (i & 7) & seen[j >> 3] >> (j & 7) & 1
        seen[i >> 3] |= 1 << (i & 7)
        seen[j >> 3] |= 1 << (j & 7)
        return bool(had)

    def _grow(self) -> None:
        self._seen = bytearray(len(self._seen) << 1)
        for f in self.finals:
            if f:
                self._mark(f)

    def add_line(self, data: Mapping[str, Any]) -> None:
        """A results.jsonl line, parsed (a result's ``to_dict()`` too)."""
        row, hops = data.get("row"), data.get("hops")
        requested, final = data.get("requested_url"), data.get("final_url")
        if not isinstance(row, int) or not isinstance(hops, int) or not isinstance(final, str):
            return
        self.add(
            row,
            requested if isinstance(requested, str) else None,
            final,
            hops,
            expected_reached=expected_reached(data.get("expected"), data.get("reasons")),
        )

    def result(self) -> ManyToOne:
        found = self.flagged()
        rows: dict[int, list[int]] = {f: [] for f in found}
        for f, row in zip(self.finals, self.places, strict=True):
            if f in rows:
                rows[f].append(row)
        # A flagged landing was seen three times at least: its URL is kept.
        landings = [Landing(self._urls.get(f, "(unknown)"), rows[f]) for f in found]
        landings.sort(key=lambda x: (-len(x.rows), x.url))
        return ManyToOne(landings, frozenset(row for x in landings for row in x.rows))


def expected_reached(expected: object, reasons: object) -> bool:
    """The row had an expected target and its chain ended there."""
    if not isinstance(expected, str) or not expected.strip():
        return False
    found = reasons if isinstance(reasons, list) else ()
    return "final_url_mismatch" not in found and "invalid_expected" not in found


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
