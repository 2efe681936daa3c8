"""Re-checking what failed (issue 10 point 2), end to end: ``-a recheck=connect,
host_unavailable,5xx`` on a finished job checks again just the rows whose line says so (with the
per-host circuit, a host refusing connections gives ``connect`` lines, then ``host_unavailable``
ones), and afterwards the job has exactly one line per row, the newest; the previous lines are
kept aside."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.jobs.crawls import (
    Run,
    assert_exact,
    requested_rows,
    row_url,
    write_rows,
)
from tests.sitefixture import SiteServer, unused_port
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import JobMeta, JobState
from urlcheck.jobs.recheck import Recheck, rechecked_path, take_out

pytestmark = pytest.mark.crawl

DOWN_HOST = "127.0.0.8"  # nothing listens there in the first run


def test_recheck_takes_just_the_matching_rows_and_keeps_one_line_each(
    tmp_path: Path, site: SiteServer
) -> None:
    rows = 30
    port = unused_port(DOWN_HOST)
    urls = []
    for row in range(1, rows + 1):
        if row % 10 == 0:  # 3 rows on a host that is down, then up
            urls.append(f"http://{DOWN_HOST}:{port}/ok?t=recheck&r={row}")
        elif row % 10 == 5:  # 3 rows answering 500
            urls.append(row_url(site, "recheck", row, "/always/500"))
        else:
            urls.append(row_url(site, "recheck", row, "/ok"))
    work = tmp_path / "work"
    work.mkdir()
    write_rows(work / "urls.csv", urls)
    results = work / "job" / "results.jsonl"

    first = Run(work, "-a", "csv=urls.csv", "--jobdir", "job")
    assert first.wait() == ExitCode.FINISHED, first.stderr()[-3000:]
    before = {r["row"]: r for r in assert_exact(results, rows)}
    # Two rows meet the refused connection, then the host's circuit opens (host_unavailable).
    down = {r for r, x in before.items() if x["error"] in ("connect", "host_unavailable")}
    assert down == {10, 20, 30}
    assert {r for r, x in before.items() if x["final_status"] == 500} == {5, 15, 25}

    with SiteServer((DOWN_HOST,), port=port):
        again = Run(
            work,
            "-a",
            "csv=urls.csv",
            "--jobdir",
            "job",
            "-a",
            "recheck=connect,host_unavailable,5xx",
        )
        assert again.wait() == ExitCode.FINISHED, again.stderr()[-3000:]
    assert "Re-checking 6 rows" in again.stderr(), again.stderr()[-3000:]
    assert "connect 2, host_unavailable 1, 5xx 3" in again.stderr()
    after = {r["row"]: r for r in assert_exact(results, rows)}  # one line per row
    for row in (10, 20, 30):
        assert (after[row]["error"], after[row]["final_status"]) == (None, 200)
    for row in (5, 15, 25):
        assert after[row]["final_status"] == 500
        assert after[row]["checked_at"] > before[row]["checked_at"]  # checked again
    untouched = set(range(1, rows + 1)) - {5, 10, 15, 20, 25, 30}
    assert all(after[row] == before[row] for row in untouched)
    # The demo site saw rows 5, 15, 25 twice and every other row of its own once.
    seen = Counter(row for _, row in requested_rows(site, "recheck"))
    assert {row for row, n in seen.items() if n == 2} == {5, 15, 25}
    side = (work / "job" / "results.jsonl.rechecked").read_text(encoding="utf-8")
    kept = [json.loads(line) for line in side.splitlines()]
    assert sorted(r["row"] for r in kept) == [5, 10, 15, 20, 25, 30]
    meta = JobMeta.load(work / "job")
    assert meta is not None and (meta.state, meta.done_rows) == (JobState.DONE, rows)
    assert meta.counts.by_status["error"] == 0

    # Nothing left to re-check: a warning, no request, still one line per row.
    none_left = Run(work, "-a", "csv=urls.csv", "--jobdir", "job", "-a", "recheck=connect")
    assert none_left.wait() == ExitCode.FINISHED, none_left.stderr()[-3000:]
    assert "recheck=connect matched no row" in none_left.stderr()
    assert_exact(results, rows)


def test_a_bad_recheck_token_is_one_line_and_exit_2(tmp_path: Path, site: SiteServer) -> None:
    work = tmp_path / "work"
    work.mkdir()
    write_rows(work / "urls.csv", [row_url(site, "recheck-bad", 1, "/ok")])
    run = Run(work, "-a", "csv=urls.csv", "-a", "recheck=5xx,Time Out")
    assert run.wait() == ExitCode.INPUT_ERROR
    [line] = [x for x in run.stderr().splitlines() if x.startswith("urlcheck: ")]
    assert "'time out' is neither a status class" in line
    assert not (work / ".urlcheck").exists()


# --- the filter and the take-out, on their own ---------------------------------------------


def line(row: int, final: int | None, error: str | None = None, verdict: str | None = None) -> str:
    result = {"row": row, "final_status": final, "error": error, "verdict": verdict}
    return json.dumps(result) + "\n"


def test_recheck_tokens_match_class_status_kind_error_and_fail() -> None:
    recheck = Recheck.parse(" 5XX, 404 ,timeout,fail,,timeout")
    assert recheck.terms == ("5xx", "404", "timeout", "fail")
    assert recheck.match({"final_status": 503}) == "5xx"
    assert recheck.match({"final_status": 404}) == "404"
    assert recheck.match({"final_status": 410}) is None
    assert recheck.match({"final_status": None, "error": "timeout"}) == "timeout"
    assert recheck.match({"final_status": None, "error": "dns"}) is None
    assert recheck.match({"final_status": 200, "verdict": "fail"}) == "fail"
    assert Recheck.parse("error").match({"final_status": None, "error": "dns"}) == "error"
    for bad in ("", " , ", "5x", "time-out", "99"):
        with pytest.raises(ValueError, match="recheck"):
            Recheck.parse(bad)


def test_take_out_removes_the_lines_atomically_and_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    text = (
        line(1, 200)
        + line(2, 503)
        + line(3, None, "timeout")
        + line(4, 200, None, "fail")
        + '{"row": 5, "broken\n'
    )
    path.write_text(text, encoding="utf-8")
    taken = take_out(path, Recheck.parse("5xx,timeout"))
    assert dict(taken) == {"5xx": 1, "timeout": 1}
    assert path.read_text(encoding="utf-8") == line(1, 200) + line(4, 200, None, "fail") + (
        '{"row": 5, "broken\n'  # unreadable lines are the scan's business
    )
    assert rechecked_path(path).read_text(encoding="utf-8") == line(2, 503) + line(
        3, None, "timeout"
    )
    assert not list(tmp_path.glob(".*tmp"))
    assert take_out(path, Recheck.parse("404")) == Counter()
