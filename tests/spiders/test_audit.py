"""Real crawls of the demo site: each audit check found on the row built for it
(docs/urls-and-verdicts.md section 9)."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import quote

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv

pytestmark = pytest.mark.crawl


@deferred_f_from_coro_f
async def test_each_check_is_found_on_its_row(site, tmp_path):
    def u(path: str, host: str = "127.0.0.2") -> str:
        return site.url(host, path)

    def to(path: str) -> str:
        return u("/redirect/301?to=" + quote(path, safe=""))

    noindex = "/indexing?meta=noindex"
    rows = [
        (to("/"), u("/ok")),  # 1
        (to("/"), ""),  # 2
        (u("/chain/3"), u("/chain/0")),  # 3
        (u("/steps/301.302"), u("/steps/end")),  # 4
        (u("/round-trip?via=127.0.0.3"), u("/ok")),  # 5
        (to(noindex), u(noindex)),  # 6
        (u("/indexing?header=NoIndex%2C%20NoFollow"), ""),  # 7
        (u("/indexing?canonical=/ok"), u("/indexing?canonical=/ok")),  # 8
        (u("/indexing?googlebot=noindex"), ""),  # 9
        (u("/indexing?link=/ok"), u("/indexing?link=/ok")),  # 10
        (u("/indexing?title=Hello"), u("/indexing?title=Hello")),  # 11
    ]
    csv = write_csv(tmp_path / "in.csv", "url,expected\n" + "".join(f"{a},{b}\n" for a, b in rows))
    results, crawler = await crawl(csv, tmp_path / "out.jsonl", **FAST, RETRY_TIMES=0)
    got = {r["row"]: (r["verdict"], r["reasons"], r["warnings"]) for r in results}
    assert got == {
        1: ("fail", ["final_url_mismatch", "redirect_to_home"], []),
        2: (None, [], ["redirect_to_home"]),
        3: ("pass", [], ["redirect_chain"]),
        4: ("pass", [], ["redirect_chain", "temporary_redirect_in_chain"]),
        5: ("pass", [], ["redirect_chain", "host_round_trip"]),
        6: ("fail", ["noindex"], []),
        7: (None, [], ["noindex", "nofollow"]),
        8: ("fail", ["canonical_mismatch"], []),
        9: (None, [], ["noindex"]),
        10: ("fail", ["canonical_mismatch"], []),
        11: ("pass", [], []),
    }
    by_row = {r["row"]: r for r in results}
    assert by_row[4]["hops"] == 2
    assert [h["status"] for h in by_row[4]["chain"]] == [301, 302, 200]
    assert by_row[7]["final_page"]["robots"] == [
        {"source": "x-robots-tag", "directives": ["noindex", "nofollow"]}
    ]
    assert by_row[8]["final_page"]["canonical"] == u("/ok")
    assert by_row[10]["final_page"]["canonical_source"] == "header"
    assert by_row[11]["final_page"] == {
        "content_type": "text/html",
        "title": "Hello",
        "canonical": None,
        "robots": [],
    }
    assert by_row[1]["final_page"]["title"] == "urlcheck demo site"
    stats = crawler.stats.get_stats()
    assert stats["urlcheck/reason/canonical_mismatch"] == 2
    assert stats["urlcheck/warning/redirect_chain"] == 3
    assert stats["urlcheck/warning/noindex"] == 2


def catch_all_csv(site, tmp_path: Path, tag: str = "") -> tuple[str, Path]:
    """Six rows of one host redirected: four to one catch-all page (many_to_one by the share
    rule), one to a page of its own, one to the catch-all its expected target names (not
    counted). The catch-all's URL, and the CSV."""
    host = "127.0.0.4"
    catch_all = site.url(host, f"/ok?catch-all{tag}")

    def to(target: str, n: int) -> str:
        return site.url(host, f"/redirect/301?to={quote(target, safe='')}&n={n}{tag}")

    rows = [(to(catch_all, n), "") for n in range(4)]
    rows.append((to(site.url(host, "/ok?own"), 4), ""))
    rows.append((to(catch_all, 5), catch_all))
    text = "url,expected\n" + "".join(f"{a},{b}\n" for a, b in rows)
    return catch_all, write_csv(tmp_path / "in.csv", text)


@deferred_f_from_coro_f
async def test_many_rows_landing_on_one_url_are_counted_when_the_crawl_closes(
    site, tmp_path, caplog
):
    catch_all, csv = catch_all_csv(site, tmp_path)
    with caplog.at_level(logging.INFO, logger="urlcheck.extensions.summary"):
        results, crawler = await crawl(csv, tmp_path / "out.jsonl", **FAST)
    assert len(results) == 6 and all(r["final_status"] == 200 for r in results)
    # Computed over every row, so not on a row's own line (the reports flag the rows).
    assert all("many_to_one" not in r["warnings"] for r in results)
    stats = crawler.stats.get_stats()
    assert stats["urlcheck/warning/many_to_one"] == 4
    assert stats["urlcheck/many_to_one/urls"] == 1
    [block] = [r.message for r in caplog.records if r.message.startswith("urlcheck summary")]
    assert f"  many rows, one landing URL (many_to_one): {catch_all} (4 rows)" in block.splitlines()

    _, quiet = await crawl(csv, tmp_path / "off.jsonl", **FAST, URLCHECK_CHECK_MANY_TO_ONE="off")
    assert "urlcheck/warning/many_to_one" not in quiet.stats.get_stats()
