from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from urlcheck.input.csvfile import sha256_file
from urlcheck.jobs.errors import InputMismatchError
from urlcheck.jobs.files import META_FILE, JobMeta, JobState
from urlcheck.jobs.prepare import check_input, free_name, prepare_job
from urlcheck.jobs.recheck import Recheck

NOW = 1_700_000_000.0


def clock() -> float:
    return NOW


# The URL of each row of the ``csv`` fixture: a line counts only with its row's URL.
URLS = {1: "http://a/", 2: "http://b/", 3: "http://c/"}


def result_line(row: int, verdict: str | None = None, url: str | None = None) -> str:
    url = url if url is not None else URLS.get(row, "http://z/")
    return (
        json.dumps(
            {
                "row": row,
                "url": url,
                "requested_url": url,
                "status": 200,
                "final_url": url,
                "final_status": 200,
                "verdict": verdict,
            }
        )
        + "\n"
    )


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "in.csv"
    path.write_text("url\nhttp://a/\nhttp://b/\nhttp://c/\n", encoding="utf-8")
    return path


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_new_job(tmp_path: Path, csv: Path) -> None:
    jobdir = tmp_path / "job"
    job = prepare_job(jobdir, csv, clock=clock)
    assert job.fresh and not job.archived
    assert job.results_path == jobdir / "results.jsonl"
    assert len(job.scan.done) == 0
    meta = JobMeta.load(jobdir)
    assert meta is not None
    assert meta.state is JobState.PENDING
    assert meta.created_at == "2023-11-14T22:13:20.000Z"
    assert meta.input_sha256 == sha256_file(csv) == job.input_checksum
    assert meta.input_path == str(csv.resolve())
    # The job keeps its own copy of the input, and the run reads that copy.
    assert meta.input_copy == "input.csv" and job.input_path == jobdir / "input.csv"
    assert (jobdir / "input.csv").read_bytes() == csv.read_bytes()
    context = job.context(total_rows=3, user_agent="ua")
    assert (context.total_rows, context.done_rows, context.user_agent) == (3, 0, "ua")
    assert context.paused_hosts() == []


def test_resume_reads_and_repairs_the_results(tmp_path: Path, csv: Path) -> None:
    jobdir = tmp_path / "job"
    prepare_job(jobdir, csv, clock=clock)
    meta = JobMeta.load(jobdir)
    assert meta is not None
    meta.state = JobState.PROCESSING  # as a SIGKILL leaves it
    meta.save(jobdir)
    (jobdir / "results.jsonl").write_text(
        result_line(1, "pass") + result_line(3, "fail") + '{"row": 2, "ur', encoding="utf-8"
    )
    job = prepare_job(jobdir, csv, clock=clock)
    assert not job.fresh
    assert sorted(job.scan.done) == [1, 3]
    assert job.scan.repaired_bytes == len('{"row": 2, "ur')
    meta = JobMeta.load(jobdir)
    assert meta is not None
    assert meta.state is JobState.PROCESSING
    assert meta.done_rows == 2
    assert meta.counts.by_verdict == {"pass": 1, "fail": 1, "none": 0}
    context = job.context(total_rows=3)
    assert (context.done_rows, context.counts.by_verdict["fail"]) == (2, 1)


def test_resume_reads_only_the_row_keys_of_what_meta_json_vouches_for(
    tmp_path: Path, csv: Path
) -> None:
    jobdir = tmp_path / "job"
    prepare_job(jobdir, csv, clock=clock)
    results = jobdir / "results.jsonl"
    results.write_text(result_line(1, "pass") + result_line(3, "fail"), encoding="utf-8")
    job = prepare_job(jobdir, csv, clock=clock)  # meta.json now vouches for both lines
    assert job.meta.results_bytes == results.stat().st_size and job.meta.done_rows == 2
    with results.open("a", encoding="utf-8") as out:  # a crash after one more line
        out.write(result_line(2, "pass"))
    meta = JobMeta.load(jobdir)
    assert meta is not None
    meta.counts.by_verdict = {"pass": 0, "fail": 2, "none": 0}  # no line says so: not re-read
    meta.save(jobdir)
    job = prepare_job(jobdir, csv, clock=clock)
    assert sorted(job.scan.done) == [1, 2, 3]
    assert job.scan.counts.by_verdict == {"pass": 1, "fail": 2, "none": 0}
    # A re-check rewrites the file: meta.json vouches for nothing then.
    job = prepare_job(jobdir, csv, clock=clock, recheck=Recheck.parse("fail"))
    assert sorted(job.scan.done) == [1, 2]
    assert job.scan.counts.by_verdict == {"pass": 2, "fail": 0, "none": 0}


