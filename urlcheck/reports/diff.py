"""What changed between two runs: rows matched by row number and URL.

Each run is indexed in two compact arrays (byte offset and a hash of the compared fields, 16
bytes a row) rather than as objects, so a million-row diff stays small and is walked in row
order; a line is parsed again only when its hash differs from the other run's.
"""

from __future__ import annotations

import json
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from urlcheck.check.manytoone import LandingTally
from urlcheck.check.printable import printable
from urlcheck.check.result import status_class
from urlcheck.reports.source import ResultsSource

FIELDS = ("status", "final_url", "final_status", "verdict", "error", "reasons", "warnings")
_DECODER = json.JSONDecoder()


@dataclass(slots=True)
class RowChange:
    row: int
    url: str
    change: str  # changed, added (only in NEW) or removed (only in OLD)
    fields: dict[str, list[Any]] = field(default_factory=dict)  # name -> [old, new]
    regressions: list[str] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "url": self.url,
            "change": self.change,
            "regressed": self.regressed,
            "fields": self.fields,
            "regressions": self.regressions,
        }


@dataclass
class DiffSummary:
    compared: int = 0
    changed: int = 0
    regressed: int = 0
    added: int = 0
    removed: int = 0
    # Rows of both runs by check (reasons and warnings codes): newly found, no longer found.
    checks_found: Counter[str] = field(default_factory=Counter)
    checks_cleared: Counter[str] = field(default_factory=Counter)
    many_to_one: tuple[int, int] = (0, 0)  # rows flagged in the old run, the new (all rows)


def _key(result: dict[str, Any]) -> int:
    return hash(tuple(_hashable(result.get(name)) for name in ("url", *FIELDS)))


def _hashable(value: Any) -> Any:
    return tuple(map(str, value)) if isinstance(value, list) else value


