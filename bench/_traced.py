"""Where a crawl's memory goes: ``scrapy crawl`` run in this process under tracemalloc.

    python bench/_traced.py OUT.json SECONDS scrapy crawl check ARGS...

runs the command (``scrapy.cmdline.execute``) and starts tracemalloc (3 frames: more made
indexing a million rows take minutes) when the check spider starts: what was there before (the
interpreter, modules and libraries) is that moment's RSS, ``rss_before``. It takes a snapshot
whenever the traced total passes its previous high by 2 MB, at most every 2 s (so the last one
is the peak's), and 15 s after the CSV is indexed (at most SECONDS after the start; or at exit)
writes the peak snapshot's bytes by component to OUT.json, and those of one taken then (the
steady state). A component is the first part
of the urlcheck flow found in a block's traceback, from where it was allocated outwards
(:data:`COMPONENTS`). Tracing slows the crawl several times: rates and timings come from an
untraced run, only the breakdown from this one.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
import tracemalloc
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

# (path fragment, component): the first fragment a frame's file name contains names it.
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("urlcheck/input/feeder.py", "feeder (rows waiting, by host)"),
    ("urlcheck/check/ledger.py", "ledger (rows fed / written)"),
    ("urlcheck/jobs/done.py", "done rows (resume scan)"),
    ("urlcheck/input/", "CSV reader"),
    ("urlcheck/crawl/scheduling.py", "frontier (scheduler queues)"),
    ("scrapy/core/scheduler.py", "frontier (scheduler queues)"),
    ("scrapy/pqueues.py", "frontier (scheduler queues)"),
    ("queuelib/", "frontier (scheduler queues)"),
    ("urlcheck/crawl/requests.py", "requests and chains in hand"),
    ("urlcheck/spiders/check.py", "requests and chains in hand"),
    ("scrapy/statscollectors.py", "stats"),
    ("urlcheck/extensions/metrics.py", "stats"),
    ("prometheus_client/", "stats"),
    ("urlcheck/extensions/hostreport.py", "stats"),
    ("urlcheck/politeness/", "politeness (per-host state)"),
    ("urlcheck/middlewares/", "politeness (per-host state)"),
    ("scrapy/core/downloader/", "downloader (slots, in flight)"),
    ("twisted/", "twisted (connections, timers)"),
    ("scrapy/", "scrapy (other)"),
    ("urlcheck/", "urlcheck (other)"),
)
CODE = "code and modules (imports)"
_FRAMES = 3
_STEP = 2 << 20
_STEADY_AFTER = 15.0  # seconds after the CSV is indexed: the end snapshot's moment
_EVERY = 2.0  # seconds at least between snapshots (each copies every trace)


def component(frames: tracemalloc.Traceback) -> str:
    names = [frame.filename for frame in reversed(frames)]  # where it was allocated first
    if any(name.startswith("<frozen importlib") for name in names):
        return CODE
    for name in names:
        for fragment, label in COMPONENTS:
            if fragment in name:
                return label
    return "other (stdlib, asyncio, logging...)"


class PeakSnapshots:
    def __init__(self, out: Path, seconds: float) -> None:
        self.out, self.seconds = out, seconds
        self.peak: tracemalloc.Snapshot | None = None
        self.last: tracemalloc.Snapshot | None = None  # at the end: the steady state
        self.high = 0
        self.written = False
        self.lock = threading.Lock()
        self.rss_before = 0

    def run(self, indexed: Callable[[], bool]) -> None:
        started = time.monotonic()
        steady_at = started + self.seconds
        while time.monotonic() < steady_at:
            if indexed() and steady_at > time.monotonic() + _STEADY_AFTER:
                steady_at = time.monotonic() + _STEADY_AFTER
            current, _ = tracemalloc.get_traced_memory()
            if current > self.high + _STEP:
                self.high = current
                self.peak = tracemalloc.take_snapshot()
                time.sleep(_EVERY)
            time.sleep(0.2)
        self.last = tracemalloc.take_snapshot()
        self.write()
        os._exit(0)  # the breakdown is all this run is for

    def write(self) -> None:
        with self.lock:
            if self.written or self.peak is None:
                return
            self.written = True
            _, peak = tracemalloc.get_traced_memory()
            at_end = by_component(self.last or self.peak)
            at_peak = by_component(self.peak)
            if sum(at_end.values()) > sum(at_peak.values()):
                at_peak = at_end  # the high-water mark was reached after the last snapshot
            found = {
                "traced_peak": peak,
                "rss_before": self.rss_before,
                "at_peak": at_peak,
                "at_end": at_end,
            }
            self.out.write_text(json.dumps(found, indent=1, sort_keys=True))


def by_component(snapshot: tracemalloc.Snapshot) -> dict[str, int]:
    by: defaultdict[str, int] = defaultdict(int)
    for trace in snapshot.traces:
        by[component(trace.traceback)] += trace.size
    return dict(by)


def vm_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    out, seconds, argv = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
    watcher = PeakSnapshots(out, seconds)
    atexit.register(watcher.write)
    from scrapy.cmdline import execute

    from urlcheck.spiders.check import CheckSpider

    spider_start = CheckSpider.start

    async def traced_start(spider: CheckSpider) -> AsyncIterator[Any]:
        watcher.rss_before = vm_rss()
        tracemalloc.start(_FRAMES)
        threading.Thread(
            target=watcher.run, args=(lambda: spider.runtime.total_rows > 0,), daemon=True
        ).start()
        async for item in spider_start(spider):
            yield item

    CheckSpider.start = traced_start  # type: ignore[method-assign,assignment]
    execute(argv)


if __name__ == "__main__":
    main()
