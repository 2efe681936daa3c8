"""Real crawls of the demo site: each audit check found on the row built for it
(docs/urls-and-verdicts.md section 8)."""

from __future__ import annotations

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
