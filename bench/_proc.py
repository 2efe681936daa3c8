"""Resident memory of a benchmarked crawl process, sampled from /proc while it runs."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path


def vm_rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class RssSampler:
    """``samples`` of (seconds since start, VmRSS MiB) every ``interval`` until the process
    exits; use as a context manager around ``process.wait()``."""

    def __init__(self, process: subprocess.Popen[bytes], interval: float = 0.1) -> None:
        self.process = process
        self.interval = interval
        self.started = time.time()
        self.samples: list[tuple[float, float]] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while self.process.poll() is None:
            rss = vm_rss_mib(self.process.pid)
            if rss is not None:
                self.samples.append((time.time() - self.started, rss))
            time.sleep(self.interval)

    def peak(self, within: float = float("inf")) -> float:
        return max((rss for t, rss in self.samples if t <= within), default=0.0)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join()
