"""`scrapy job diff OLD NEW`: rows matched by row and URL, regressions and the exit code."""

from __future__ import annotations

import io
import json
from pathlib import Path

from tests.processes import scrapy_job
from tests.reports.reportrows import result, write_results
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.reports.diff import DiffSummary, RowChange, diff, regressions
from urlcheck.reports.run import DIFF_REGRESSED, run_diff


def _old_and_new(tmp_path: Path) -> tuple[Path, Path]:
    old = [
        result(1, verdict="pass", expected="http://127.0.0.2/p1"),
        result(2),
        result(3, status=301, final_status=200, final_url="http://127.0.0.2/a"),
        result(4),
        result(5),
        result(6),
    ]
    new = [
        result(5),  # unchanged, in another order
        result(1, verdict="fail", expected="http://127.0.0.2/p1", reasons=["final_url_mismatch"]),
        result(2, status=404, final_status=404),  # 2xx -> 4xx
        result(3, status=302, final_status=200, final_url="http://127.0.0.2/b"),  # not a regression
        result(4, error="timeout", final_status=None, final_url=None, status=None),  # new error
        result(6, url="http://127.0.0.2/other"),  # another URL on row 6
        result(7),  # a row the old run did not have
    ]
    return (
        write_results(tmp_path / "old" / "results.jsonl", old),
        write_results(tmp_path / "new.jsonl", new, tail='{"row": 8, "url": "torn'),
    )


def test_changes_regressions_and_rows_on_one_side(tmp_path):
    old, new = _old_and_new(tmp_path)
    *changes, summary = diff(old.parent, new)  # a job directory or a results file
    assert isinstance(summary, DiffSummary)
    by = {(c.row, c.change): c for c in changes if isinstance(c, RowChange)}
    assert set(by) == {
        (1, "changed"),
        (2, "changed"),
        (3, "changed"),
        (4, "changed"),
        (6, "removed"),
        (6, "added"),
        (7, "added"),
    }
    assert by[1, "changed"].fields == {
        "verdict": ["pass", "fail"],
        "reasons": [[], ["final_url_mismatch"]],
    }
    assert by[1, "changed"].regressions == ["verdict pass -> fail"]
    assert by[2, "changed"].regressions == ["final status 200 -> 404"]
    assert by[2, "changed"].fields["status"] == [200, 404]
    assert by[3, "changed"].fields == {
        "status": [301, 302],
        "final_url": ["http://127.0.0.2/a", "http://127.0.0.2/b"],
    }
    assert not by[3, "changed"].regressed
    assert by[4, "changed"].regressions == ["new error timeout"]
    assert by[6, "removed"].url == "http://127.0.0.2/p6"
    assert by[6, "added"].url == "http://127.0.0.2/other"
    assert (summary.compared, summary.changed, summary.regressed) == (5, 4, 3)
    assert (summary.added, summary.removed) == (2, 1)
    assert summary.checks_found == {"final_url_mismatch": 1} and not summary.checks_cleared


def test_rows_missing_from_the_new_run_are_listed(tmp_path):
    old = write_results(tmp_path / "old.jsonl", [result(1), result(2), result(3)])
    new = write_results(tmp_path / "new.jsonl", [result(2)])
    *changes, summary = diff(old, new)
    assert isinstance(summary, DiffSummary)
    assert sorted((c.row, c.change) for c in changes if isinstance(c, RowChange)) == [
        (1, "removed"),
        (3, "removed"),
    ]
    assert summary.removed == 2 and summary.regressed == 0


def test_a_recovered_row_is_not_a_regression():
    old = result(1, status=None, final_status=None, error="timeout", verdict="fail")
    assert regressions(old, result(1, verdict="pass")) == []
    assert regressions(old, result(1, status=None, final_status=None, error="dns")) == [
        "new error dns"
    ]
    assert regressions(result(1, status=500, final_status=500), result(1, status=404)) == []


