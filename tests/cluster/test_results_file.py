"""A distributed job's results.jsonl is written as one process's is (urlcheck.jobs.resultswriter):
held against another job, and a full disk stops the coordinator with no torn line and no result
lost or written twice. Real coordinator and worker processes, a private redis-server, the local
site, and a small tmpfs (in a mount namespace of its own) for the full disk."""

from __future__ import annotations

import io
import os
import shlex
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.jobs.crawls import (
    HOSTS,
    SETTINGS,
    assert_exact,
    make_csv,
    requested_rows,
    row_url,
    wait_lines,
    write_rows,
)
from tests.jobs.test_results_trust import in_own_mounts, said, stopped_by_full_disk
from tests.processes import Process, crawl_argv, run
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.steer import steer

if TYPE_CHECKING:
    from tests.redisserver import RedisServer
    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl

# Short leases: rows the stopped coordinator had leased come back within seconds, not 30 s.
FAST_LEASES = (
    "DOWNLOAD_TIMEOUT=2",
    "URLCHECK_CLUSTER_LEASE_EXTRA=5",
    "URLCHECK_CLUSTER_RENEW_INTERVAL=1",
)


def cluster_settings(server: RedisServer) -> tuple[str, ...]:
    return (*SETTINGS, "DOWNLOAD_DELAY=0", *FAST_LEASES, f"REDIS_URL={server.url}")


def test_a_results_file_another_coordinator_is_writing_is_refused(
    tmp_path: Path, site: SiteServer, server: RedisServer
) -> None:
    """The coordinator wrote results.jsonl without the writer's lock: a second job pointed at
    it with ``-a out=`` (a distributed job or one process) renamed it aside under the running
    coordinator, whose lines then went on into the renamed file."""
    rows = 40
    settings = cluster_settings(server)
    csv = make_csv(tmp_path / "a.csv", site, "cbusy-a", rows)
    argv = crawl_argv(
        "-a", f"csv={csv}", "-a", "job=cbusy-a", "--jobdir", str(tmp_path / "job-a"),
        settings=settings,
    )  # fmt: skip
    running = Process(argv, logs=tmp_path / "logs", name="coordinator")
    shared = tmp_path / "job-a" / "results.jsonl"
    wait_lines(shared, 3, running)
    assert steer("pause", tmp_path / "job-a", out=io.StringIO()) == ExitCode.FINISHED
    second = write_rows(tmp_path / "b.csv", [row_url(site, "cbusy-b", 1, "/")])
    refused = f"urlcheck: {shared} is being written by another crawl: two jobs can't share a "
    refused += "results file (give this one another -a out=, or wait until the other ends)"
    for jobdir, args in (
        ("job-b", ("-a", "job=cbusy-b", "-s", f"REDIS_URL={server.url}")),  # a coordinator
        ("job-c", ()),  # one process
    ):
        argv = crawl_argv(
            "-a", f"csv={second}", "--jobdir", str(tmp_path / jobdir), "-a", f"out={shared}",
            *args, settings=SETTINGS,
        )  # fmt: skip
        done = run(argv, timeout=90)
        assert done.returncode == ExitCode.LOCKED, done.stderr[-3000:]
        assert said(done.stderr) == [refused]
    assert steer("resume", tmp_path / "job-a", out=io.StringIO()) == ExitCode.FINISHED
    assert running.wait(timeout=120) == ExitCode.FINISHED, running.stderr()[-3000:]
    assert_exact(shared, rows)
    assert requested_rows(site, "cbusy-b") == []


@pytest.mark.skipif(
    os.geteuid() != 0, reason="mounts a filesystem of its own (unshare -m): needs root"
)
def test_a_full_disk_stops_the_coordinator_and_the_resume_writes_each_row_once(
    tmp_path: Path, site: SiteServer, server: RedisServer
) -> None:
    """The coordinator's job on a filesystem with room for some 70 lines of 200, a worker
    helping. Its failed write escaped the collecting loop: a traceback, collecting stopped for
    good, a torn line; the crawl stopped only when a write of meta.json failed too, and the
    resume never ended (59 rows were never written). Now the first failed write stops it as it stops
    one process: one line naming the file and the error, no torn line, the job paused, exit
    WRITE_FAILED; the results it could not write stay unacknowledged in Redis, so once room is
    made the resume writes every row exactly once."""
    rows, job = 200, "cfull"
    urls = [row_url(site, job, r, "/") for r in range(1, rows + 1)]
    csv = write_rows(tmp_path / "in.csv", urls)
    disk, logs = tmp_path / "disk", tmp_path / "logs"
    disk.mkdir()
    logs.mkdir()
    jobdir = disk / "job"
    # meta.json brought up to date once a minute, not every 2 s: the first write to fail is then
    # one of results.jsonl, not one of meta.json (which stops the crawl the same way).
    settings = (*cluster_settings(server), "URLCHECK_JOB_STATUS_INTERVAL=60")
    worker = Process(crawl_argv("-a", f"job={job}", settings=settings), logs=logs, name="worker")
    coordinator = shlex.join(
        crawl_argv("-a", f"csv={csv}", "-a", f"job={job}", "--jobdir", str(jobdir),
                   settings=settings)
    )  # fmt: skip
    try:
        in_own_mounts(
            f"""
mount -t tmpfs -o size=1m tmpfs {disk}
head -c {1024 * 1024 - 120 * 1024} /dev/zero > {disk}/filler
code=0; timeout 90 {coordinator} >{logs}/1.out 2>{logs}/1.err || code=$?; echo $code >{logs}/1.code
cp -a {jobdir} {tmp_path}/first
rm {disk}/filler
code=0; timeout 90 {coordinator} >{logs}/2.out 2>{logs}/2.err || code=$?; echo $code >{logs}/2.code
cp -a {jobdir} {tmp_path}/second
""",
            timeout=200,
        )
        assert worker.wait(timeout=60) == 0, worker.stderr()[-3000:]
    finally:
        if worker.poll() is None:
            worker.process.kill()
            worker.process.wait()

    written, meta = stopped_by_full_disk(logs, jobdir, tmp_path / "first", rows)
    assert meta.done_rows == len(written)

    err = (logs / "2.err").read_text()
    assert int((logs / "2.code").read_text()) == ExitCode.FINISHED, err[-3000:]
    second = tmp_path / "second" / "results.jsonl"
    assert_exact(second, rows)
    assert second.read_bytes().count(b"\n") == rows
    # The first run's lines are kept as they were; the resume appended the others.
    assert second.read_bytes().startswith((tmp_path / "first" / "results.jsonl").read_bytes())
    # A result Redis committed is written later, never checked again. Only the coordinator's
    # requests in flight when it stopped (one a host at most: their leases expire, and the rows
    # are checked again) were sent in vain, as one process's rows in hand are.
    requested = Counter(row for _, row in requested_rows(site, job))
    assert set(requested) == set(range(1, rows + 1))
    assert len([row for row, n in requested.items() if n > 1]) <= len(HOSTS)
    assert max(requested.values()) <= 2
