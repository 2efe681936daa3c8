"""Store outages as the crawl sees them: logged once when they begin, every 30 s while they
last, once when they end; their length is measured for the crawl's summary."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from urlcheck.proxypool.clock import Clock

__all__ = ["Outage"]

logger = logging.getLogger(__name__)

LOG_EVERY = 30.0


class Outage:
    """Feed it every store call's fate: `failed(exc)` or `succeeded()`."""

    def __init__(self, clock: Clock = time.monotonic, log_every: float = LOG_EVERY) -> None:
        self._clock = clock
        self._log_every = log_every
        self.since: float | None = None  # the current outage's start
        self._next_log = 0.0
        self.count = 0

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, exc: BaseException) -> None:
        now = self._clock()
        if self.since is None:
            self.since = now
            self.count += 1
            self._next_log = now + self._log_every
            logger.warning(
                "proxy store unreachable (%s): requests that need a proxy wait for it", exc
            )
        elif now >= self._next_log:
            self._next_log = now + self._log_every
            logger.warning("proxy store still unreachable after %.0fs (%s)", now - self.since, exc)

    def succeeded(self) -> float | None:
        """The length of the outage that just ended, if one did."""
        if self.since is None:
            return None
        seconds = self._clock() - self.since
        self.since = None
        logger.info("proxy store reachable again after %.1fs", seconds)
        return seconds

    def elapsed(self) -> float:
        """Seconds of the outage in progress (0 when the store is up)."""
        return 0.0 if self.since is None else self._clock() - self.since