def test_resume_with_another_csv_touches_nothing(tmp_path: Path, csv: Path) -> None:
    jobdir = tmp_path / "job"
    prepare_job(jobdir, csv, clock=clock)
    (jobdir / "results.jsonl").write_text(result_line(1) + '{"row": 2', encoding="utf-8")
    before = snapshot(jobdir)
    other = tmp_path / "other.csv"
    other.write_text("url\nhttp://z/\n", encoding="utf-8")
    with pytest.raises(InputMismatchError) as caught:
        prepare_job(jobdir, other, clock=lambda: NOW + 60)
    message = str(caught.value)
    assert str(other.resolve()) in message and str(jobdir) in message
    assert "nothing was changed" in message
    assert snapshot(jobdir) == before
    with pytest.raises(InputMismatchError):
        check_input(jobdir, other)


def test_a_finished_job_starts_a_fresh_run_and_keeps_the_last(tmp_path: Path, csv: Path) -> None:
    jobdir = tmp_path / "job"
    prepare_job(jobdir, csv, clock=clock)
    results = jobdir / "results.jsonl"
    results.write_text(result_line(1) + result_line(2) + result_line(3), encoding="utf-8")
    meta = JobMeta.load(jobdir)
    assert meta is not None
    meta.state = JobState.DONE
    meta.finished_at = "2024-05-06T07:08:09.000Z"
    meta.save(jobdir)
    # a changed CSV is fine for a new run
    old_input = csv.read_bytes()
    csv.write_text("url\nhttp://a/\nhttp://d/\n", encoding="utf-8")
    job = prepare_job(jobdir, csv, clock=lambda: NOW + 3600)
    assert job.fresh
    assert [p.name for p in job.archived] == [
        "results.20240506T070809Z.jsonl",
        "meta.20240506T070809Z.json",
        "input.20240506T070809Z.csv",  # the CSV changed: the old copy goes with its results
    ]
    assert (jobdir / "input.20240506T070809Z.csv").read_bytes() == old_input
    assert (jobdir / "input.csv").read_bytes() == csv.read_bytes()
    assert (jobdir / "results.20240506T070809Z.jsonl").read_text(encoding="utf-8").count("\n") == 3
    assert not results.exists()
    assert len(job.scan.done) == 0
    new = JobMeta.load(jobdir)
    assert new is not None
    assert new.state is JobState.PENDING and new.done_rows == 0
    assert new.input_sha256 == sha256_file(csv)
    assert new.created_at == "2023-11-14T23:13:20.000Z"
    old = json.loads((jobdir / "meta.20240506T070809Z.json").read_text(encoding="utf-8"))
    assert old["state"] == "done"


def test_cancelled_counts_as_finished(tmp_path: Path, csv: Path) -> None:
    jobdir = tmp_path / "job"
    prepare_job(jobdir, csv, clock=clock)
    meta = JobMeta.load(jobdir)
    assert meta is not None
    meta.state = JobState.CANCELLED
    meta.save(jobdir)
    job = prepare_job(jobdir, csv, clock=clock)
    assert job.fresh
    assert [p.name for p in job.archived] == ["meta.20231114T221320Z.json"]  # no results yet


def test_results_without_meta_count_as_done(tmp_path: Path, csv: Path) -> None:
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    (jobdir / "results.jsonl").write_text(result_line(2), encoding="utf-8")
    job = prepare_job(jobdir, csv, clock=clock)
    assert list(job.scan.done) == [2]
    assert (jobdir / META_FILE).exists()


def test_a_row_the_csv_does_not_have_sets_the_results_aside(tmp_path: Path, csv: Path) -> None:
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    lines = result_line(2) + result_line(7)
    (jobdir / "results.jsonl").write_text(lines, encoding="utf-8")
    job = prepare_job(jobdir, csv, clock=clock)
    assert len(job.scan.done) == 0 and not (jobdir / "results.jsonl").exists()
    [aside] = job.archived
    assert aside.name == "results.notthisjob-20231114T221320Z.jsonl"
    assert aside.read_text(encoding="utf-8") == lines  # as it was: never rewritten


