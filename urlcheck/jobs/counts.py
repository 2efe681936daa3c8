"""Per-job tallies of results by the status class of their first and of their final answer, by
verdict, and of the rows that failed or were warned of each check (``reasons`` and ``warnings``
codes, docs/urls-and-verdicts.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from urlcheck.check.result import STATUS_CLASSES, status_class

VERDICTS: tuple[str, ...] = ("pass", "fail", "none")


def verdict_key(verdict: str | None) -> str:
    return "none" if verdict is None else verdict


def _zeros(keys: tuple[str, ...]) -> dict[str, int]:
    return dict.fromkeys(keys, 0)


@dataclass
class Counts:
    """``by_status`` counts the final answers (the end of each chain), ``by_first_status`` the
    first ones (a 301 there is a redirect); both by :func:`status_class`."""

    by_status: dict[str, int] = field(default_factory=lambda: _zeros(STATUS_CLASSES))
    by_verdict: dict[str, int] = field(default_factory=lambda: _zeros(VERDICTS))
    by_first_status: dict[str, int] = field(default_factory=lambda: _zeros(STATUS_CLASSES))
    by_reason: dict[str, int] = field(default_factory=dict)  # rows failed by each check
    by_warning: dict[str, int] = field(default_factory=dict)  # rows warned of each

    def add(self, first_status: int | None, final_status: int | None, verdict: str | None) -> None:
        self.add_first_status(first_status)
        self.add_status(final_status)
        self.add_verdict(verdict)

    def add_first_status(self, first_status: int | None, n: int = 1) -> None:
        key = status_class(first_status)
        self.by_first_status[key] = self.by_first_status.get(key, 0) + n

    def add_status(self, final_status: int | None, n: int = 1) -> None:
        key = status_class(final_status)
        self.by_status[key] = self.by_status.get(key, 0) + n

    def add_verdict(self, verdict: str | None, n: int = 1) -> None:
        key = verdict_key(verdict)
        self.by_verdict[key] = self.by_verdict.get(key, 0) + n

    def add_checks(self, reasons: Iterable[str], warnings: Iterable[str], n: int = 1) -> None:
        for code in reasons:
            self.by_reason[code] = self.by_reason.get(code, 0) + n
        for code in warnings:
            self.by_warning[code] = self.by_warning.get(code, 0) + n

    def merge(self, other: Counts) -> None:
        for mine, theirs in self._parts(other):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + n

    def _parts(self, other: Counts) -> list[tuple[dict[str, int], dict[str, int]]]:
        return [
            (self.by_status, other.by_status),
            (self.by_verdict, other.by_verdict),
            (self.by_first_status, other.by_first_status),
            (self.by_reason, other.by_reason),
            (self.by_warning, other.by_warning),
        ]

    def total(self) -> int:
        return sum(self.by_status.values())

    def first_counted(self) -> bool:
        """False for the counts of a meta.json written before first answers were counted."""
        return sum(self.by_first_status.values()) == self.total()

    def copy(self) -> Counts:
        return Counts(
            dict(self.by_status),
            dict(self.by_verdict),
            dict(self.by_first_status),
            dict(self.by_reason),
            dict(self.by_warning),
        )

    def to_dict(self) -> dict[str, dict[str, int]]:
        """meta.json's ``counts``: ``status`` is the final answers' (as it always was)."""
        data = {
            "status": dict(self.by_status),
            "first_status": dict(self.by_first_status),
            "verdict": dict(self.by_verdict),
        }
        if self.by_reason:  # a job whose rows met no check keeps its meta.json as it was
            data["reason"] = dict(self.by_reason)
        if self.by_warning:
            data["warning"] = dict(self.by_warning)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Counts:
        counts = cls()
        for name, target in (
            ("status", counts.by_status),
            ("first_status", counts.by_first_status),
            ("verdict", counts.by_verdict),
            ("reason", counts.by_reason),
            ("warning", counts.by_warning),
        ):
            part = data.get(name, {})
            if not isinstance(part, Mapping):
                raise ValueError(f"counts.{name} must be an object")
            for key, value in part.items():
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise ValueError(f"counts.{name}.{key} must be a non-negative integer")
                target[str(key)] = value
        return counts
