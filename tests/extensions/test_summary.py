"""The end-of-crawl summary and its stats, from a real crawl: a row's warnings are counted once
per row (``urlcheck/warning/<name>``) and shown in the summary block."""

from __future__ import annotations

import logging
from collections import Counter
from urllib.parse import quote

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv

pytestmark = pytest.mark.crawl

FROM, TO = "127.0.0.2", "127.0.0.3"


@deferred_f_from_coro_f
async def test_warnings_are_counted_per_row_and_summed_up(site, tmp_path, caplog):
    u = site.url
    twice = quote(f"/location/backslash?host={FROM}&id=summary", safe="")
    rows = [
        (u(FROM, "/location/backslash?host=127.0.0.3&id=summary1"), ""),
        (u(FROM, "/location/backslash?host=127.0.0.3&id=summary2"), ""),
        # Two hops with the same warning: one row that met it.
        (u(FROM, f"/location/backslash?host={TO}&path={twice}"), ""),
        (u(FROM, f"/location/ipv4-hex?host={TO}&id=summary"), ""),
        (u(FROM, "/redirect/302?to=/ok%3Fid%3Dsummary"), u(FROM, "/ok?id=summary")),
        (u(TO, "/ok?id=summary-plain"), ""),
    ]
    csv = write_csv(tmp_path / "in.csv", "url,expected\n" + "".join(f"{a},{b}\n" for a, b in rows))
    with caplog.at_level(logging.INFO, logger="urlcheck.extensions.summary"):
        results, crawler = await crawl(
            csv,
            tmp_path / "out.jsonl",
            **FAST,
            URLCHECK_TEMPORARY_REDIRECT="warn",
            # rows 1-3 land on one URL: counted over all rows (tests/spiders/test_audit.py)
            URLCHECK_CHECK_MANY_TO_ONE="off",
        )
    by_row = {r["row"]: r for r in results}
    assert len(by_row) == 6 and all(r["error"] is None for r in results)
    assert [len(h.get("warnings", ())) for h in by_row[3]["chain"]] == [1, 1, 0]
    assert by_row[5]["verdict"] == "pass" and by_row[5]["warnings"] == ["temporary_redirect"]
    assert by_row[6]["warnings"] == []

    stats = crawler.stats.get_stats()
    warned = {
        k.rpartition("/")[2]: v for k, v in stats.items() if k.startswith("urlcheck/warning/")
    }
    assert warned == Counter(w for r in results for w in r["warnings"])
    # Row 3 goes 127.0.0.2 -> 127.0.0.3 -> 127.0.0.2 -> 127.0.0.3: a chain, and a round trip.
    assert warned == {
        "location_backslash": 3,
        "location_ipv4_numeric": 1,
        "temporary_redirect": 1,
        "redirect_chain": 1,
        "host_round_trip": 1,
    }
    [block] = [r.message for r in caplog.records if r.message.startswith("urlcheck summary")]
    assert (
        "  warnings (rows): host_round_trip 1, location_backslash 3, location_ipv4_numeric 1, "
        "redirect_chain 1, temporary_redirect 1" in block.splitlines()
    )
