"""The report's aggregator and renderers, on hand-built results (the browser test and the feed
tests use real crawls)."""

from __future__ import annotations

import io
import json
import re

from tests.processes import scrapy_job
from tests.reports.reportrows import result, write_results
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.reports.aggregate import Aggregate
from urlcheck.reports.build import build_report, output_format
from urlcheck.reports.html import render_html
from urlcheck.reports.markdown import render_markdown
from urlcheck.reports.run import run_report


def _hop(url, status, ms=10, kind=None):
    return {"url": url, "status": status, "location": None, "ms": ms, "kind": kind}


def _rows():
    a, b, c = "http://a.test", "http://b.test", "http://c.test"
    return [
        result(
            1,
            f"{a}/1",
            expected=f"{a}/x",
            verdict="pass",
            status=301,
            final_status=200,
            final_url=f"{a}/x",
            chain=[_hop(f"{a}/1", 301, 30, "path"), _hop(f"{a}/x", 200, 50)],
        ),
        result(
            2,
            f"{a}/2",
            expected=f"{a}/x",
            verdict="fail",
            status=302,
            final_status=200,
            reasons=["temporary_redirect"],
            chain=[_hop(f"{a}/2", 302, 70, "path"), _hop(f"{b}/x", 200, 5)],
        ),
        result(3, f"{b}/3", status=404, chain=[_hop(f"{b}/3", 404, 7)]),
        result(
            4,
            f"{c}/4",
            status=None,
            final_status=None,
            final_url=None,
            error="timeout",
            error_message="took longer than 20 s",
            chain=[],
        ),
        result(
            5,
            f"{c}/5",
            status=None,
            final_status=None,
            final_url=None,
            error="host_unavailable",
            chain=[],
        ),
        result(
            6,
            f"{a}/6",
            loop=True,
            status=301,
            final_status=None,
            final_url=None,
            chain=[_hop(f"{a}/6", 301, 10, "path"), _hop(f"{a}/7", 301, 10, "path")],
        ),
        result(
            7,
            f"{b}/7",
            status=503,
            final_status=503,
            retries=3,
            retry_after=120,
            chain=[_hop(f"{b}/7", 503, 9)],
        ),
    ]


def test_totals_distributions_and_hosts():
    agg = Aggregate()
    for row in _rows():
        agg.add(row)
    data = agg.finish()
    assert data.rows == 7
    assert data.verdicts == {"pass": 1, "fail": 1, "none": 5}
    assert data.first_status == {"2xx": 0, "3xx": 3, "4xx": 1, "5xx": 1, "other": 0, "error": 2}
    assert data.final_status["error"] == 3 and data.final_status["2xx"] == 2
    assert dict(data.chain_lengths) == {"0": 4, "1": 3}
    assert data.hop_kinds == [("path", 4)]
    assert [(e.kind, e.count) for e in data.errors] == [("timeout", 1), ("host_unavailable", 1)]
    assert data.errors[0].samples == [(4, "http://c.test/4", "took longer than 20 s")]
    assert (data.redirected, data.loops, data.error_rows, data.retried_rows) == (3, 1, 2, 1)
    hosts = {h.host: h for h in data.hosts}
    assert [h.host for h in data.hosts] == ["c.test", "a.test", "b.test"]  # unavailable, slowest
    assert hosts["c.test"].unavailable and hosts["c.test"].errors == 2
    assert hosts["a.test"].rows == 3 and hosts["a.test"].median_ms == 30  # of 30 50 70 10 10
    assert hosts["b.test"].retries == 3 and hosts["b.test"].retry_after == 120
    assert hosts["b.test"].median_ms == 7  # 5 (a hop of row 2), 7, 9
    assert [f.row for f in data.failing] == [2, 4, 5, 6]
    assert data.failing[0].reasons == ["temporary_redirect"]
    assert data.failing[1].reasons == ["timeout: took longer than 20 s"]
    assert data.failing[3].category == "loop"


