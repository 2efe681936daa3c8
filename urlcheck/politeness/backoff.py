"""Per-host back-off after 429/503: the schedule, Retry-After, and who is paused until when
(with the hosts given up on, :mod:`urlcheck.politeness.circuit`, and learned delays,
:mod:`urlcheck.politeness.pace`).

Scrapy 2.19 has neither back-off nor Retry-After support; its retry re-sends a 429 as soon as
the slot delay allows (every 0.3 s here). This module is the policy; the downloader middleware
(:mod:`urlcheck.middlewares.backoff`) and the scheduler queue (:mod:`urlcheck.crawl.scheduling`)
apply it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, NamedTuple

from urlcheck.config.reader import SettingsReader
from urlcheck.politeness.circuit import HostCircuit
from urlcheck.politeness.pace import HostPace

if TYPE_CHECKING:
    from urlcheck.clock import Clock
    from urlcheck.config.reader import Settings


@dataclass(frozen=True, slots=True)
class BackoffConfig:
    base: float = 30.0
    maximum: float = 300.0
    retries: int = 3
    http_codes: tuple[int, ...] = (429, 503)
    log_interval: float = 30.0
    down_after: int = 2
    pace_enabled: bool = True
    delay_floor: float = 0.3
    delay_max: float = 10.0
    ease_after: int = 20

    @classmethod
    def from_settings(cls, settings: Settings) -> BackoffConfig:
        read = SettingsReader(settings)
        return cls(
            base=read.number("URLCHECK_BACKOFF_BASE", 30.0),
            maximum=read.number("URLCHECK_BACKOFF_MAX", 300.0),
            retries=read.integer("URLCHECK_BACKOFF_RETRIES", 3),
            http_codes=read.int_list("URLCHECK_BACKOFF_HTTP_CODES", (429, 503)),
            log_interval=read.number("URLCHECK_BACKOFF_LOG_INTERVAL", 30.0, minimum=0.1),
            down_after=read.integer("URLCHECK_HOST_DOWN_AFTER", 2, minimum=0),
            pace_enabled=read.boolean("URLCHECK_HOST_PACE_ENABLED", True),
            delay_floor=read.number("DOWNLOAD_DELAY", 0.3),
            delay_max=read.number("URLCHECK_HOST_DELAY_MAX", 10.0),
            ease_after=read.integer("URLCHECK_HOST_DELAY_EASE_AFTER", 20, minimum=1),
        )

    def wait(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to pause a host after its ``attempt``-th consecutive 429/503 (1-based):
        base, doubling, raised to Retry-After, each wait capped at ``maximum``."""
        scheduled = self.base * 2.0 ** max(attempt - 1, 0)
        return min(max(scheduled, retry_after or 0.0), self.maximum)


def parse_retry_after(value: bytes | str | None, *, now: float | None = None) -> float | None:
    """Seconds asked for by a Retry-After header (RFC 9110 10.2.3): delta-seconds or an
    HTTP-date, measured against the wall clock ``now``. None when absent or unreadable."""
    if value is None:
        return None
    text = (value.decode("latin-1") if isinstance(value, bytes) else value).strip()
    if not text:
        return None
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is always GMT
        return None
    wall = time.time() if now is None else now
    return max(when.timestamp() - wall, 0.0)


class PausedHost(NamedTuple):
    host: str
    attempt: int
    seconds_left: float


class HostBackoff:
    """Which hosts are paused, until when (monotonic clock), after how many strikes.

    One instance per crawl (:func:`urlcheck.crawl.runtime.runtime`), shared by the middleware that
    pauses hosts, the queue that holds their requests back and the feeder that stops reading rows
    for them. Kept here rather than on Scrapy's download slot: idle slots are
    garbage-collected after 60 s, which would drop a 120 s back-off.
    """

    def __init__(
        self, config: BackoffConfig, clock: Clock = time.monotonic, wall: Clock = time.time
    ) -> None:
        self.config = config
        self.clock = clock
        # What else is known of each host, shared the same way: given up on, learned delay.
        self.circuit = HostCircuit(config.down_after, wall)
        self.pace = HostPace(
            config.delay_floor,
            config.delay_max,
            config.ease_after,
            enabled=config.pace_enabled,
        )
        self._until: dict[str, float] = {}
        self._attempt: dict[str, int] = {}
        self._paused_seconds: dict[str, float] = {}  # pause windows so far, overlaps counted once
        self._listeners: list[Callable[[str, float], None]] = []

    def on_pause(self, listener: Callable[[str, float], None]) -> None:
        """Call ``listener(host, seconds)`` whenever a host is paused."""
        self._listeners.append(listener)

    def pause(self, host: str, attempt: int, retry_after: float | None = None) -> float:
        """Pause ``host`` after the ``attempt``-th 429/503 of one request (1-based: the schedule
        follows that request's own tries); returns the pause in seconds."""
        seconds = self.config.wait(attempt, retry_after)
        now = self.clock()
        until = max(self._until.get(host, 0.0), now)
        if now + seconds > until:
            self._paused_seconds[host] = self._paused_seconds.get(host, 0.0) + now + seconds - until
            until = now + seconds
        self._until[host] = until
        self._attempt[host] = attempt
        for listener in self._listeners:
            listener(host, seconds)
        return seconds

    def resume(self, host: str) -> None:
        """End ``host``'s pause now (it has been given up on: its rows need no more waiting)."""
        until = self._until.pop(host, None)
        if until is not None:
            self._paused_seconds[host] -= max(until - self.clock(), 0.0)

    def paused_until(self, host: str) -> float:
        """Monotonic time the host's pause ends (0.0 when not paused)."""
        until = self._until.get(host)
        if until is None:
            return 0.0
        if until <= self.clock():
            del self._until[host]
            return 0.0
        return until

    def is_paused(self, host: str) -> bool:
        return self.paused_until(host) > 0.0

    def paused(self) -> list[PausedHost]:
        now = self.clock()
        for host in [h for h, until in self._until.items() if until <= now]:
            del self._until[host]
        return sorted(
            (
                PausedHost(host, self._attempt.get(host, 0), until - now)
                for host, until in self._until.items()
            ),
            key=lambda p: p.seconds_left,
        )

    def paused_seconds(self) -> dict[str, float]:
        """Seconds each host has spent paused so far: overlapping pauses count once, and a
        pause still running counts up to now."""
        now = self.clock()
        return {
            host: seconds - max(self._until.get(host, now) - now, 0.0)
            for host, seconds in sorted(self._paused_seconds.items())
        }
