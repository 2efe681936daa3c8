"""`urlcheck demo` exits 0 when it ran as designed: every verdict the one its row was built for
(the CSV's `designed verdict` column), the failing ones named as failing on purpose."""

from __future__ import annotations

import pytest

from urlcheck.commands.demo import DEMO_CSV, _judge, designed_verdicts
from urlcheck.jobs.exitcodes import ExitCode


def _rows(verdicts: dict[int, str | None]) -> list[dict[str, object]]:
    return [{"row": row, "verdict": verdict} for row, verdict in verdicts.items()]


def test_the_demo_csv_says_which_rows_fail_on_purpose() -> None:
    designed = designed_verdicts(DEMO_CSV.read_text("utf-8"))
    assert designed == {
        2: "pass",
        3: "fail",
        4: "pass",
        6: "fail",
        12: "fail",
        13: "pass",
        14: "fail",
        15: "fail",
        16: "fail",
    }


def test_as_designed_is_exit_code_0_and_names_the_failing_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    designed = {2: "pass", 3: "fail", 6: "fail"}
    rows = _rows({1: None, 2: "pass", 3: "fail", 6: "fail"})
    assert _judge(rows, designed, ExitCode.FAILED_VERDICTS) == 0
    assert capsys.readouterr().out == (
        "Rows 3 and 6 fail their verdicts on purpose (a real check would exit with 3): the demo "
        "ran as designed.\n"
    )


@pytest.mark.parametrize(
    ("verdicts", "code", "expected", "said"),
    [
        ({2: "fail", 3: "fail"}, ExitCode.FAILED_VERDICTS, 3, "row 2: fail where the demo expects"),
        ({2: "pass", 3: "pass"}, ExitCode.FINISHED, 3, "row 3: pass where the demo expects fail"),
        ({2: "pass", 3: "fail", 5: "fail"}, ExitCode.FAILED_VERDICTS, 3, "row 5: fail where the"),
        ({2: "pass"}, ExitCode.PAUSED, 4, "stopped before it was done (exit code 4)"),
    ])  # fmt: skip
def test_anything_else_is_not_exit_code_0(
    capsys: pytest.CaptureFixture[str],
    verdicts: dict[int, str | None],
    code: ExitCode,
    expected: int,
    said: str,
) -> None:
    assert _judge(_rows(verdicts), {2: "pass", 3: "fail"}, code) == expected
    assert said in capsys.readouterr().out
