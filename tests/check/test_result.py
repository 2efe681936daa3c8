"""The result record: what results.jsonl holds, and reading a line back."""

from __future__ import annotations

import json

import pytest

from urlcheck.check.hops import Hop, RowTask, hop
from urlcheck.check.result import FIELDS, LineKey, Result, build_result, read_key
from urlcheck.check.verdict import VerdictRules


def result(**task_fields: object) -> Result:
    task = RowTask(7, "http://a.test/x", "http://a.test/x", "http://b.test/", {"note": "n"})
    for name, value in task_fields.items():
        setattr(task, name, value)
    chain = [
        hop("http://a.test/x", status=301, location="http://b.test/", ms=5, kind="host"),
        hop("http://b.test/", status=200, ms=3),
    ]
    return build_result(task, chain, rules=VerdictRules())


def test_a_line_holds_every_field_in_order_with_row_first() -> None:
    line = result().to_json_line()
    assert line.endswith(b"}\n")
    data = json.loads(line)
    assert tuple(data) == FIELDS
    assert FIELDS[0] == "row"
    assert data["final_url"] == "http://b.test/"
    assert data["verdict"] == "pass"
    assert data["chain"][0] == {
        "url": "http://a.test/x",
        "status": 301,
        "location": "http://b.test/",
        "ms": 5,
        "kind": "host",
    }


def test_a_line_read_back_is_the_same_record() -> None:
    original = result()
    assert Result.from_dict(json.loads(original.to_json_line())) == original


def test_from_dict_fills_what_an_older_line_lacks() -> None:
    old = Result.from_dict({"row": 3, "url": "http://a.test/", "status": 200})
    assert (old.row, old.chain, old.reasons, old.final_status) == (3, [], [], None)


@pytest.mark.parametrize(
    "url",
    [
        "http://a.test/x",
        'http://a.test/"final_status": 999, "verdict": "fail"',
        'http://a.test/\u00e9?q=, "verdict": "fail"}',
    ],
)
def test_read_key_takes_the_top_level_fields_whatever_the_strings_hold(url: str) -> None:
    line = result(url=url, extra={"final_status": "500", "verdict": "fail"}).to_json_line()
    assert read_key(line) == LineKey(7, 301, 200, "pass")


def test_read_key_of_a_failed_row_and_of_junk() -> None:
    task = RowTask(9, "http://a.test/", "http://a.test/", None, {})
    failed = build_result(
        task, [hop("http://a.test/", error="timeout")], rules=VerdictRules(), error="timeout"
    )
    assert read_key(failed.to_json_line()) == LineKey(9, None, None, None)
    assert read_key(b"not json\n") is None
    assert read_key(b'{"row": "x"}\n') is None
    # A line from another writer, keys in another order: read the slow way.
    assert read_key(b'{"verdict": "fail", "final_status": 404, "row": 2}\n') == LineKey(
        2, None, 404, "fail"
    )
    assert read_key(b'{"status": 302, "verdict": "fail", "final_status": 404, "row": 2}\n') == (
        LineKey(2, 302, 404, "fail")
    )
    # a line of a writer without a final status: the first one stands in for it
    assert read_key(b'{"row": 3, "status": 404, "verdict": null}\n') == LineKey(3, 404, 404, None)


def _walled(chain_before: list[Hop], status: int) -> Result:
    task = RowTask(3, "http://a.test/x", "http://a.test/x", "http://b.test/", {})
    wall = hop("http://a.test/x" if not chain_before else "http://b.test/", status=status)
    wall["block"] = "captcha:cloudflare-challenge"
    wall["vendor"] = "cloudflare"
    return build_result(
        task,
        [*chain_before, wall],
        rules=VerdictRules(),
        error="blocked",
        error_message="captcha page by cloudflare",
    )


def test_a_wall_on_the_first_hop_is_not_judged_as_the_sites_answer() -> None:
    line = _walled([], 403)
    assert line.status == 403  # what was received, kept
    assert line.final_status is None
    assert line.verdict == "fail"
    assert line.reasons == ["error_blocked"]  # not no_redirect, not final_status_403


def test_a_wall_after_a_redirect_keeps_the_first_hops_verdict() -> None:
    first = hop("http://a.test/x", status=302, location="http://b.test/", kind="host")
    line = _walled([first], 403)
    assert line.reasons == ["temporary_redirect", "error_blocked"]
