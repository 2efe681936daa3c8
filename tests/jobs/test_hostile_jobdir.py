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
from tests.processes import crawl_argv, run, scrapy_job
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import JobMeta

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


# --- job files that are links ------------------------------------------------------------------

SECRET = b"not a result: a line of a private file outside the job\n"
LINKED = [
    "results.jsonl",
    "results.jsonl.dropped",
    "spider.state",
    "job.lock",
    "control.lock",
    "meta.json",
    "control.json",
    "hosts.json",
    "input.csv",
]


def _private_file(tmp_path: Path) -> Path:
    target = tmp_path / "private" / "secret.txt"
    target.parent.mkdir()
    target.write_bytes(SECRET)
    target.chmod(0o600)
    return target


def _copies_of(secret: bytes, directory: Path) -> list[str]:
    return [
        p.name
        for p in directory.iterdir()
        if p.is_file() and not p.is_symlink() and secret.strip() in p.read_bytes()
    ]


@pytest.mark.parametrize("name", LINKED)
def test_a_job_file_that_is_a_link_is_refused_at_start(
    tmp_path: Path, site: SiteServer, name: str
) -> None:
    csv = make_csv(tmp_path / "in.csv", site, f"link-{name}", 3)
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    target = _private_file(tmp_path)
    (jobdir / name).symlink_to(target)
    crawl = Crawl(csv, jobdir)
    assert crawl.wait() == ExitCode.INPUT_ERROR, crawl.stderr()[-3000:]
    stderr = crawl.stderr()
    said = [line for line in stderr.splitlines() if line.startswith("urlcheck:")]
    assert len(said) == 1 and name in said[0] and "symbolic link" in said[0], stderr[-3000:]
    assert "Traceback" not in stderr
    assert target.read_bytes() == SECRET and (target.stat().st_mode & 0o777) == 0o600
    assert (jobdir / name).is_symlink()
    assert _copies_of(SECRET, jobdir) == []
    assert not any(
        e["path"].startswith("/delay") and f"t=link-{name}" in e["path"] for e in site.log()
    )


def test_results_through_a_link_are_refused_without_a_job_too(
    tmp_path: Path, site: SiteServer
) -> None:
    csv = make_csv(tmp_path / "in.csv", site, "nojob-link", 2)
    out = tmp_path / "out.jsonl"
    out.symlink_to(tmp_path / "private" / "not-yet.txt")  # dangling: it would be created
    (tmp_path / "private").mkdir()
    done = run(crawl_argv("-a", f"csv={csv}", "-a", f"out={out}", "--no-job"))
    assert done.returncode == ExitCode.INPUT_ERROR, done.stderr[-3000:]
    [said] = [line for line in done.stderr.splitlines() if line.startswith("urlcheck:")]
    assert "out.jsonl is a symbolic link" in said and "Traceback" not in done.stderr
    assert not (tmp_path / "private" / "not-yet.txt").exists()


@pytest.mark.parametrize("action", ["run", "status", "pause", "cancel"])
def test_scrapy_job_refuses_a_directory_with_a_link(tmp_path: Path, action: str) -> None:
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    JobMeta().save(jobdir)
    target = _private_file(tmp_path)
    (jobdir / "control.lock").symlink_to(target)
    done = scrapy_job(action, jobdir)
    assert done.returncode == ExitCode.INPUT_ERROR, done.stderr[-3000:]
    assert "control.lock is a symbolic link" in done.stderr and "Traceback" not in done.stderr
    assert target.read_bytes() == SECRET and not (jobdir / "control.json").exists()
