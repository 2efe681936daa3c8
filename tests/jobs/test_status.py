from __future__ import annotations

import json
from pathlib import Path

import pytest

from urlcheck.clock import Reading, utc_iso
from urlcheck.jobs.counts import Counts
from urlcheck.jobs.exitcodes import ExitCode, exit_code_for
from urlcheck.jobs.files import BackoffHost, JobMeta, JobState
from urlcheck.jobs.progress import Heartbeat, RunRate
from urlcheck.jobs.status import (
    STUCK_AFTER_SECONDS,
    catch_up,
    derive_status,
    format_duration,
    format_status,
    seconds_quiet,
)

NOW = 1_700_000_000.0


def meta(state: JobState, *, quiet_for: float | None, **fields: object) -> JobMeta:
    values: dict[str, object] = {"total_rows": 1000, "done_rows": 250, "rate": 50.0}
    values.update(fields)
    m = JobMeta(state=state, **values)  # type: ignore[arg-type]
    if quiet_for is not None:
        m.last_activity_at = utc_iso(NOW - quiet_for)
        m.started_at = utc_iso(NOW - quiet_for - 60)
    return m


def test_stuck_after_three_minutes_of_silence_while_processing() -> None:
    assert STUCK_AFTER_SECONDS == 180
    assert not derive_status(meta(JobState.PROCESSING, quiet_for=179.0), now=NOW).stuck
    assert not derive_status(meta(JobState.PROCESSING, quiet_for=180.0), now=NOW).stuck
    late = derive_status(meta(JobState.PROCESSING, quiet_for=180.5), now=NOW)
    assert late.stuck
    assert late.seconds_since_activity == 180.5


@pytest.mark.parametrize(
    "state", [JobState.PAUSED, JobState.CANCELLED, JobState.DONE, JobState.PENDING]
)
def test_never_stuck_unless_processing(state: JobState) -> None:
    assert not derive_status(meta(state, quiet_for=10_000.0), now=NOW).stuck


def test_processing_without_any_timestamp_is_stuck() -> None:
    assert derive_status(meta(JobState.PROCESSING, quiet_for=None), now=NOW).stuck


def test_started_at_stands_in_for_a_missing_last_activity() -> None:
    m = meta(JobState.PROCESSING, quiet_for=None)
    m.started_at = utc_iso(NOW - 30)
    assert not derive_status(m, now=NOW).stuck


def beating(quiet_for: float) -> JobMeta:
    """A processing job whose crawl, on boot "boot-a", last showed life ``quiet_for`` seconds
    before NOW (wall) and monotonic 5,000."""
    m = meta(JobState.PROCESSING, quiet_for=quiet_for)
    m.last_activity_monotonic = 5_000.0 - quiet_for
    m.boot_id = "boot-a"
    return m


def test_a_wall_clock_step_makes_no_healthy_job_stuck() -> None:
    m = beating(quiet_for=10.0)
    # the wall clock stepped 10 minutes forward, then an hour back: 10 s of silence all along
    for step in (600.0, -3600.0):
        status = derive_status(m, now=Reading(NOW + step, 5_000.0, "boot-a"))
        assert not status.stuck and status.seconds_since_activity == 10.0
    # the wall clock alone would say stuck
    assert derive_status(m, now=NOW + 600.0).stuck


def test_a_silent_job_is_stuck_whatever_the_wall_clock_says() -> None:
    m = beating(quiet_for=10.0)
    # 200 s of silence on the monotonic clock, though the wall clock went back meanwhile
    status = derive_status(m, now=Reading(NOW - 3600.0, 5_190.0, "boot-a"))
    assert status.stuck and status.seconds_since_activity == 200.0


