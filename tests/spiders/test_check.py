"""Real crawls of the check spider against the local test site (tests/sitefixture.py)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv
from tests.sitefixture import host_stats

pytestmark = pytest.mark.crawl


def by_row(results):
    rows = {r["row"]: r for r in results}
    assert len(rows) == len(results), "a row was written twice"
    return rows


@deferred_f_from_coro_f
async def test_chains_statuses_and_errors(site, tmp_path):
    u = site.url
    csv = write_csv(
        tmp_path / "in.csv",
        "\n".join(
            [
                "url,expected,id",
                f"{u('127.0.0.2', '/ok')},,a",
                f"{u('127.0.0.2', '/chain/3')},{u('127.0.0.2', '/chain/0')},b",
                f"{u('127.0.0.2', '/loop/a')},,c",
                f"{u('127.0.0.2', '/status/404')},,d",
                f"{u('127.0.0.2', '/status/410')},,e",
                f"{u('127.0.0.2', '/redirect/301')},,f",
                f"{u('127.0.0.2', '/redirect/301?to=javascript:alert(1)')},,g",
                f"{u('127.0.0.2', '/redirect/301?to=')},,h",
                f"{u('127.0.0.2', '/redirect/302?to=/ok')},{u('127.0.0.2', '/ok')},i",
                f"{u('127.0.0.2', '/self')},,j",
                "mailto:someone@example.com,,k",
                f"{u('127.0.0.2', '/drop')},,l",
                f"{u('127.0.0.3', '/redirect/308?to=//127.0.0.2:' + str(site.port) + '/ok')},,m",
                f"{u('127.0.0.2', '/chain/12')},,n",
                f"{u('127.0.0.2', '/meta-refresh?to=/ok')},,o",
                "",
                f"  {u('127.0.0.2', '/status/500')}  ,,p",
            ]
        )
        + "\n",
    )
    results, crawler = await crawl(csv, tmp_path / "out.jsonl", **FAST, RETRY_TIMES=0)
    rows = by_row(results)
    assert sorted(rows) == list(range(1, 17))
    ok = u("127.0.0.2", "/ok")

    assert {
        k: rows[1][k] for k in ("status", "final_url", "final_status", "hops", "loop", "error")
    } == {
        "status": 200,
        "final_url": ok,
        "final_status": 200,
        "hops": 0,
        "loop": False,
        "error": None,
    }
    assert rows[1]["input"] == {"id": "a"} and rows[1]["verdict"] is None

    chain = rows[2]["chain"]
    assert [h["status"] for h in chain] == [301, 301, 301, 200]
    assert [h["url"] for h in chain] == [u("127.0.0.2", f"/chain/{n}") for n in (3, 2, 1, 0)]
    assert [h["kind"] for h in chain] == ["path", "path", "path", None]
    assert rows[2]["hops"] == 3 and rows[2]["final_status"] == 200
    assert rows[2]["verdict"] == "pass" and rows[2]["reasons"] == []

    assert rows[3]["loop"] is True and rows[3]["final_url"] is None and rows[3]["hops"] == 1
    assert rows[3]["chain"][-1]["location"] == u("127.0.0.2", "/loop/a")
    assert (rows[4]["status"], rows[4]["final_status"]) == (404, 404)
    assert (rows[5]["status"], rows[5]["final_status"]) == (410, 410)
    assert rows[6]["error"] == "bad_location" and rows[6]["status"] == 301
    assert rows[7]["error"] == "unsupported_scheme" and rows[7]["final_url"] is None
    assert rows[8]["error"] == "bad_location"
    assert rows[9]["verdict"] == "fail" and "temporary_redirect" in rows[9]["reasons"]
    assert rows[10]["loop"] is True and rows[10]["hops"] == 0
    assert rows[11]["error"] == "invalid_url" and rows[11]["status"] is None
    assert rows[11]["error_message"]
    assert rows[12]["error"] == "connection_lost" and rows[12]["status"] is None
    assert rows[13]["final_url"] == ok and rows[13]["chain"][0]["kind"] == "cross_host"
    assert rows[14]["error"] == "too_many_hops" and rows[14]["hops"] == 10
    assert rows[15]["meta_refresh"] == ok and rows[15]["final_status"] == 200
    assert rows[16]["status"] == 500 and rows[16]["retries"] == 0

    stats = crawler.stats.get_stats()
    assert stats["urlcheck/rows"] == 16
    assert stats["urlcheck/error/invalid_url"] == 1
    assert stats["urlcheck/verdict/pass"] == 1 and stats["urlcheck/verdict/fail"] == 1


@deferred_f_from_coro_f
async def test_cross_host_hops_are_scheduled_in_their_own_hosts_slot(site, tmp_path):
    # Three source hosts each redirect twice into 127.0.0.3. Downloaded in their source hosts'
    # slots (what Scrapy's RedirectMiddleware does), these hops would reach 127.0.0.3 in
    # parallel; in 127.0.0.3's own slot they arrive one at a time, >= 300 ms apart.
    u = site.url
    rows = []
    for i in range(2):
        for source in ("127.0.0.2", "127.0.0.4", "127.0.0.5"):
            target = u("127.0.0.3", f"/ok?n={source}-{i}")
            rows.append(u(source, f"/redirect/301?to={quote(target)}&x={i}"))
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    results, _ = await crawl(csv, tmp_path / "out.jsonl")
    assert len(results) == 6 and all(r["final_status"] == 200 for r in results)
    assert all(r["chain"][0]["kind"] == "cross_host" for r in results)
    hops = [e for e in site.log() if e["path"].startswith("/ok?n=") and e["host"] == "127.0.0.3"]
    assert len(hops) == 6
    assert host_stats(hops)["127.0.0.3"].max_in_flight == 1
    gap = host_stats(hops)["127.0.0.3"].min_gap
    assert gap is not None and gap >= 0.29


@deferred_f_from_coro_f
async def test_huge_bodies_and_gzip_bombs_cost_nothing(site, tmp_path):
    u = site.url
    csv = write_csv(
        tmp_path / "in.csv",
        "url\n"
        + "\n".join(
            [
                u("127.0.0.4", "/big?mb=1024"),
                u("127.0.0.4", "/big-chunked?mb=1024"),
                u("127.0.0.4", "/gzip-bomb"),
            ]
        )
        + "\n",
    )
    results, _ = await crawl(csv, tmp_path / "out.jsonl", **FAST)
    assert sorted((r["row"], r["status"], r["error"]) for r in results) == [
        (1, 200, None),
        (2, 200, None),
        (3, 200, None),
    ]


@deferred_f_from_coro_f
async def test_head_falls_back_to_get(site, tmp_path):
    csv = write_csv(tmp_path / "in.csv", f"url\n{site.url('127.0.0.5', '/no-head')}\n")
    results, _ = await crawl(csv, tmp_path / "out.jsonl", **FAST, URLCHECK_METHOD="HEAD")
    [row] = results
    assert row["status"] == 200 and "head_fallback_get" in row["notes"]


@deferred_f_from_coro_f
async def test_timeout_is_classified(site, tmp_path):
    csv = write_csv(tmp_path / "in.csv", f"url\n{site.url('127.0.0.5', '/hang')}\n")
    results, _ = await crawl(csv, tmp_path / "out.jsonl", **FAST, DOWNLOAD_TIMEOUT=1, RETRY_TIMES=0)
    [row] = results
    assert (
        row["error"] == "timeout"
        and row["status"] is None
        and row["chain"][0]["error"] == "timeout"
    )


@deferred_f_from_coro_f
async def test_connect_error_is_classified(tmp_path):
    csv = write_csv(tmp_path / "in.csv", "url\nhttp://127.0.0.9:9/\n")
    results, _ = await crawl(csv, tmp_path / "out.jsonl", **FAST, RETRY_TIMES=1)
    [row] = results
    assert row["error"] == "connect" and row["retries"] == 1


@deferred_f_from_coro_f
async def test_csv_feed_export_is_flat_and_safe_for_spreadsheets(site, tmp_path):
    import csv as csvlib

    u = site.url
    csv = write_csv(
        tmp_path / "in.csv",
        "\n".join(
            [
                "url,expected,note",
                f'{u("127.0.0.6", "/chain/2")},{u("127.0.0.6", "/chain/0")},=HYPERLINK("x")',
                f"{u('127.0.0.6', '/status/404')},,@SUM(A1)",
            ]
        )
        + "\n",
    )
    feed = tmp_path / "results.csv"
    results, _ = await crawl(
        csv, tmp_path / "out.jsonl", **FAST, FEEDS={str(feed): {"format": "csv"}}
    )
    assert len(results) == 2
    with feed.open(encoding="utf-8", newline="") as f:
        rows = sorted(csvlib.DictReader(f), key=lambda r: r["row"])
    assert rows[0]["chain"] == " -> ".join(
        f"{s} {u('127.0.0.6', f'/chain/{n}')}" for s, n in ((301, 2), (301, 1), (200, 0))
    )
    assert rows[0]["verdict"] == "pass" and rows[0]["loop"] == "false"
    assert rows[0]["input.note"] == '\'=HYPERLINK("x")'
    assert rows[1]["input.note"] == "'@SUM(A1)" and rows[1]["final_status"] == "404"


@deferred_f_from_coro_f
async def test_meta_refresh_is_followed_when_asked(site, tmp_path):
    url = site.url("127.0.0.6", "/meta-refresh?to=/chain/1")
    csv = write_csv(tmp_path / "in.csv", f"url\n{url}\n")
    results, _ = await crawl(csv, tmp_path / "out.jsonl", **FAST, URLCHECK_FOLLOW_META_REFRESH=True)
    [row] = results
    assert [h["status"] for h in row["chain"]] == [200, 301, 200]
    assert row["final_url"] == site.url("127.0.0.6", "/chain/0") and row["hops"] == 2


@deferred_f_from_coro_f
async def test_an_earlier_results_file_is_never_overwritten(site, tmp_path):
    csv = write_csv(tmp_path / "in.csv", f"url\n{site.url('127.0.0.6', '/ok')}\n")
    out = tmp_path / "out.jsonl"
    out.write_text('{"row": 1, "from": "an earlier run"}\n')
    results, _ = await crawl(csv, out, **FAST)
    assert len(results) == 1 and results[0]["status"] == 200
    [kept] = [p for p in tmp_path.iterdir() if p.name.startswith("out.") and p != out]
    assert kept.read_text() == '{"row": 1, "from": "an earlier run"}\n'


@deferred_f_from_coro_f
async def test_tls_failure_is_classified(site, tmp_path):
    # An https request to a plain-HTTP port: the TLS handshake cannot succeed.
    url = site.url("127.0.0.6", "/ok").replace("http://", "https://")
    csv = write_csv(tmp_path / "in.csv", f"url\n{url}\n")
    results, _ = await crawl(csv, tmp_path / "out.jsonl", **FAST, RETRY_TIMES=0)
    [row] = results
    assert row["error"] == "tls" and row["status"] is None
    # in words (the handshake's reason), not a list of Python reprs
    assert row["error_message"].startswith("TLS handshake or certificate failed: ")
    assert "Failure" not in row["error_message"] and "<" not in row["error_message"]


@deferred_f_from_coro_f
async def test_requested_url_is_what_was_sent_without_the_input_s_credentials(site, tmp_path):
    ok = site.url("127.0.0.2", "/ok?t=userinfo")
    with_credentials = ok.replace("http://", "http://alice:s3cret@")
    csv = write_csv(tmp_path / "in.csv", f"url\n{with_credentials}\n")
    results, _ = await crawl(csv, tmp_path / "out.jsonl", **FAST)
    [row] = results
    assert row["url"] == with_credentials  # the input, as given
    assert row["requested_url"] == ok == row["chain"][0]["url"]  # what went on the wire
    assert row["final_status"] == 200 and "url_userinfo" in row["notes"]
    assert "s3cret" not in (tmp_path / "out.jsonl").read_text().replace(with_credentials, "")
