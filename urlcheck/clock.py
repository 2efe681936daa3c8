"""Time as a value: every time-dependent part of urlcheck takes a clock, so tests move time
instead of sleeping; and the one way a time is written down (UTC, ISO 8601, a ``Z``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

Clock = Callable[[], float]  # seconds as a float: time.time, time.monotonic, a ManualClock


class ManualClock:
    """A clock that moves only when told to, for tests, simulations and benchmarks."""

    __slots__ = ("now",)

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("a clock does not go backwards")
        self.now += seconds
        return self.now


def utc_iso(seconds: float, timespec: Literal["milliseconds", "auto"] = "milliseconds") -> str:
    """``2023-11-14T22:13:20.250Z``: results.jsonl's ``checked_at``, meta.json's times.
    ``timespec="auto"`` gives microseconds only when there are any (hosts.json's ``since``)."""
    stamp = datetime.fromtimestamp(seconds, UTC).isoformat(timespec=timespec)
    return stamp.replace("+00:00", "Z")


def parse_utc_iso(text: str) -> float:
    """Seconds since the epoch; raises ValueError for anything but a zoned ISO 8601 time."""
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return parsed.timestamp()


def utc_compact(seconds: float) -> str:
    """``20231114T221320Z``: a time in a file name (a results file put aside, an input copy)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(seconds))
