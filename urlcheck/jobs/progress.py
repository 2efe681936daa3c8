"""Timing decisions of a running crawl, apart from Scrapy so they can be tested with a fake
clock: its rate, when its heartbeat must be written, when a progress line is due, and the line."""

from __future__ import annotations

from dataclasses import dataclass

from urlcheck.jobs.status import format_duration


class RunRate:
    """Rows per minute over the current run, not counting time spent paused."""

    def __init__(self, done_at_start: int, now: float) -> None:
        self.done_at_start = done_at_start
        self.started = now
        self._paused_since: float | None = None
        self._paused_total = 0.0

    @property
    def paused(self) -> bool:
        return self._paused_since is not None

    def pause(self, now: float) -> None:
        if self._paused_since is None:
            self._paused_since = now

    def resume(self, now: float) -> None:
        if self._paused_since is not None:
            self._paused_total += now - self._paused_since
            self._paused_since = None

    def active_seconds(self, now: float) -> float:
        paused = self._paused_total
        if self._paused_since is not None:
            paused += now - self._paused_since
        return max(0.0, now - self.started - paused)

    def rate(self, done: int, now: float) -> float | None:
        """None until the run has been active for a second."""
        active = self.active_seconds(now)
        if active < 1.0:
            return None
        return round(max(0, done - self.done_at_start) * 60.0 / active, 1)

    def eta(self, done: int, total: int, now: float) -> float | None:
        """Seconds until every row is done at the current rate; None when unknown."""
        if total <= done:
            return 0.0
        rate = self.rate(done, now)
        if not rate:
            return None
        return round((total - done) * 60.0 / rate, 1)


class Heartbeat:
    """Writes ``last_activity_at`` at least every ``interval`` seconds while there is activity
    (a request completed, an item was scraped) or a host is in back-off, and never otherwise,
    so that silence can be told from a long, legitimate wait. Its times are monotonic clock
    readings: a wall clock step neither delays a heartbeat nor hurries one."""

    def __init__(self, interval: float, now: float) -> None:
        self.interval = interval
        self.last_activity = now
        self._last_write = now
        self._active_since_write = False

    def activity(self, now: float) -> None:
        self.last_activity = now
        self._active_since_write = True

    def due(self, now: float, *, backoff: bool) -> bool:
        if now - self._last_write < self.interval:
            return False
        if backoff:
            self.last_activity = now  # waiting out a back-off is the crawl doing its job
        return self._active_since_write or backoff

    def wrote(self, now: float) -> None:
        self._last_write = now
        self._active_since_write = False


@dataclass(frozen=True, slots=True)
class ProgressFigures:
    """What the progress line and the terminal's bar show."""

    done: int
    total: int
    rate: float | None  # rows per minute over this run, None while unknown
    eta: float | None  # seconds, None while unknown or paused
    active_hosts: int
    backoff_hosts: int
    paused: bool = False

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else 100.0

    def line(self) -> str:
        """The progress line: ``Progress: 41250/100000 rows (41.2%), 312.5 rows/min, ETA 3h 08m;
        hosts: 5 active, 1 in back-off``."""
        return (
            f"Progress: {self.done}/{self.total} rows ({self.percent:.1f}%), "
            f"{'-' if self.rate is None else f'{self.rate:.1f}'} rows/min, "
            f"ETA {'-' if self.eta is None else format_duration(self.eta)}; "
            f"hosts: {self.active_hosts} active, {self.backoff_hosts} in back-off"
            f"{'; paused' if self.paused else ''}"
        )

    def brief(self) -> str:
        """The same beside a bar, which shows the percentage."""
        return (
            f"{self.done:,}/{self.total:,} rows · "
            f"{'-' if self.rate is None else f'{self.rate:,.1f}'} rows/min · "
            f"ETA {'-' if self.eta is None else format_duration(self.eta)} · "
            f"hosts: {self.active_hosts} active, {self.backoff_hosts} in back-off"
            f"{' · paused' if self.paused else ''}"
        )