def test_samples_are_capped_and_keep_the_lowest_rows():
    agg = Aggregate(failing_cap=3, error_samples=2, latency_samples=5)
    for row in range(100, 0, -1):
        agg.add(result(row, status=None, final_status=None, error="dns", chain=[]))
    for row in range(101, 1101):
        agg.add(result(row, chain=[_hop("http://z.test/", 200, row)]))
    data = agg.finish()
    assert [f.row for f in data.failing] == [1, 2, 3] and data.failing_total == 100
    assert data.errors[0].count == 100 and len(data.errors[0].samples) == 2
    assert len(agg.hosts["z.test"].ms) == 5  # a reservoir, not every latency
    assert 101 <= data.hosts[0].median_ms <= 1100


def test_long_chains_share_one_bucket():
    agg = Aggregate()
    for hops in (0, 3, 10, 14):
        chain = [_hop(f"http://a.test/{n}", 301) for n in range(hops)] + [
            _hop("http://a.test/", 200)
        ]
        agg.add(result(hops + 1, chain=chain))
    buckets = dict(agg.finish().chain_lengths)
    assert buckets["10+"] == 2 and buckets["3"] == 1 and buckets["0"] == 1 and len(buckets) == 11


def test_job_directory_with_sidecars(tmp_path):
    job = tmp_path / "job"
    write_results(job / "results.jsonl", _rows(), tail='{"row": 9, "url": "tor')
    (job / "hosts.json").write_text(
        json.dumps(
            {
                "hosts": {
                    "b.test": {"delay": 1.5, "backoff_seconds": 90},
                    "a.test": {"unavailable": True},
                }
            }
        )
    )
    snapshot = {
        "proxies": [
            {
                "id": "p1",
                "display": "127.0.0.1:3128",
                "state": "healthy",
                "weight": 1.0,
                "success_rate": 0.9,
                "captcha_rate": 0.05,
                "block_rate": 0.0,
                "latency_p50": 0.12,
                "quarantines": 1,
            },
            {
                "id": "p2",
                "display": "127.0.0.1:3129",
                "state": "quarantined",
                "weight": 0.2,
                "success_rate": 0.2,
                "captcha_rate": None,
                "block_rate": 0.5,
                "latency_p50": None,
                "quarantines": 3,
            },
        ],
        "matrix": {
            "a.test": {
                "p1": {"outcomes": 10, "success_rate": 1.0},
                "p2": {"outcomes": 4, "success_rate": 0.25},
            }
        },
    }
    (job / "proxies.json").write_text(json.dumps(snapshot))
    data = build_report(job)
    assert data.bad_lines == 1 and data.rows == 7
    hosts = {h.host: h for h in data.hosts}
    assert hosts["b.test"].delay == 1.5 and hosts["a.test"].unavailable
    assert hosts["b.test"].backoff_seconds == 90
    assert data.unavailable_hosts == 2
    assert [p.display for p in data.proxies] == ["127.0.0.1:3128", "127.0.0.1:3129"]
    assert data.proxies[0].latency_p50_ms == 120
    assert data.heatmap is not None
    assert data.heatmap.sites == ["a.test"] and data.heatmap.success == [[1.0, 0.25]]
    page = render_html(data)
    assert 'id="heatmap-success"' in page and "learned delay" in page and "back-off (s)" in page
    assert "1 unreadable line" in page


def test_the_host_table_counts_the_rows_a_bot_wall_answered():
    agg = Aggregate()
    wall = {"block": "captcha:cloudflare-challenge", "vendor": "cloudflare"}
    for row in (1, 2):
        url = f"http://a.test/{row}"
        agg.add(
            result(
                row,
                url,
                status=403,
                final_status=None,
                final_url=None,
                error="blocked",
                chain=[{**_hop(url, 403), **wall}],
            )
        )
    agg.add(result(3, "http://b.test/3", status=403))  # the site's own 403
    data = agg.finish()
    hosts = {h.host: h for h in data.hosts}
    assert (hosts["a.test"].walls, hosts["b.test"].walls) == (2, 0)
    assert data.wall_rows == 2
    page = render_html(data)
    assert "2 row(s) answered by a bot wall" in page and "bot walls (rows)" in page
    assert "bot walls" not in render_html(Aggregate().finish())