def _codes(result: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for name in ("reasons", "warnings"):
        value = result.get(name)
        if isinstance(value, list):
            found.update(map(str, value))
    return found


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(byte offset, result) for each readable result line."""
    offset = 0
    decode = _DECODER.raw_decode  # json.loads, without its per-call checks
    with path.open("rb") as lines:
        for line in lines:
            start, offset = offset, offset + len(line)
            try:
                result = decode(line.decode("utf-8", "replace"))[0]
            except ValueError:
                continue
            if isinstance(result, dict) and isinstance(result.get("row"), int):
                yield start, result


def regressions(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    found = []
    if old.get("verdict") == "pass" and new.get("verdict") == "fail":
        found.append("verdict pass -> fail")
    elif old.get("verdict") == "fail" and new.get("verdict") == "fail":
        before, after = old.get("reasons"), new.get("reasons")
        if isinstance(before, list) and isinstance(after, list):
            found += [f"new failed check {code}" for code in after if code not in before]
    before, after = status_class(old.get("final_status")), status_class(new.get("final_status"))
    if before == "2xx" and after in ("4xx", "5xx"):
        found.append(f"final status {old['final_status']} -> {new['final_status']}")
    if new.get("error") and new.get("error") != old.get("error"):
        found.append(f"new error {new['error']}")
    return found


class _Index:
    """Where each row's line is in one run's file, and a hash of what it said."""

    def __init__(self, path: Path, landings: LandingTally | None = None) -> None:
        self.path = path
        self.offsets = array("q")
        self.keys = array("q")
        self.rows = 0
        for offset, result in _lines(path):
            if landings is not None and result.get("hops"):
                landings.add_line(result)
            row = result["row"]
            if row < 0:
                continue
            if row >= len(self.offsets):
                grow = row + 1 - len(self.offsets)
                self.offsets.extend([-1] * grow)
                self.keys.extend([0] * grow)
            if self.offsets[row] < 0:
                self.rows += 1
            self.offsets[row] = offset  # a later line for a row replaces an earlier one
            self.keys[row] = _key(result)

    def offset(self, row: int) -> int:
        return self.offsets[row] if 0 <= row < len(self.offsets) else -1

    def read(self, file: IO[bytes], offset: int) -> dict[str, Any]:
        file.seek(offset)
        result: dict[str, Any] = json.loads(file.readline())
        return result


def diff(old: Path, new: Path) -> Iterator[RowChange | DiffSummary]:
    """Each changed, added or removed row in row order, then the summary (last). Both paths
    are checked at once: SourceError when one is not a job directory or a results file."""
    old_source, new_source = ResultsSource.open(old), ResultsSource.open(new)
    return _changes(
        old_source.path,
        new_source.path,
        (old_source.many_to_one(), new_source.many_to_one()),
    )


def _changes(
    old_path: Path,
    new_path: Path,
    many_to_one: tuple[tuple[int, float] | None, tuple[int, float] | None] = (None, None),
) -> Iterator[RowChange | DiffSummary]:
    tallies = [LandingTally(*t) if t is not None else None for t in many_to_one]
    before, after = _Index(old_path, tallies[0]), _Index(new_path, tallies[1])
    summary = DiffSummary()
    summary.many_to_one = (
        len(tallies[0].result().rows) if tallies[0] is not None else 0,
        len(tallies[1].result().rows) if tallies[1] is not None else 0,
    )
    with old_path.open("rb") as old_file, new_path.open("rb") as new_file:
        for row in range(max(len(before.offsets), len(after.offsets))):
            old_at, new_at = before.offset(row), after.offset(row)
            if new_at < 0:
                if old_at >= 0:
                    summary.removed += 1
                    yield RowChange(row, _url(before.read(old_file, old_at)), "removed")
                continue
            if old_at < 0:
                summary.added += 1
                yield RowChange(row, _url(after.read(new_file, new_at)), "added")
                continue
            summary.compared += 1
            if before.keys[row] == after.keys[row]:
                continue
            old_result, result = before.read(old_file, old_at), after.read(new_file, new_at)
            if old_result.get("url") != result.get("url"):  # another URL on that row: no match
                summary.compared -= 1
                summary.removed += 1
                summary.added += 1
                yield RowChange(row, _url(old_result), "removed")
                yield RowChange(row, _url(result), "added")
                continue
            fields = {
                name: [old_result.get(name), result.get(name)]
                for name in FIELDS
                if old_result.get(name) != result.get(name)
            }
            if not fields:
                continue
            old_codes, new_codes = _codes(old_result), _codes(result)
            summary.checks_found.update(new_codes - old_codes)
            summary.checks_cleared.update(old_codes - new_codes)
            found = regressions(old_result, result)
            change = RowChange(row, _url(result), "changed", fields, found)
            summary.changed += 1
            summary.regressed += change.regressed
            yield change
    yield summary


def _url(result: dict[str, Any]) -> str:
    return str(result.get("url") or "")


def _value(value: Any) -> str:
    return "-" if value is None else printable(value)


def format_change(change: RowChange) -> str:
    if change.change != "changed":
        what = "only in the new run" if change.change == "added" else "only in the old run"
    else:
        what = "; ".join(
            f"{name} {_value(old)} -> {_value(new)}" for name, (old, new) in change.fields.items()
        )
    flag = "REGRESSED" if change.regressed else ""
    return f"{change.row:>7}  {flag:<9}  {printable(change.url)}\n{'':>18} {what}"


def format_summary(summary: DiffSummary) -> str:
    """The checks' lines, then the one line of counts (last, as it always was)."""
    lines = []
    for title, tally in (
        ("checks newly found", summary.checks_found),
        ("checks cleared", summary.checks_cleared),
    ):
        if tally:
            shown = ", ".join(f"{printable(code)} {n:,}" for code, n in sorted(tally.items()))
            lines.append(f"{title} (rows): {shown}")
    if any(summary.many_to_one):
        old, new = summary.many_to_one
        lines.append(f"many_to_one (rows, over all rows of each run): {old:,} -> {new:,}")
    lines.append(
        f"{summary.compared:,} rows in both runs: {summary.changed:,} changed, "
        f"{summary.regressed:,} regressed; {summary.added:,} only in the new run, "
        f"{summary.removed:,} only in the old run"
    )
    return "\n".join(lines)