def test_the_monotonic_clock_of_another_boot_is_not_compared() -> None:
    m = beating(quiet_for=10.0)
    # rebooted (the crawl is gone; monotonic restarted near 0): the wall clock decides
    assert seconds_quiet(m, Reading(NOW + 300.0, 50.0, "boot-b")) == 310.0
    assert derive_status(m, now=Reading(NOW + 300.0, 50.0, "boot-b")).stuck
    # a system without a boot id, and a meta.json of an older urlcheck: the wall clock too
    assert seconds_quiet(m, Reading(NOW, 5_100.0, None)) == 10.0
    # a reading ahead of the clock is none of its readings (a meta.json written by hand)
    assert seconds_quiet(m, Reading(NOW + 300.0, 4_000.0, "boot-a")) == 310.0
    m.last_activity_monotonic = None
    assert seconds_quiet(m, Reading(NOW, 5_100.0, "boot-a")) == 10.0


def test_meta_keeps_the_heartbeat_s_monotonic_reading_and_boot() -> None:
    m = beating(quiet_for=1.0)
    again = JobMeta.from_dict(json.loads(json.dumps(m.to_dict())))
    assert (again.last_activity_monotonic, again.boot_id) == (4_999.0, "boot-a")
    assert JobMeta.from_dict({}).last_activity_monotonic is None
    with pytest.raises(ValueError, match="last_activity_monotonic"):
        JobMeta.from_dict({"last_activity_monotonic": "soon"})
    with pytest.raises(ValueError, match="boot_id"):
        JobMeta.from_dict({"boot_id": 7})


def test_progress_figures() -> None:
    status = derive_status(meta(JobState.PROCESSING, quiet_for=5.0), now=NOW)
    assert (status.done_rows, status.total_rows, status.percent) == (250, 1000, 25.0)
    assert status.rate == 50.0
    assert status.eta_seconds == 900.0  # 750 rows at 50 rows/min
    paused = derive_status(meta(JobState.PAUSED, quiet_for=5.0), now=NOW)
    assert paused.eta_seconds is None
    unknown = derive_status(meta(JobState.PROCESSING, quiet_for=5.0, rate=None), now=NOW)
    assert unknown.eta_seconds is None
    no_total = derive_status(meta(JobState.PENDING, quiet_for=5.0, total_rows=0), now=NOW)
    assert no_total.percent is None


def test_text_and_json() -> None:
    m = meta(
        JobState.PROCESSING, quiet_for=400.0, backoff_hosts=[BackoffHost("slow.example", 2, 95.0)]
    )
    status = derive_status(m, now=NOW, jobdir="/jobs/a", holder_pid=4321)
    text = format_status(status)
    assert text.splitlines()[0] == "job /jobs/a: processing  STUCK: no activity for 6m 40s"
    assert "250 / 1,000 (25.0%)" in text
    assert "50.0 rows/min, ETA 15m 00s" in text
    assert "slow.example (attempt 2, 1m 35s left)" in text
    assert "crawl running, pid 4321" in text
    assert "\n  final answers: 2xx 0, 3xx 0, 4xx 0, 5xx 0, other 0, error 0\n" in text
    data = json.loads(json.dumps(status.to_dict()))
    assert data["stuck"] is True and data["running"] is True and data["pid"] == 4321
    assert data["state"] == "processing"
    assert data["backoff_hosts"] == [{"host": "slow.example", "attempt": 2, "seconds_left": 95.0}]
    assert data["eta_seconds"] == 900.0


def test_a_meta_json_without_first_answers_says_so() -> None:
    m = meta(JobState.PAUSED, quiet_for=5.0)
    m.counts = Counts.from_dict({"status": {"2xx": 250}, "verdict": {"none": 250}})
    text = format_status(derive_status(m, now=NOW))
    assert "\n  first answers: - (counted next run)\n" in text
    assert "\n  final answers: 2xx 250, 3xx 0, 4xx 0, 5xx 0, other 0, error 0\n" in text
    m.counts = Counts.from_dict(m.counts.to_dict() | {"first_status": {"3xx": 200, "2xx": 50}})
    assert "\n  first answers: 2xx 50, 3xx 200," in format_status(derive_status(m, now=NOW))


def test_text_for_a_crashed_job() -> None:
    status = derive_status(meta(JobState.PROCESSING, quiet_for=20.0), now=NOW, holder_pid=None)
    assert not status.stuck
    assert "none running (the crawl ended without closing: run it again to resume)" in (
        format_status(status)
    )


