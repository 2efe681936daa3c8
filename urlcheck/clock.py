"""Time as a value: every time-dependent part of urlcheck takes a clock, so tests move time
instead of sleeping; and the one way a time is written down (UTC, ISO 8601, a ``Z``).

Two clocks, for two uses. The wall clock (``time.time``) says *when*, for people; it steps when
NTP or an administrator sets it. The monotonic clock (``time.monotonic``) says *how long*: it
never steps, and on Linux it is one clock for every process of a boot, named by the kernel's
boot id, so an interval measured across processes (a job's silence, docs/jobs.md) holds through
a wall clock step.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
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


_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@functools.cache
def boot_id() -> str | None:
    """The kernel's id of this boot (Linux), else None: where it is None, monotonic readings
    are not compared across processes."""
    try:
        text = _BOOT_ID.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


@dataclass(frozen=True, slots=True)
class Reading:
    """One moment as this process reads both clocks: ``wall`` (seconds since the epoch),
    ``monotonic`` (seconds, comparable with readings of the same ``boot``)."""

    wall: float
    monotonic: float
    boot: str | None

    @classmethod
    def now(cls, wall: Clock = time.time, monotonic: Clock = time.monotonic) -> Reading:
        return cls(wall(), monotonic(), boot_id())


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
