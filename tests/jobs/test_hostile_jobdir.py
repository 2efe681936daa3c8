"""A job directory is untrusted input (it may come from another machine, docs/security.md): a
crafted ``spider.state`` is never unpickled, and job files that are symbolic links are refused
rather than written through. Real crawl subprocesses on real files."""

from __future__ import annotations

import os
import pickle
import shlex
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.jobs.crawls import Crawl, assert_exact, make_csv
from urlcheck.jobs.exitcodes import ExitCode

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl


class _RunsCommand:
    """Unpickling this runs a shell command, as a crafted spider.state would."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (self.command,)


def test_a_planted_spider_state_is_never_unpickled(tmp_path: Path, site: SiteServer) -> None:
    rows = 40
    csv = make_csv(tmp_path / "in.csv", site, "state", rows)
    jobdir = tmp_path / "job"
    crawl = Crawl(csv, jobdir)
    crawl.wait_lines(5)
    crawl.signal(signal.SIGKILL)
    crawl.wait()
    marker = tmp_path / "ran"
    planted = pickle.dumps({"state": _RunsCommand(f"touch {shlex.quote(str(marker))}")})
    (jobdir / "spider.state").write_bytes(planted)

    resume = Crawl(csv, jobdir)
    assert resume.wait() == ExitCode.FINISHED, resume.stderr()[-3000:]
    assert_exact(jobdir / "results.jsonl", rows)
    assert not marker.exists(), "the resume unpickled spider.state and ran its command"
    assert (jobdir / "spider.state").read_bytes() == planted  # nor was it written