def test_format_duration() -> None:
    assert [format_duration(s) for s in (0, 59.4, 60, 3599, 3600, 90061)] == [
        "0s",
        "59s",
        "1m 00s",
        "59m 59s",
        "1h 00m",
        "1d 1h",
    ]


# --- progress timing --------------------------------------------------------------------------


def test_rate_excludes_paused_time() -> None:
    rate = RunRate(done_at_start=100, now=0.0)
    assert rate.rate(100, 0.5) is None  # not yet a second
    assert rate.rate(160, 60.0) == 60.0
    rate.pause(60.0)
    assert rate.rate(160, 600.0) == 60.0  # paused: no dilution
    rate.resume(600.0)
    assert rate.rate(220, 660.0) == 60.0
    assert rate.eta(220, 280, 660.0) == 60.0
    assert rate.eta(280, 280, 660.0) == 0.0
    assert RunRate(0, 0.0).eta(0, 10, 30.0) is None  # nothing done yet: no estimate


def test_heartbeat_writes_only_with_activity_or_backoff() -> None:
    beat = Heartbeat(30.0, now=0.0)
    assert not beat.due(10.0, backoff=False)
    assert not beat.due(31.0, backoff=False)  # no activity since the start: silence stays silent
    beat.activity(40.0)
    assert beat.due(41.0, backoff=False)
    beat.wrote(41.0)
    assert beat.last_activity == 40.0
    assert not beat.due(80.0, backoff=False)  # a quiet minute: nothing to report
    assert beat.due(80.0, backoff=True)  # ...unless a host is waiting out its back-off
    assert beat.last_activity == 80.0
    beat.wrote(80.0)
    assert not beat.due(100.0, backoff=True)  # not more often than the interval


# --- exit codes -------------------------------------------------------------------------------


def test_exit_codes_are_distinct_and_fixed() -> None:
    assert {c.name: c.value for c in ExitCode} == {
        "FINISHED": 0,
        "INPUT_ERROR": 2,
        "FAILED_VERDICTS": 3,
        "PAUSED": 4,
        "CANCELLED": 5,
        "LOCKED": 6,
        "NOT_RUNNING": 7,
        "ROWS_MISSING": 8,
        "GAVE_UP": 9,
        "WRITE_FAILED": 10,
    }


def test_exit_code_for_meta() -> None:
    done = JobMeta(state=JobState.DONE)
    assert exit_code_for(done) is ExitCode.FINISHED
    done.counts.add(404, 404, "fail")
    assert exit_code_for(done) is ExitCode.FAILED_VERDICTS
    assert exit_code_for(JobMeta(state=JobState.CANCELLED)) is ExitCode.CANCELLED
    for state in (JobState.PAUSED, JobState.PROCESSING, JobState.PENDING):
        assert exit_code_for(JobMeta(state=state)) is ExitCode.PAUSED


# --- catching up with results.jsonl ------------------------------------------------------------


def _line(row: int, final: int | None, verdict: str | None = None) -> bytes:
    first = 301 if verdict == "pass" else final
    result = {"row": row, "url": "u", "status": first, "final_status": final, "verdict": verdict}
    return (json.dumps(result) + "\n").encode()


