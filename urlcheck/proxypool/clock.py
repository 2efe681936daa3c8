"""Time for the pool: any callable returning seconds as a float (:mod:`urlcheck.clock`)."""

from __future__ import annotations

import time

from urlcheck.clock import Clock, ManualClock

__all__ = ["Clock", "ManualClock", "system_clock"]

# Wall time rather than monotonic: snapshot times stay readable, and a shared store can compare
# timestamps written by several processes (the Redis store will use the server's TIME instead).
system_clock: Clock = time.time