def test_results_of_another_input_are_set_aside_untouched(
    tmp_path: Path, csv: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 22 point 7: a results path shared with another job (``-a out=``) took that job's
    rows as done. A line counts only when its URL is its row's URL in this job's CSV; a file
    with one that is not, or with no result at all, is renamed aside, logged, and never
    rewritten (not even its torn last line or its malformed lines)."""
    other = tmp_path / "other.jsonl"
    lines = (
        result_line(1)
        + "not a result\n"
        + result_line(2, url="http://elsewhere/")
        + result_line(3)
        + '{"row": 4'
    )
    other.write_bytes(lines.encode())
    job = prepare_job(tmp_path / "job", csv, other, clock=clock)
    assert job.fresh and len(job.scan.done) == 0
    assert not other.exists()
    [aside] = job.archived
    assert aside.read_bytes() == lines.encode()
    assert not (tmp_path / "other.jsonl.dropped").exists()
    assert "line 3's URL is not the URL of row 2 in the input" in caplog.text
    meta = JobMeta.load(tmp_path / "job")
    assert meta is not None and meta.done_rows == 0
    # A file with no results in it at all (a log, say) is set aside too.
    other.write_text("hello\nworld\n", encoding="utf-8")
    job = prepare_job(tmp_path / "job", csv, other, clock=clock)
    assert len(job.scan.done) == 0 and not other.exists()
    assert "no line of it is a urlcheck result" in caplog.text
    # The job's own results, torn and with a bad line, are its own: repaired, not set aside.
    other.write_text(result_line(1) + "junk\n" + result_line(3) + '{"row": 2', encoding="utf-8")
    job = prepare_job(tmp_path / "job", csv, other, clock=clock)
    assert sorted(job.scan.done) == [1, 3] and job.scan.malformed == 1
    assert other.read_text(encoding="utf-8") == result_line(1) + result_line(3)


def test_free_name(tmp_path: Path) -> None:
    stamp = "20240101T000000Z"
    assert free_name(tmp_path / "results.jsonl", stamp).name == f"results.{stamp}.jsonl"
    assert free_name(tmp_path / "results.jsonl.dropped", stamp).name == (
        f"results.{stamp}.jsonl.dropped"
    )
    assert free_name(tmp_path / "out", stamp).name == f"out.{stamp}"
    (tmp_path / f"meta.{stamp}.json").write_text("{}")
    assert free_name(tmp_path / "meta.json", stamp).name == f"meta.{stamp}-1.json"


def test_the_job_resumes_from_its_own_copy_when_the_csv_is_gone(tmp_path: Path, csv: Path) -> None:
    jobdir = tmp_path / "job"
    original = csv.read_bytes()
    prepare_job(jobdir, csv, clock=clock)
    (jobdir / "results.jsonl").write_text(result_line(1), encoding="utf-8")
    csv.unlink()
    moved = tmp_path / "elsewhere" / "job"
    moved.parent.mkdir()
    jobdir.rename(moved)  # another place, as on another machine
    job = prepare_job(moved, moved / "input.csv", clock=clock)
    assert not job.fresh and list(job.scan.done) == [1]
    assert job.input_path == moved / "input.csv" and job.input_path.read_bytes() == original
    meta = JobMeta.load(moved)
    assert meta is not None
    assert meta.input_path == str(csv.resolve())  # where it came from, kept
    assert meta.input_sha256 == sha256_file(moved / "input.csv")


def test_an_unchanged_csv_is_not_copied_again(tmp_path: Path, csv: Path) -> None:
    jobdir = tmp_path / "job"
    prepare_job(jobdir, csv, clock=clock)
    copy = jobdir / "input.csv"
    inode = copy.stat().st_ino
    prepare_job(jobdir, csv, clock=clock)
    assert copy.stat().st_ino == inode


def test_results_of_a_workbook_are_compared_with_the_rows_of_its_sheet(tmp_path: Path) -> None:
    """A workbook's rows are the sheet's a run reads: another job's results given with
    ``-a out=`` are compared with those URLs, and a resume with the sheet the job started on."""
    book = openpyxl.Workbook()
    first: Any = book.active
    first.title = "Old"
    for url in ("url", "http://x/", "http://y/"):
        first.append([url])
    second: Any = book.create_sheet("Redirects")
    for url in ("url", "http://a/", "http://b/"):
        second.append([url])
    book.save(tmp_path / "in.xlsx")
    # the second sheet's rows (a sheet's row numbers are its own: the header is row 1)
    lines = result_line(2, url="http://a/") + result_line(3, url="http://b/")
    out = tmp_path / "shared.jsonl"
    out.write_text(lines, encoding="utf-8")
    job = prepare_job(tmp_path / "job", tmp_path / "in.xlsx", out, sheet="Redirects", clock=clock)
    assert sorted(job.scan.done) == [2, 3] and not job.archived
    meta = JobMeta.load(tmp_path / "job")
    assert meta is not None
    meta.input_sheet, meta.results_bytes = "Redirects", 0  # no vouch: the URLs are compared
    meta.save(tmp_path / "job")
    resumed = prepare_job(tmp_path / "job", tmp_path / "in.xlsx", out, clock=clock)
    assert sorted(resumed.scan.done) == [2, 3] and not resumed.archived
    # Read against the first sheet (another job on it), the same lines are not its rows.
    other = prepare_job(tmp_path / "other", tmp_path / "in.xlsx", out, clock=clock)
    assert len(other.scan.done) == 0 and not out.exists()
    [aside] = other.archived
    assert aside.read_text(encoding="utf-8") == lines
