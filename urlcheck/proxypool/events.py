"""What a store call reports back besides its result, and how each event is logged: once, at
the level it deserves, by the pool's logger (docs/proxypool.md, "Logging")."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from urlcheck.proxypool.clock import Clock
    from urlcheck.proxypool.rules.health import State

__all__ = [
    "ControlUrlChanged",
    "Event",
    "EventLog",
    "FallbackLease",
    "LeasesReclaimed",
    "OurSideFault",
    "PairBenched",
    "SiteFault",
    "Transition",
]

# One logger for everything the pool says, as documented: the events are its messages.
logger = logging.getLogger("urlcheck.proxypool.pool")

FALLBACK_LOG_EVERY = 60.0  # seconds between two warnings about fallback leases


class LogLine(NamedTuple):
    level: int
    message: str  # %-format, filled lazily by logging
    args: tuple[object, ...]


@dataclass(frozen=True, slots=True)
class Transition:
    proxy_id: str
    old: State
    new: State
    reason: str
    # A 407 or a proxy host name that does not resolve: a mistake in the proxy list, not luck.
    misconfigured: bool = False

    def log_line(self) -> LogLine:
        level = logging.WARNING if self.misconfigured else logging.INFO
        args = (self.proxy_id, self.old.value, self.new.value, self.reason)
        return LogLine(level, "proxy %s: %s -> %s (%s)", args)


@dataclass(frozen=True, slots=True)
class PairBenched:
    """A proxy taken off one site only: its row is red there and green elsewhere."""

    proxy_id: str
    site: str
    seconds: float
    reason: str

    def log_line(self) -> LogLine:
        args = (self.proxy_id, self.site, self.seconds, self.reason)
        return LogLine(logging.INFO, "proxy %s benched for site %s for %.0fs (%s)", args)


@dataclass(frozen=True, slots=True)
class SiteFault:
    site: str
    at_fault: bool
    reason: str

    def log_line(self) -> LogLine:
        if self.at_fault:
            message = "site %s is at fault, no proxy is blamed for it: %s"
            return LogLine(logging.WARNING, message, (self.site, self.reason))
        return LogLine(logging.INFO, "site %s works again: %s", (self.site, self.reason))


@dataclass(frozen=True, slots=True)
class OurSideFault:
    active: bool
    reason: str

    def log_line(self) -> LogLine:
        if self.active:
            message = (
                "ALERT: failures span all proxies and sites; the fault is on our side "
                "(network, probe targets). Quarantines are frozen: %s"
            )
            return LogLine(logging.ERROR, message, (self.reason,))
        message = "our side works again, quarantines resume: %s"
        return LogLine(logging.WARNING, message, (self.reason,))


@dataclass(frozen=True, slots=True)
class FallbackLease:
    """Nothing was eligible for the site: a proxy out of service or benched was lent."""

    proxy_id: str
    site: str
    state: State

    def log_line(self, count: int) -> LogLine:
        """The warning for ``count`` fallback leases, this one the last (see :class:`EventLog`)."""
        message = (
            "no eligible proxy for site %s: lent %s (%s) as a fallback "
            "(%d fallback leases since the last such message)"
        )
        return LogLine(
            logging.WARNING, message, (self.site, self.proxy_id, self.state.value, count)
        )


@dataclass(frozen=True, slots=True)
class LeasesReclaimed:
    count: int

    def log_line(self) -> LogLine:
        message = "%d leases were never released and expired (a caller crashed or leaks)"
        return LogLine(logging.WARNING, message, (self.count,))


@dataclass(frozen=True, slots=True)
class ControlUrlChanged:
    url: str
    broken: bool
    reason: str

    def log_line(self) -> LogLine:
        if self.broken:
            message = "control URL %s looks broken (%s); its failures count against no proxy"
            return LogLine(logging.WARNING, message, (self.url, self.reason))
        return LogLine(logging.INFO, "control URL %s works again", (self.url,))


Event = (
    Transition
    | PairBenched
    | SiteFault
    | OurSideFault
    | LeasesReclaimed
    | ControlUrlChanged
    | FallbackLease
)


class EventLog:
    """Logs each event; fallback leases, which come with every request while nothing is
    eligible, at most once per :data:`FALLBACK_LOG_EVERY` seconds, with their count."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._fallbacks = 0  # fallback leases not yet logged
        self._fallback_logged_at = -math.inf

    def __call__(self, event: Event) -> None:
        if isinstance(event, FallbackLease):
            self._fallbacks += 1
            now = self._clock()
            if now - self._fallback_logged_at < FALLBACK_LOG_EVERY:
                return
            line = event.log_line(self._fallbacks)
            self._fallbacks = 0
            self._fallback_logged_at = now
        else:
            line = event.log_line()
        logger.log(line.level, line.message, *line.args)
