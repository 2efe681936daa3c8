"""Job control latency: how soon a running crawl (a real ``scrapy crawl check`` process on a job
directory, against the demo site) obeys what ``scrapy job`` asks of it. These figures were timed
asserts in the tests (tests/jobs/test_jobcontrol.py, test_e2e.py, test_lock.py); here each is a
ratio against its bound:

    pause    control.json written -> meta.json says paused      (bound 1.2 s: the 1 s promise)
    resume   control.json written -> meta.json says processing  (bound 1.2 s)
    cancel   control.json written -> meta.json says cancelled   (bound 1.5 s: a poll, then the
             requests in flight, 0.2 s each here)
    locked   a second crawl on the job started -> its exit 6    (bound 15 s: interpreter
             start-up, then the lock)

Usage: python bench/control.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.jobs.crawls import HOSTS, Crawl, make_csv  # noqa: E402
from urlcheck.demo.launcher import SiteServer  # noqa: E402
from urlcheck.jobs.exitcodes import ExitCode  # noqa: E402
from urlcheck.jobs.files import ControlAction, JobMeta, JobState, write_control  # noqa: E402

BOUNDS = {"pause": 1.2, "resume": 1.2, "cancel": 1.5, "locked": 15.0}


def seconds_until(condition: Callable[[], bool], timeout: float = 60.0) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"not within {timeout} s")
        time.sleep(0.005)
    return time.monotonic() - started


def state_is(jobdir: Path, state: JobState) -> Callable[[], bool]:
    def check() -> bool:
        try:
            meta = JobMeta.load(jobdir)
        except Exception:  # a write in progress: look again
            return False
        return meta is not None and meta.state is state

    return check


def one_run(site: SiteServer, folder: Path) -> dict[str, float]:
    csv = make_csv(folder / "in.csv", site, "bench", 300)
    jobdir = folder / "job"
    crawl = Crawl(csv, jobdir)
    try:
        crawl.wait_lines(10)
        figures: dict[str, float] = {}
        for action, state in (
            (ControlAction.PAUSE, JobState.PAUSED),
            (ControlAction.RESUME, JobState.PROCESSING),
        ):
            write_control(jobdir, action)
            figures[action.value] = seconds_until(state_is(jobdir, state))
        second = Crawl(csv, jobdir, name="second")
        started = time.monotonic()
        code = second.wait()
        figures["locked"] = time.monotonic() - started
        if code != ExitCode.LOCKED:
            raise RuntimeError(f"the second crawl exited {code}, not {ExitCode.LOCKED}")
        write_control(jobdir, ControlAction.CANCEL)
        figures["cancel"] = seconds_until(state_is(jobdir, JobState.CANCELLED))
        crawl.wait()
        return figures
    finally:
        if crawl.poll() is None:
            crawl.process.kill()
            crawl.process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp, SiteServer(HOSTS) as site:
        for n in range(args.runs):
            folder = Path(tmp) / f"run{n}"
            folder.mkdir()
            runs.append(one_run(site, folder))
    within = True
    for name, bound in BOUNDS.items():
        median = statistics.median(run[name] for run in runs)
        within = within and median <= bound
        print(f"{name:7} {median:.3f} s / {bound:g} s = {median / bound:.3f}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
