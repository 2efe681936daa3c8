"""``many_to_one``: many redirected rows landing on one URL, a sign of a migration that sends old
pages to a catch-all page rather than to their own (docs/urls-and-verdicts.md section 9.1).

It needs every row, so it is computed once the rows are written, never on a row's own line:
the summary at the end of a crawl, the reports, ``job status`` and ``job diff`` read it from
results.jsonl and flag the rows there. A row counts when its chain redirected and ended at a
response, and it was not sent where its expected target says (the sheet asked for that one).
A final URL is flagged when more than ``rows`` such rows land on it, or, for a source host with
at least :data:`SHARE_FLOOR` of them, more than ``share`` percent of the host's redirected rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from urlcheck.check.urls import InvalidURL, comparable, host_key

__all__ = ["SHARE_FLOOR", "Landing", "LandingTally", "ManyToOne", "expected_reached"]

SHARE_FLOOR = 3  # the share rule needs this many rows: 2 of a host's 3 redirects is no pattern


@dataclass(slots=True)
class Landing:
    """One final URL many rows land on."""

    url: str  # as the first row that landed there had it
    rows: list[int] = field(default_factory=list)
    by_host: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class ManyToOne:
    """The flagged final URLs, most rows first, and every row flagged."""

    landings: list[Landing]
    rows: frozenset[int]

    def to_dict(self, limit: int = 20) -> list[dict[str, Any]]:
        return [{"url": x.url, "rows": len(x.rows)} for x in self.landings[:limit]]


class LandingTally:
    """Rows added one at a time (a crawl's items, a results file's lines), judged at the end."""

    def __init__(self, rows: int = 10, share: float = 50.0) -> None:
        self.rows_limit = rows
        self.share = share
        self._landings: dict[str, Landing] = {}
        self._redirected: Counter[str] = Counter()  # a source host's redirected rows

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
        host = host_key(requested_url)
        self._redirected[host] += 1
        if expected_reached:
            return
        try:
            key = comparable(final_url)
        except InvalidURL:
            key = final_url
        landing = self._landings.get(key)
        if landing is None:
            landing = self._landings[key] = Landing(final_url)
        landing.rows.append(row)
        landing.by_host[host] += 1

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
        flagged = [x for x in self._landings.values() if self._flagged(x)]
        flagged.sort(key=lambda x: (-len(x.rows), x.url))
        return ManyToOne(flagged, frozenset(row for x in flagged for row in x.rows))

    def _flagged(self, landing: Landing) -> bool:
        if len(landing.rows) > self.rows_limit:
            return True
        return any(
            n >= SHARE_FLOOR and n * 100 > self.share * self._redirected[host]
            for host, n in landing.by_host.items()
        )


def expected_reached(expected: object, reasons: object) -> bool:
    """The row had an expected target and its chain ended there."""
    if not isinstance(expected, str) or not expected.strip():
        return False
    found = reasons if isinstance(reasons, list) else ()
    return "final_url_mismatch" not in found and "invalid_expected" not in found