def test_html_is_self_contained_and_escapes_what_it_shows():
    agg = Aggregate()
    hostile = 'http://a.test/"><script>alert(1)</script>'
    agg.add(result(1, hostile, verdict="fail", expected="http://a.test/", reasons=["x"]))
    page = render_html(agg.finish())
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "default-src 'none'" in page
    # Nothing is loaded: no src or href attribute and no url() in the page.
    assert not re.search(r"\s(src|href)=", page) and "url(" not in page
    assert page.count("<script>") == 1


def test_markdown_escapes_table_cells():
    agg = Aggregate()
    agg.add(
        result(1, "http://a.test/a|b", verdict="fail", expected="http://a.test/", reasons=["x"])
    )
    text = render_markdown(agg.finish())
    assert "| 1 | http://a.test/a\\|b |" in text


def test_output_formats():
    assert output_format("r.html")[1] == "html" and output_format("r.md")[1] == "markdown"
    assert output_format("j.xml")[1] == "junit" and output_format("x.txt:markdown")[1] == "markdown"


def test_a_job_and_a_title(tmp_path):
    from urlcheck.jobs.files import JobMeta, JobState

    job = tmp_path / "job"
    write_results(job / "results.jsonl", _rows())
    JobMeta(state=JobState.PAUSED, total_rows=20, done_rows=7).save(job)
    out = io.StringIO()
    code = run_report(job, str(tmp_path / "r.html"), out=out, err=out, title="Migration <b>")
    assert code == 0
    page = (tmp_path / "r.html").read_text()
    assert "<title>Migration &lt;b&gt;</title>" in page
    assert "job paused, 7 of 20 rows checked" in page
    run_report(job, str(tmp_path / "r.md"), out=out, err=out)
    assert "7 of 20 rows checked (job paused): " in (tmp_path / "r.md").read_text()


def test_the_report_command(tmp_path):
    job = tmp_path / "job"
    write_results(job / "results.jsonl", _rows())
    out, err = io.StringIO(), io.StringIO()
    assert run_report(job, None, out=out, err=err) == ExitCode.FINISHED
    assert (job / "report.html").exists() and "7 rows" in out.getvalue()
    assert run_report(job / "results.jsonl", str(tmp_path / "r.md"), out=out, err=err) == 0
    assert (tmp_path / "r.md").read_text().startswith("# urlcheck report")
    assert run_report(tmp_path / "none", None, out=out, err=err) == ExitCode.INPUT_ERROR
    done = scrapy_job("report", str(job), "-o", str(tmp_path / "j.xml"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert 'tests="2" failures="1"' in (tmp_path / "j.xml").read_text()


def test_junit_survives_what_xml_cannot_hold(tmp_path):
    import xml.etree.ElementTree as ET

    from urlcheck.reports.junit import JUnitWriter

    path = tmp_path / "j.xml"
    with path.open("wb") as out:
        writer = JUnitWriter(out)
        writer.add(
            result(
                1,
                'http://a.test/"<&>',
                expected="http://a.test/\x01",
                verdict="fail",
                reasons=["final_url_mismatch"],
                error_message="bad \x00 byte",
            )
        )
        writer.add(result(2))  # no target: not a test
        writer.close()
    root = ET.parse(path).getroot()
    [case] = root.iter("testcase")
    assert case.get("name") == 'row 1: http://a.test/"<&>'
    assert "expected: http://a.test/\ufffd" in case.find("failure").text
    assert root.get("tests") == "1" and root.get("failures") == "1"


def test_a_report_of_what_is_not_a_results_file_is_exit_code_2(tmp_path):
    (tmp_path / "some.csv").write_text("url,expected\nhttp://127.0.0.2/,\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert run_report(tmp_path / "some.csv", None, out=out, err=err) == ExitCode.INPUT_ERROR
    assert err.getvalue().count("\n") == 1 and "not a urlcheck results file" in err.getvalue()
    assert out.getvalue() == "" and not (tmp_path / "report.html").exists()
    job = tmp_path / "job"
    job.mkdir()
    (job / "results.jsonl").write_text("not json\n", encoding="utf-8")
    done = scrapy_job("report", str(job), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"urlcheck: {job / 'results.jsonl'}: not a urlcheck results file (its first line is not "
        "a result line, a JSON object with a row number)\n"
    )