def test_the_command_writes_json_lines_and_exits_1_on_a_regression(tmp_path):
    old, new = _old_and_new(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = run_diff(old, new, str(tmp_path / "changes.jsonl"), out=out, err=err)
    assert code == DIFF_REGRESSED == 1
    lines = [json.loads(line) for line in (tmp_path / "changes.jsonl").read_text().splitlines()]
    assert len(lines) == 7
    assert {line["row"] for line in lines if line["regressed"]} == {1, 2, 4}
    assert "REGRESSED" in out.getvalue()
    assert "checks newly found (rows): final_url_mismatch 1" in out.getvalue().splitlines()
    summary = out.getvalue().splitlines()[-1]
    assert summary == (
        "5 rows in both runs: 4 changed, 3 regressed; 2 only in the new run, 1 only in the old run"
    )
    same = run_diff(old, old, None, out=io.StringIO(), err=err)
    assert same == ExitCode.FINISHED
    missing = run_diff(old, tmp_path / "nope", None, out=io.StringIO(), err=err)
    assert missing == ExitCode.INPUT_ERROR and "nope: no such job directory" in err.getvalue()


def test_scrapy_job_diff(tmp_path):
    old, new = _old_and_new(tmp_path)
    done = scrapy_job("diff", str(old), str(new), "-o", str(tmp_path / "d.jsonl"), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "3 regressed" in done.stdout and (tmp_path / "d.jsonl").exists()
    assert scrapy_job("diff", str(old), str(old), cwd=tmp_path).returncode == 0
    assert scrapy_job("diff", str(old), cwd=tmp_path).returncode == 2  # usage


def test_the_changes_come_in_row_order(tmp_path):
    rows = list(range(1, 41))
    shuffled = rows[::-1][::2] + rows[::-1][1::2]  # a results file is in finishing order
    old = write_results(tmp_path / "old.jsonl", [result(row) for row in shuffled])
    new = write_results(
        tmp_path / "new.jsonl",
        [result(row, status=404, final_status=404) for row in shuffled if row != 7] + [result(41)],
    )
    out = io.StringIO()
    assert run_diff(old, new, str(tmp_path / "d.jsonl"), out=out, err=io.StringIO()) == 1
    printed = [int(line.split()[0]) for line in out.getvalue().splitlines()[:-1:2]]
    assert printed == [*rows, 41]
    written = [json.loads(line)["row"] for line in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert written == printed


def test_a_file_that_is_not_a_results_file_is_one_line_and_exit_code_2(tmp_path):
    results = write_results(tmp_path / "job" / "results.jsonl", [result(1)])
    (tmp_path / "urls.csv").write_text("url\nhttp://127.0.0.2/\n", encoding="utf-8")
    (tmp_path / "log.txt").write_text("2026-11-30 INFO started\n{}\n", encoding="utf-8")
    for bad in ("urls.csv", "log.txt"):
        err = io.StringIO()
        output = tmp_path / f"{bad}.changes.jsonl"
        code = run_diff(tmp_path / bad, results, str(output), out=io.StringIO(), err=err)
        assert code == ExitCode.INPUT_ERROR
        assert err.getvalue() == (
            f"urlcheck: {tmp_path / bad}: not a urlcheck results file (its first line is not a "
            "result line, a JSON object with a row number)\n"
        )
        assert not output.exists()  # nothing written
    done = scrapy_job("diff", str(tmp_path / "log.txt"), str(tmp_path / "job"), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "not a urlcheck results file" in done.stderr
    assert done.stdout == ""
    # An empty results file, or one whose only line a crash tore, is a run with no rows yet.
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "torn.jsonl").write_bytes(b'{"row": 1, "url": "http://127')
    for fresh in ("empty.jsonl", "torn.jsonl"):
        assert run_diff(tmp_path / fresh, results, None, out=io.StringIO(), err=err) == 0


def test_the_checks_of_each_run_are_compared(tmp_path):
    def landing(row: int, **fields: object) -> dict[str, object]:
        chain = [
            {"url": f"http://old.test/{row}", "status": 301, "location": "http://new.test/all"},
            {"url": "http://new.test/all", "status": 200, "location": None},
        ]
        url = f"http://old.test/{row}"
        return result(row, url, chain=chain, final_url="http://new.test/all", **fields)

    old = [
        landing(1, verdict="fail", expected="x.test", reasons=["final_url_mismatch"]),
        landing(2, warnings=["redirect_chain"]),
        landing(3),
    ]
    new = [
        landing(1, verdict="fail", expected="x.test", reasons=["final_url_mismatch", "noindex"]),
        landing(2),
        landing(3, warnings=["nofollow"]),
    ]
    old_path = write_results(tmp_path / "old.jsonl", old)
    new_path = write_results(tmp_path / "new.jsonl", new)
    *changes, summary = diff(old_path, new_path)
    assert isinstance(summary, DiffSummary)
    by = {c.row: c for c in changes if isinstance(c, RowChange)}
    assert by[1].regressions == ["new failed check noindex"]
    assert by[2].fields == {"warnings": [["redirect_chain"], []]} and not by[2].regressed
    assert summary.checks_found == {"noindex": 1, "nofollow": 1}
    assert summary.checks_cleared == {"redirect_chain": 1}
    # Rows 1-3 land on one URL, none of them sent there by the sheet: in both runs.
    assert summary.many_to_one == (3, 3)
