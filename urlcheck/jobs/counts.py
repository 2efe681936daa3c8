"""Per-job tallies of results by the status class of their first and of their final answer, and
by verdict."""

from __future__ import annotations

from collections.abc import Mapping
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

    def merge(self, other: Counts) -> None:
        for key, n in other.by_status.items():
            self.by_status[key] = self.by_status.get(key, 0) + n
        for key, n in other.by_verdict.items():
            self.by_verdict[key] = self.by_verdict.get(key, 0) + n
        for key, n in other.by_first_status.items():
            self.by_first_status[key] = self.by_first_status.get(key, 0) + n

    def total(self) -> int:
        return sum(self.by_status.values())

    def first_counted(self) -> bool:
        """False for the counts of a meta.json written before first answers were counted."""
        return sum(self.by_first_status.values()) == self.total()

    def copy(self) -> Counts:
        return Counts(dict(self.by_status), dict(self.by_verdict), dict(self.by_first_status))

    def to_dict(self) -> dict[str, dict[str, int]]:
        """meta.json's ``counts``: ``status`` is the final answers' (as it always was)."""
        return {
            "status": dict(self.by_status),
            "first_status": dict(self.by_first_status),
            "verdict": dict(self.by_verdict),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Counts:
        counts = cls()
        for name, target in (
            ("status", counts.by_status),
            ("first_status", counts.by_first_status),
            ("verdict", counts.by_verdict),
        ):
            part = data.get(name, {})
            if not isinstance(part, Mapping):
                raise ValueError(f"counts.{name} must be an object")
            for key, value in part.items():
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise ValueError(f"counts.{name}.{key} must be a non-negative integer")
                target[str(key)] = value
        return counts