def test_catch_up_counts_what_meta_json_has_not_seen(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    seen = _line(1, 200) + _line(2, 301, "pass")
    results.write_bytes(seen + _line(3, None) + _line(4, 503, "fail") + b'{"row": 5, "torn')
    meta = JobMeta(state=JobState.PROCESSING, results_path=str(results), done_rows=2)
    meta.counts.add(200, 200, None)
    meta.counts.add(301, 301, "pass")
    meta.results_bytes = len(seen)
    meta.last_activity_at = "2020-01-01T00:00:00.000Z"
    caught = catch_up(meta)
    assert caught.done_rows == 4 and meta.done_rows == 2  # meta itself is left as it was
    assert caught.counts.by_status == {
        "2xx": 1,
        "3xx": 1,
        "4xx": 0,
        "5xx": 1,
        "other": 0,
        "error": 1,
    }
    assert caught.counts.by_verdict == {"pass": 1, "fail": 1, "none": 2}
    assert caught.counts.by_first_status == {
        "2xx": 1,
        "3xx": 1,
        "4xx": 0,
        "5xx": 1,
        "other": 0,
        "error": 1,
    }
    text = format_status(derive_status(caught, now=NOW))
    assert "\n  first answers: 2xx 1, 3xx 1, 4xx 0, 5xx 1, other 0, error 1\n" in text
    assert "\n  final answers: 2xx 1, 3xx 1, 4xx 0, 5xx 1, other 0, error 1\n" in text
    assert caught.results_bytes == results.stat().st_size - len(b'{"row": 5, "torn')
    assert caught.last_activity_at is not None and caught.last_activity_at > "2020"
    assert catch_up(caught).done_rows == 4  # nothing new: the same


def test_catch_up_recounts_a_file_replaced_behind_meta_json(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_bytes(_line(7, 200))
    meta = JobMeta(results_path=str(results), done_rows=50, results_bytes=10_000)
    caught = catch_up(meta)
    assert (caught.done_rows, caught.counts.by_status["2xx"]) == (1, 1)
    moved = JobMeta(results_path="/nonexistent/job/results.jsonl", done_rows=0)
    assert catch_up(moved, tmp_path).done_rows == 1  # the job directory moved: its own file
    assert catch_up(moved).done_rows == 0


def test_a_meta_json_from_before_results_bytes_is_not_caught_up(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_bytes(_line(1, 200) + _line(2, 200))
    data = JobMeta(results_path=str(results), done_rows=2).to_dict()
    del data["results_bytes"]  # as an older urlcheck wrote it: its counts are the file's
    old = JobMeta.from_dict(data)
    assert old.results_bytes is None
    assert catch_up(old).done_rows == 2


def test_each_check_is_counted_by_rows_from_the_file_and_shown(tmp_path: Path) -> None:
    from urlcheck.check.hops import RowTask, hop
    from urlcheck.check.result import build_result
    from urlcheck.check.verdict import VerdictRules
    from urlcheck.jobs.done import scan_results

    def line(row: int, to: str, expected: str | None) -> bytes:
        task = RowTask(row, f"https://a.test/{row}", f"https://a.test/{row}", expected, {})
        chain = [
            hop(f"https://a.test/{row}", status=301, location="https://a.test/m"),
            hop("https://a.test/m", status=301, location=to),
            hop(to, status=200),
        ]
        return build_result(task, chain, rules=VerdictRules()).to_json_line()

    results = tmp_path / "results.jsonl"
    results.write_bytes(
        line(1, "http://a.test/", None)  # redirect_to_home, redirect_chain, https_downgrade
        + line(2, "https://a.test/x", "https://a.test/x")  # redirect_chain
        + line(3, "http://a.test/x", "http://a.test/x")  # https_downgrade fails it
    )
    meta = JobMeta(state=JobState.PROCESSING, results_path=str(results), results_bytes=0)
    caught = catch_up(meta)
    assert caught.counts.by_reason == {"https_downgrade": 1}
    assert caught.counts.by_warning == {
        "redirect_to_home": 1,
        "redirect_chain": 3,
        "https_downgrade": 1,
    }
    # A resume's scan counts the same, and meta.json keeps them.
    scanned = scan_results(results, repair=False).counts
    assert (scanned.by_reason, scanned.by_warning) == (
        caught.counts.by_reason,
        caught.counts.by_warning,
    )
    assert JobMeta.from_dict(json.loads(json.dumps(caught.to_dict()))).counts == caught.counts
    text = format_status(derive_status(caught, now=NOW))
    assert "  failed checks: https_downgrade 1" in text.splitlines()
    assert (
        "  warnings:      redirect_chain 3, https_downgrade 1, redirect_to_home 1"
        in text.splitlines()
    )
