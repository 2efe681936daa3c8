"""Rows asking for the same URL share one chain (issue 25 point 6): real crawls against the test
site, whose request log counts what each URL cost."""

from __future__ import annotations

import functools
from collections import Counter
from urllib.parse import parse_qs, urlsplit

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv
from urlcheck.input.duplicates import SameURL

pytestmark = pytest.mark.crawl


def requests_of(site, tag):
    """Requests the site saw for this test's URLs, by path (query included)."""
    seen: Counter[str] = Counter()
    for record in site.log():
        if parse_qs(urlsplit(record["path"]).query).get("t") == [tag]:
            seen[record["path"]] += 1
    return seen


def by_row(results):
    rows = {r["row"]: r for r in results}
    assert len(rows) == len(results), "a row was written twice"
    return rows


@deferred_f_from_coro_f
async def test_copies_of_a_url_cost_one_request_and_each_row_has_its_line(site, tmp_path):
    host = "127.0.0.8"
    port = urlsplit(site.url(host, "/")).port
    chain = site.url(host, "/chain/2?t=same")  # two redirects, then 200 at /chain/0
    target = site.url(host, "/chain/0?t=same")
    missing = site.url(host, "/status/404?t=same")
    rows = ["url,expected,id"]
    for n in range(1, 301):
        if n % 3:
            # every other copy expects the right target (pass), the rest a wrong one (fail)
            rows.append(f"{chain},{target if n % 2 else site.url(host, '/elsewhere')},{n}")
        else:
            rows.append(f"{missing},,{n}")
    # The same requested URL written otherwise: with credentials (never sent), in capitals.
    rows.append(f"http://ann:secret@{host}:{port}/chain/2?t=same,{target},301")
    rows.append(f"HTTP://{host}:{port}/chain/2?t=same,{target},302")
    results, crawler = await crawl(
        write_csv(tmp_path / "in.csv", "\n".join(rows) + "\n"), tmp_path / "out.jsonl", **FAST
    )
    lines = by_row(results)
    assert sorted(lines) == list(range(1, 303))  # every row its own line
    assert requests_of(site, "same") == {
        "/chain/2?t=same": 1,  # 202 rows, one request (and one per hop of its chain)
        "/chain/1?t=same": 1,
        "/chain/0?t=same": 1,
        "/status/404?t=same": 1,  # 100 rows, one request
    }
    first = lines[1]
    assert first["notes"] == [] and first["hops"] == 2 and first["verdict"] == "pass"
    for n, line in lines.items():
        assert line["input"] == {"id": str(n)}
        if n == 1 or n == 3:
            assert "duplicate_of_row_1" not in line["notes"]
            continue
        of = 3 if n <= 300 and n % 3 == 0 else 1
        assert line["notes"][-1] == f"duplicate_of_row_{of}", line
        assert line["retries"] == 0
        if of == 1:  # the first row's chain, judged against the row's own target
            assert line["chain"] == first["chain"] and line["final_url"] == target
            assert line["checked_at"] == first["checked_at"]
            passes = n > 300 or n % 2
            assert line["verdict"] == ("pass" if passes else "fail"), line
        else:
            assert line["final_status"] == 404 and line["verdict"] is None
    assert lines[301]["url"].startswith("http://ann:secret@")  # the row's URL, as given
    assert lines[301]["notes"] == ["url_userinfo", "duplicate_of_row_1"]
    assert lines[302]["notes"] == ["duplicate_of_row_1"]
    assert crawler.stats.get_value("urlcheck/rows") == 302
    assert crawler.stats.get_value("urlcheck/duplicate_rows") == 300
    assert not crawler.stats.get_value("urlcheck/rows_missing")


@deferred_f_from_coro_f
async def test_urls_that_only_share_a_hash_are_checked_each(site, tmp_path, monkeypatch):
    # Every URL of the same length "collides", as two 64-bit hashes almost never do.
    monkeypatch.setattr("urlcheck.spiders.check.SameURL", functools.partial(SameURL, key=len))
    urls = [site.url("127.0.0.8", f"/status/{code}?t=hash") for code in (200, 201, 404, 200)]
    results, _ = await crawl(
        write_csv(tmp_path / "in.csv", "url\n" + "\n".join(urls) + "\n"),
        tmp_path / "out.jsonl",
        **FAST,
    )
    lines = by_row(results)
    assert [lines[n]["final_status"] for n in (1, 2, 3, 4)] == [200, 201, 404, 200]
    assert [lines[n]["notes"] for n in (1, 2, 3, 4)] == [[], [], [], ["duplicate_of_row_1"]]
    assert requests_of(site, "hash") == {
        "/status/200?t=hash": 1,
        "/status/201?t=hash": 1,
        "/status/404?t=hash": 1,
    }


@deferred_f_from_coro_f
async def test_the_setting_off_checks_every_row(site, tmp_path):
    url = site.url("127.0.0.8", "/ok?t=off")
    results, _ = await crawl(
        write_csv(tmp_path / "in.csv", "url\n" + f"{url}\n" * 3),
        tmp_path / "out.jsonl",
        **FAST,
        URLCHECK_SAME_URL_ONCE=False,
    )
    assert sorted(r["row"] for r in results) == [1, 2, 3]
    assert all(r["notes"] == [] for r in results)
    assert requests_of(site, "off") == {"/ok?t=off": 3}
