"""Time as a value: every time-dependent part of urlcheck takes a clock, so tests move time
instead of sleeping."""

from __future__ import annotations

from collections.abc import Callable

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
