"""The audit's checks in the reports: failed checks, warnings and many_to_one, in HTML,
Markdown and JUnit (docs/urls-and-verdicts.md section 9)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from tests.reports.reportrows import result, write_results
from urlcheck.jobs.files import JobMeta
from urlcheck.reports.build import build_report, write_report
from urlcheck.reports.html import render_html
from urlcheck.reports.markdown import render_markdown

CATCH_ALL = "https://new.test/catch-all"


def redirected(row: int, to: str, **fields: object) -> dict[str, object]:
    url = f"http://old.test/p{row}"
    chain = [
        {"url": url, "status": 301, "location": to, "ms": 5, "kind": "cross_host"},
        {"url": to, "status": 200, "location": None, "ms": 5, "kind": None},
    ]
    return result(row, url, chain=chain, status=301, final_url=to, final_status=200, **fields)


def rows() -> list[dict[str, object]]:
    found = [redirected(n, CATCH_ALL, warnings=["redirect_to_home"]) for n in range(1, 4)]
    found.append(
        redirected(
            4,
            CATCH_ALL,
            expected="https://new.test/p4",
            verdict="fail",
            reasons=["final_url_mismatch", "noindex"],
        )
    )
    found.append(redirected(5, "https://new.test/p5", warnings=["redirect_chain"]))
    found.append(redirected(6, "https://new.test/p6", warnings=["redirect_chain"]))
    return found


def test_the_checks_are_counted_and_many_to_one_flags_its_rows(tmp_path):
    path = write_results(tmp_path / "results.jsonl", rows())
    data = build_report(path)
    assert dict(data.reasons) == {"final_url_mismatch": 1, "noindex": 1}
    # 4 of old.test's 6 redirected rows land on one URL: more than 50%.
    assert dict(data.warnings) == {"redirect_to_home": 3, "redirect_chain": 2, "many_to_one": 4}
    assert [(x.url, x.rows, x.first_rows) for x in data.many_to_one] == [
        (CATCH_ALL, 4, [1, 2, 3, 4])
    ]
    [failing] = data.failing
    assert failing.reasons == ["final_url_mismatch", "noindex", "many_to_one (warning)"]
    page = render_html(data)
    assert 'id="warnings"' in page and 'id="many-to-one"' in page and CATCH_ALL in page
    text = render_markdown(data)
    assert "| noindex | 1 |" in text and "| redirect\\_chain | 2 |" in text
    assert f"| {CATCH_ALL} | 4 | 1, 2, 3, 4 |" in text


def test_a_job_that_turned_many_to_one_off_or_raised_its_threshold_is_reported_so(tmp_path):
    job = tmp_path / "job"
    write_results(job / "results.jsonl", rows())
    meta = JobMeta(settings={"URLCHECK_CHECK_MANY_TO_ONE": "off"})
    (job / "meta.json").write_text(json.dumps(meta.to_dict()))
    assert build_report(job).many_to_one == []
    meta.settings = {"URLCHECK_MANY_TO_ONE_ROWS": 3, "URLCHECK_MANY_TO_ONE_SHARE": 90}
    (job / "meta.json").write_text(json.dumps(meta.to_dict()))
    assert [x.rows for x in build_report(job).many_to_one] == [4]  # more than 3 rows
    meta.settings = {"URLCHECK_MANY_TO_ONE_ROWS": 4, "URLCHECK_MANY_TO_ONE_SHARE": 90}
    (job / "meta.json").write_text(json.dumps(meta.to_dict()))
    assert build_report(job).many_to_one == []  # 4 rows, 67% of the host's


def test_junit_tells_the_warnings_of_each_testcase(tmp_path):
    found = rows()
    found[0]["expected"] = CATCH_ALL  # a test that passes, with warnings
    found[0]["verdict"] = "pass"
    path = write_results(tmp_path / "results.jsonl", found)
    write_report(path, tmp_path / "junit.xml", "junit")
    root = ET.parse(tmp_path / "junit.xml").getroot()
    cases = {case.get("name", "").split(":")[0]: case for case in root.iter("testcase")}
    assert set(cases) == {"row 1", "row 4"}
    assert cases["row 1"].find("failure") is None
    # Row 1 reached its target: it no longer counts; rows 2-4 are 3 of 6, not more than half.
    assert cases["row 1"].find("system-out").text == "warnings: redirect_to_home"
    assert cases["row 4"].find("failure").get("message") == "final_url_mismatch, noindex"
    assert cases["row 4"].find("system-out") is None
    found[0]["expected"] = None
    found[0]["verdict"] = None
    found.append(redirected(7, CATCH_ALL, expected="https://new.test/p7", verdict="pass"))
    path = write_results(tmp_path / "results.jsonl", found)
    write_report(path, tmp_path / "junit.xml", "junit")
    root = ET.parse(tmp_path / "junit.xml").getroot()
    cases = {case.get("name", "").split(":")[0]: case for case in root.iter("testcase")}
    assert cases["row 4"].find("system-out").text == "warnings: many_to_one"
