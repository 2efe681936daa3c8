"""The supervisor's stuck rule with injected clocks (issue 22 point 11): it measures a crawl's
silence on the monotonic clock, as ``scrapy job status`` does, so a wall clock step neither stops
a healthy crawl nor hides a stuck one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from urlcheck.clock import ManualClock, boot_id, utc_iso
from urlcheck.jobs.files import JobMeta, JobState
from urlcheck.jobs.supervise import SuperviseConfig, Supervisor

if TYPE_CHECKING:
    from pathlib import Path

WALL = 1_700_000_000.0


def supervisor(jobdir: Path, wall: ManualClock, monotonic: ManualClock) -> Supervisor:
    return Supervisor(jobdir, ["true"], SuperviseConfig(), clock=wall, monotonic=monotonic)


def beat(jobdir: Path, wall: float, monotonic: float) -> None:
    """What the crawl's heartbeat writes: its last activity on both clocks, and this boot."""
    meta = JobMeta(state=JobState.PROCESSING, total_rows=10, stuck_after=180.0)
    meta.started_at = meta.last_activity_at = utc_iso(wall)
    meta.last_activity_monotonic = monotonic
    meta.boot_id = boot_id()
    meta.save(jobdir)


def test_a_wall_clock_step_stops_no_healthy_crawl(tmp_path: Path) -> None:
    assert boot_id() is not None  # Linux: /proc/sys/kernel/random/boot_id
    wall, mono = ManualClock(WALL), ManualClock(1_000.0)
    watcher = supervisor(tmp_path, wall, mono)
    started = mono()
    for _ in range(10):  # a healthy crawl, beating every 30 s for 5 minutes
        wall.advance(30.0)
        mono.advance(30.0)
        beat(tmp_path, wall(), mono())
    wall.advance(600.0)  # NTP steps the wall clock 10 minutes forward
    mono.advance(5.0)
    assert watcher.stuck_for(started) is None


def test_a_silent_crawl_is_stuck_though_the_wall_clock_went_back(tmp_path: Path) -> None:
    wall, mono = ManualClock(WALL), ManualClock(1_000.0)
    watcher = supervisor(tmp_path, wall, mono)
    started = mono()
    beat(tmp_path, wall(), mono())
    mono.advance(181.0)
    wall.now -= 3600.0  # the wall clock set an hour back meanwhile
    assert watcher.stuck_for(started) == 181.0
    # a crawl started just now is judged on its own silence, not the previous run's meta.json
    assert watcher.stuck_for(mono() - 10.0) is None
