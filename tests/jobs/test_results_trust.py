"""Issue 22 "Trust": results and rows a job can rely on. Real crawls in subprocesses against the
local site, on real files and filesystems (a small tmpfs for a full disk)."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.jobs.crawls import (
    SETTINGS,
    Crawl,
    assert_exact,
    assert_no_duplicates,
    make_csv,
    read_results,
    requested_rows,
    row_url,
    write_rows,
)
from tests.processes import crawl_argv, project_env, run
from tests.sitefixture import unused_port
from urlcheck.input.lines import MAX_LINE
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import JobMeta, JobState
from urlcheck.jobs.steer import steer

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl

as_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="mounts a filesystem of its own (unshare -m): needs root"
)


def said(stderr: str) -> list[str]:
    """urlcheck's own one-line messages (Scrapy logs its start before them)."""
    return [line for line in stderr.splitlines() if line.startswith("urlcheck:")]


def in_own_mounts(script: str, timeout: float = 120) -> None:
    """Run the shell ``script`` in a mount namespace of its own (its mounts vanish with it)."""
    done = subprocess.run(
        ["unshare", "-m", "sh", "-ec", script],
        env=project_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def stopped_by_full_disk(
    logs: Path, jobdir: Path, first: Path, rows: int
) -> tuple[set[int], JobMeta]:
    """The first run's end on a full disk (its logs/1.*; ``first``, a copy of its job
    directory): exit WRITE_FAILED, one line naming results.jsonl and ENOSPC, no traceback, no
    torn line, no row twice, some rows and fewer than half written, the job paused. The rows
    written and its meta.json."""
    err = (logs / "1.err").read_text()
    assert int((logs / "1.code").read_text()) == ExitCode.WRITE_FAILED, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    [stop] = [line for line in err.splitlines() if "Could not write" in line]
    assert f"{jobdir}/results.jsonl: [Errno 28] No space left on device" in stop
    written = assert_no_duplicates(read_results(first / "results.jsonl"))  # whole lines
    assert 20 < len(written) < rows // 2
    meta = JobMeta.load(first)
    assert meta is not None and meta.state is JobState.PAUSED, meta
    return written, meta


def crawl(csv: Path, jobdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy crawl check -a csv=CSV --jobdir JOBDIR ARGS`` run to its end."""
    return run(
        crawl_argv("-a", f"csv={csv}", "--jobdir", str(jobdir), *args, settings=SETTINGS),
        timeout=90,
    )


# --- point 7: a results path shared by two jobs ------------------------------------------------


def test_a_job_pointed_at_another_job_s_results_checks_every_row(
    tmp_path: Path, site: SiteServer
) -> None:
    """Job B with a new job directory and ``-a out=`` at job A's results took A's rows as done
    ("2 already done") and exited 0 without checking them. Now A's file is set aside as it was,
    and B checks each of its rows."""
    first = write_rows(tmp_path / "a.csv", [row_url(site, "share-a", r, "/") for r in (1, 2)])
    done = crawl(first, tmp_path / "job-a")
    assert done.returncode == ExitCode.FINISHED, done.stderr[-3000:]
    shared = tmp_path / "job-a" / "results.jsonl"
    a_lines = shared.read_bytes()
    assert len(read_results(shared)) == 2

    second = write_rows(tmp_path / "b.csv", [row_url(site, "share-b", r, "/") for r in (1, 2)])
    done = crawl(second, tmp_path / "job-b", "-a", f"out={shared}")
    assert done.returncode == ExitCode.FINISHED, done.stderr[-3000:]
    assert "is not this job's results" in done.stderr
    assert sorted(row for _, row in requested_rows(site, "share-b")) == [1, 2]
    results = read_results(shared)
    assert [(r["row"], r["url"]) for r in sorted(results, key=lambda r: r["row"])] == [
        (r, row_url(site, "share-b", r, "/")) for r in (1, 2)
    ]
    [aside] = (tmp_path / "job-a").glob("results.notthisjob-*.jsonl")
    assert aside.read_bytes() == a_lines  # job A's lines, as they were


def test_a_results_file_another_crawl_is_writing_is_refused(
    tmp_path: Path, site: SiteServer
) -> None:
    """Set aside under a running crawl, job A's lines would go on into the renamed file."""
    rows = 40
    running = Crawl(make_csv(tmp_path / "a.csv", site, "busy-a", rows), tmp_path / "job-a")
    running.wait_lines(3)
    # Paused (from this process: a command's start-up can outlast this crawl), the crawl runs on
    # with its results file open, however long the next step takes.
    assert steer("pause", tmp_path / "job-a", out=io.StringIO()) == ExitCode.FINISHED
    shared = tmp_path / "job-a" / "results.jsonl"
    second = write_rows(tmp_path / "b.csv", [row_url(site, "busy-b", 1, "/")])
    done = crawl(second, tmp_path / "job-b", "-a", f"out={shared}")
    assert done.returncode == ExitCode.LOCKED, done.stderr[-3000:]
    assert said(done.stderr) == [
        f"urlcheck: {shared} is being written by another crawl: two jobs can't share a results "
        "file (give this one another -a out=, or wait until the other ends)"
    ]
    assert steer("resume", tmp_path / "job-a", out=io.StringIO()) == ExitCode.FINISHED
    assert running.wait() == ExitCode.FINISHED, running.stderr()[-3000:]
    assert_exact(shared, rows)
    assert requested_rows(site, "busy-b") == []


# --- point 8: a full disk ---------------------------------------------------------------------


@as_root
def test_a_full_disk_pauses_the_job_and_the_resume_checks_each_row_left_once(
    tmp_path: Path, site: SiteServer
) -> None:
    """The job on a filesystem with room for some 130 lines of 400: the crawl went on requesting
    every row and threw the results away (a traceback a row, a torn line, exit 8). Now the first
    failed write stops it: one line naming the file and the error, no torn line, the job
    paused, exit WRITE_FAILED; once room is made, the resume requests each row left once and no
    row done."""
    rows = 400
    urls = [row_url(site, "disk", r, "/") for r in range(1, rows + 1)]
    csv = write_rows(tmp_path / "in.csv", urls)
    disk, logs = tmp_path / "disk", tmp_path / "logs"
    disk.mkdir()
    logs.mkdir()
    job = disk / "job"
    crawl = shlex.join(
        crawl_argv(
            "-a", f"csv={csv}", "--jobdir", str(job), settings=(*SETTINGS, "DOWNLOAD_DELAY=0")
        )
    )
    in_own_mounts(f"""
mount -t tmpfs -o size=1m tmpfs {disk}
head -c {1024 * 1024 - 160 * 1024} /dev/zero > {disk}/filler
code=0; {crawl} >{logs}/1.out 2>{logs}/1.err || code=$?; echo $code >{logs}/1.code
date +%s.%N >{logs}/between
cp -a {job} {tmp_path}/first
rm {disk}/filler
code=0; {crawl} >{logs}/2.out 2>{logs}/2.err || code=$?; echo $code >{logs}/2.code
cp -a {job} {tmp_path}/second
""")
    written, _ = stopped_by_full_disk(logs, job, tmp_path / "first", rows)
    between = float((logs / "between").read_text())
    arrivals = requested_rows(site, "disk")
    before = Counter(row for t, row in arrivals if t < between)
    # It stopped at once: only the rows in hand (a few per host) were requested in vain.
    assert len(before) - len(written) <= 20, (len(before), len(written))

    err = (logs / "2.err").read_text()
    assert int((logs / "2.code").read_text()) == ExitCode.FINISHED, err[-3000:]
    assert_exact(tmp_path / "second" / "results.jsonl", rows)
    after = Counter(row for t, row in arrivals_after(site, between))
    assert set(after) == set(range(1, rows + 1)) - written
    assert max(after.values()) == 1


def arrivals_after(site: SiteServer, when: float) -> list[tuple[float, int]]:
    return [(t, row) for t, row in requested_rows(site, "disk") if t >= when]


@as_root
def test_a_full_disk_stops_a_crawl_whose_rows_end_without_requests(tmp_path: Path) -> None:
    """Rows of a host given up on get their lines from the feed itself, without a request: a
    failed write of one of those closed the spider from inside that line's processing, and the
    close waited forever for it to end."""
    port = unused_port("127.0.0.9")
    csv = write_rows(tmp_path / "in.csv", [f"http://127.0.0.9:{port}/{r}" for r in range(300)])
    disk, logs = tmp_path / "disk", tmp_path / "logs"
    disk.mkdir()
    logs.mkdir()
    crawl = shlex.join(
        crawl_argv(
            "-a", f"csv={csv}", "--jobdir", str(disk / "job"),
            settings=(*SETTINGS, "DOWNLOAD_TIMEOUT=2", "RETRY_TIMES=0"),
        )
    )  # fmt: skip
    in_own_mounts(f"""
mount -t tmpfs -o size=96k tmpfs {disk}
code=0; timeout 60 {crawl} >{logs}/1.out 2>{logs}/1.err || code=$?; echo $code >{logs}/1.code
cp -a {disk}/job {tmp_path}/job
""")
    err = (logs / "1.err").read_text()
    assert int((logs / "1.code").read_text()) == ExitCode.WRITE_FAILED, err[-3000:]
    assert "Traceback" not in err and "Logging error" not in err, err[-3000:]
    results = read_results(tmp_path / "job" / "results.jsonl")
    assert 10 < len(results) < 300
    assert {r["error"] for r in results[2:]} == {"host_unavailable"}
    meta = JobMeta.load(tmp_path / "job")
    assert meta is not None and meta.state is JobState.PAUSED


@as_root
def test_a_disk_too_full_for_the_job_s_copy_of_the_csv_stops_at_once(
    tmp_path: Path, site: SiteServer
) -> None:
    urls = [row_url(site, "nocopy", r, "/") for r in range(1, 3001)]  # ~130 KB
    csv = write_rows(tmp_path / "in.csv", urls)
    disk, logs = tmp_path / "disk", tmp_path / "logs"
    disk.mkdir()
    logs.mkdir()
    crawl = shlex.join(
        crawl_argv("-a", f"csv={csv}", "--jobdir", str(disk / "job"), settings=SETTINGS)
    )
    in_own_mounts(f"""
mount -t tmpfs -o size=64k tmpfs {disk}
code=0; {crawl} >{logs}/1.out 2>{logs}/1.err || code=$?; echo $code >{logs}/1.code
""")
    err = (logs / "1.err").read_text()
    assert int((logs / "1.code").read_text()) == ExitCode.WRITE_FAILED, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    [stop] = [line for line in err.splitlines() if "Could not write" in line]
    assert f"{disk}/job/input.csv: [Errno 28] No space left on device" in stop
    assert requested_rows(site, "nocopy") == []


@as_root
def test_a_results_path_on_a_read_only_filesystem_is_refused_at_start(
    tmp_path: Path, site: SiteServer
) -> None:
    csv = write_rows(tmp_path / "in.csv", [row_url(site, "readonly", 1, "/")])
    ro, logs = tmp_path / "ro", tmp_path / "logs"
    ro.mkdir()
    logs.mkdir()
    for name, target in (("new", ro / "results.jsonl"), ("old", ro / "old.jsonl")):
        crawl = shlex.join(
            crawl_argv(
                "-a",
                f"csv={csv}",
                "-a",
                f"out={target}",
                "--jobdir",
                str(tmp_path / name),
                settings=SETTINGS,
            )
        )
        in_own_mounts(f"""
mount -t tmpfs -o size=64k tmpfs {ro}
echo '{{"row": 1}}' > {ro}/old.jsonl
mount -o remount,ro {ro}
code=0; {crawl} >{logs}/{name}.out 2>{logs}/{name}.err || code=$?; echo $code >{logs}/{name}.code
""")
        err = (logs / f"{name}.err").read_text()
        assert int((logs / f"{name}.code").read_text()) == ExitCode.WRITE_FAILED, err[-3000:]
        assert "Traceback" not in err
        assert said(err) == [
            f"urlcheck: cannot write {target}: its filesystem is mounted read-only"
            + ("" if name == "old" else f" (in {ro})")
        ]
    assert requested_rows(site, "readonly") == []


# --- point 9: results paths that are not regular files -----------------------------------------


@pytest.mark.parametrize("out", ["/dev/full", "/dev/null", "fifo", "directory"])
def test_a_results_path_that_is_not_a_regular_file_is_refused_at_start(
    tmp_path: Path, site: SiteServer, out: str
) -> None:
    """``-a out=/dev/full`` grew a log to 2.4 GB in 12 s; a FIFO nobody reads blocks forever."""
    csv = write_rows(tmp_path / "in.csv", [row_url(site, f"notafile-{out}", 1, "/")])
    path = Path(out) if out.startswith("/") else tmp_path / out
    if out == "fifo":
        os.mkfifo(path)
    elif out == "directory":
        path.mkdir()
    done = crawl(csv, tmp_path / "job", "-a", f"out={path}")
    assert done.returncode == ExitCode.INPUT_ERROR, done.stderr[-3000:]
    kind = {"fifo": "a pipe (FIFO)", "directory": "a directory"}.get(out, "a character device")
    assert "Traceback" not in done.stderr
    assert said(done.stderr) == [
        f"urlcheck: {path} is {kind}, not a regular file: urlcheck writes results and job files "
        "only to regular files (name a file, or leave out -a out=)"
    ]
    assert requested_rows(site, f"notafile-{out}") == []


def test_results_to_stdout_through_a_pipe_are_refused_at_start(
    tmp_path: Path, site: SiteServer
) -> None:
    """``-a out=/dev/stdout | cat`` hung the crawl, deaf to SIGTERM."""
    csv = write_rows(tmp_path / "in.csv", [row_url(site, "stdout", 1, "/")])
    argv = crawl_argv(
        "-a", f"csv={csv}", "--jobdir", str(tmp_path / "job"), "-a", "out=/dev/stdout"
    )
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{shlex.join(argv)} | cat"],
        env=project_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == ExitCode.INPUT_ERROR, done.stderr[-3000:]
    [line] = said(done.stderr)
    assert "Traceback" not in done.stderr
    assert line.startswith("urlcheck: /dev/stdout is ")
    assert requested_rows(site, "stdout") == []


# --- point 12: rows that keep their numbers ------------------------------------------------------


def test_a_line_over_the_limit_is_a_row_of_its_own(tmp_path: Path, site: SiteServer) -> None:
    """A physical line over 32 MiB was skipped with a warning and the rows after it renumbered
    (row 3 written as row 2), so job diff and a resume matched the wrong rows. Now it is row 2,
    with an ``invalid_row`` line, and row 3 is row 3."""
    urls = [row_url(site, "long", r, "/") for r in (1, 2, 3)]
    csv = tmp_path / "in.csv"
    with csv.open("wb") as out:
        out.write(f"url,note\n{urls[0]},one\n".encode())
        out.write(f"{urls[1]}&pad=".encode() + b"x" * (MAX_LINE + 1) + b",two\n")
        out.write(f"{urls[2]},three\n".encode())
    done = crawl(csv, tmp_path / "job")
    assert done.returncode == ExitCode.FINISHED, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    results = {r["row"]: r for r in read_results(tmp_path / "job" / "results.jsonl")}
    assert sorted(results) == [1, 2, 3]
    assert (results[1]["url"], results[3]["url"]) == (urls[0], urls[2])
    assert results[3]["input"] == {"note": "three"} and results[3]["final_status"] == 200
    long = results[2]
    assert long["error"] == "invalid_row" and long["url"] == "", long
    assert long["error_message"].startswith("the line is over the line limit (")
    assert sorted(row for _, row in requested_rows(site, "long")) == [1, 3]
    [warning] = [line for line in done.stderr.splitlines() if "over the line limit" in line]
    assert f"row 2 (byte {len(urls[0]) + 14}): the line is over the line limit" in warning


def test_a_csv_through_a_pipe_is_refused_with_one_line(tmp_path: Path, site: SiteServer) -> None:
    """``-a csv=<(...)`` gave a traceback or hung: the CSV is read more than once."""
    url = row_url(site, "pipe", 1, "/")
    argv = crawl_argv("--jobdir", str(tmp_path / "job"), settings=SETTINGS)
    done = subprocess.run(
        ["bash", "-c", f"{shlex.join(argv)} -a csv=<(printf 'url\\n{url}\\n')"],
        env=project_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == ExitCode.INPUT_ERROR, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    [line] = said(done.stderr)
    assert line.startswith("urlcheck: /dev/fd/") and "is a pipe, not a file" in line, line
    assert requested_rows(site, "pipe") == []
