"""Time for the pool: any callable returning seconds as a float."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]

# Wall time rather than monotonic: snapshot times stay readable, and a shared store can compare
# timestamps written by several processes (the Redis store will use the server's TIME instead).
system_clock: Clock = time.time


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
