"""Job files are never opened through a link (urlcheck.jobs.nofollow), and a file made from
another's lines is never more readable than it: real files, real links, real permissions."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from urlcheck.jobs.done import dropped_path, scan_results
from urlcheck.jobs.errors import JobError
from urlcheck.jobs.files import META_FILE, ControlAction, JobMeta, read_json, write_control
from urlcheck.jobs.lock import JobLock, lock_holder
from urlcheck.jobs.nofollow import LinkedFileError, open_nofollow, refuse_links
from urlcheck.jobs.prepare import prepare_job
from urlcheck.jobs.steer import steer

SECRET = b"a private line\n"


@pytest.fixture
def private(tmp_path: Path) -> Path:
    target = tmp_path / "private.txt"
    target.write_bytes(SECRET)
    target.chmod(0o600)
    return target


def _line(row: int) -> bytes:
    return (
        json.dumps(
            {"row": row, "url": f"http://a.test/{row}", "final_status": 200, "verdict": None}
        )
        + "\n"
    ).encode()


def test_the_repair_gives_what_it_writes_the_results_file_s_permissions(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_bytes(_line(1) + b"garbage of a private file\n" + _line(2) + b'{"row": 3, "ur')
    results.chmod(0o600)
    scan = scan_results(results)
    assert (scan.lines, scan.malformed, scan.repaired_bytes) == (2, 1, 14)
    assert results.read_bytes() == _line(1) + _line(2)
    assert oct(results.stat().st_mode & 0o777) == "0o600"  # the rewrite kept it
    assert oct(dropped_path(results).stat().st_mode & 0o777) == "0o600"  # never wider


@pytest.mark.parametrize("mode", ["rb", "ab", "wb", "xb", "r"])
def test_a_link_is_never_opened(tmp_path: Path, private: Path, mode: str) -> None:
    link = tmp_path / "results.jsonl"
    link.symlink_to(private)
    # O_EXCL refuses any existing name, a link included: nothing is followed either way
    refused = FileExistsError if mode == "xb" else LinkedFileError
    with pytest.raises(refused):
        open_nofollow(link, mode)  # type: ignore[call-overload]
    assert private.read_bytes() == SECRET


def test_a_file_written_in_place_with_another_hard_link_is_refused(
    tmp_path: Path, private: Path
) -> None:
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    os.link(private, jobdir / "results.jsonl")
    with pytest.raises(LinkedFileError, match="2 hard links"):
        refuse_links(jobdir)
    with pytest.raises(LinkedFileError, match="2 hard links"):
        open_nofollow(jobdir / "results.jsonl", "ab")
    assert private.read_bytes() == SECRET
    (jobdir / "results.jsonl").unlink()
    os.link(private, jobdir / "meta.json")  # replaced by a rename, never written in place
    refuse_links(jobdir)


def test_results_kept_elsewhere_through_a_link_are_refused(tmp_path: Path, private: Path) -> None:
    csv = tmp_path / "in.csv"
    csv.write_text("url\nhttp://a.test/\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    out.symlink_to(private)
    with pytest.raises(LinkedFileError, match=r"out\.jsonl is a symbolic link"):
        prepare_job(tmp_path / "job", csv, out)
    assert private.read_bytes() == SECRET


def test_a_link_planted_at_the_temporary_name_is_replaced_not_written(
    tmp_path: Path, private: Path
) -> None:
    (tmp_path / f".{META_FILE}.{os.getpid()}.tmp").symlink_to(private)
    JobMeta().save(tmp_path)
    assert private.read_bytes() == SECRET
    assert JobMeta.load(tmp_path) == JobMeta()


def test_the_locks_and_the_control_file_refuse_links(tmp_path: Path, private: Path) -> None:
    (tmp_path / "job.lock").symlink_to(private)
    with pytest.raises(LinkedFileError, match=r"job\.lock is a symbolic link"):
        JobLock(tmp_path).acquire()
    with pytest.raises(LinkedFileError, match=r"job\.lock is a symbolic link"):
        lock_holder(tmp_path)
    (tmp_path / "control.lock").symlink_to(private)
    with pytest.raises(LinkedFileError, match=r"control\.lock is a symbolic link"):
        write_control(tmp_path, ControlAction.PAUSE)
    (tmp_path / "meta.json").symlink_to(private)
    with pytest.raises(LinkedFileError, match=r"meta\.json is a symbolic link"):
        read_json(tmp_path / "meta.json")
    assert private.read_bytes() == SECRET
    assert isinstance(LinkedFileError("x"), JobError)


def test_job_status_of_a_directory_with_a_link_is_one_line(tmp_path: Path, private: Path) -> None:
    JobMeta().save(tmp_path)
    (tmp_path / "job.lock").symlink_to(private)
    out, err = io.StringIO(), io.StringIO()
    assert steer("status", tmp_path, out=out, err=err) == 2
    assert out.getvalue() == ""
    [line] = err.getvalue().splitlines()
    assert line.startswith("urlcheck: ") and "job.lock is a symbolic link" in line
