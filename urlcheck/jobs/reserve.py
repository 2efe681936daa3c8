"""Room kept for the job's last words: a job directory holds ``reserve.bin`` (64 KiB) while a
crawl runs, so that when the disk fills up the crawl can free it and still write meta.json as
paused (and hosts.json) on its way out. Without it a full disk left the job reading
``processing`` (then stuck) until the next run."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from urlcheck.jobs.nofollow import open_nofollow

if TYPE_CHECKING:
    from pathlib import Path

RESERVE_FILE = "reserve.bin"
RESERVE_BYTES = 64 * 1024


def make_reserve(jobdir: Path, size: int = RESERVE_BYTES) -> bool:
    """Set ``size`` bytes aside in ``jobdir``; False when there is no room for them already
    (the run goes on: the first failed write stops it)."""
    path = jobdir / RESERVE_FILE
    try:
        with open_nofollow(path, "wb") as out:
            os.posix_fallocate(out.fileno(), 0, size)  # real blocks, not a sparse file
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()
        return False
    return True


def release_reserve(jobdir: Path) -> bool:
    """Give the reserve back to the filesystem; True when there was one."""
    try:
        (jobdir / RESERVE_FILE).unlink()
    except OSError:  # none (FileNotFoundError), or a filesystem gone read-only
        return False
    return True
