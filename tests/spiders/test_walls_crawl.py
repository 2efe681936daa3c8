"""Bot walls in a real crawl without proxies, against the demo site's vendor pages: each row a
wall answered ends ``blocked`` with the vendor, its verdict is not computed from the wall's
page (no ``final_status_403``, no ``no_redirect``), and the summary counts the rows by vendor.
The site's own 403 stays ``final_status_403``."""

from __future__ import annotations

import logging
from urllib.parse import quote

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv

pytestmark = pytest.mark.crawl

FROM, TO = "127.0.0.2", "127.0.0.3"


@deferred_f_from_coro_f
async def test_rows_a_wall_answered_end_blocked_with_the_vendor(site, tmp_path, caplog):
    u = site.url
    expected = u(TO, "/ok?id=walls")
    behind = quote(u(TO, "/captcha/imperva?id=walls"), safe="")
    rows = [
        (u(FROM, "/captcha/cloudflare?id=walls"), expected),
        (u(FROM, "/captcha/akamai?id=walls"), expected),
        (u(FROM, "/captcha/datadome-banned?id=walls"), expected),
        (u(FROM, "/captcha/turnstile?id=walls"), expected),  # a challenge sent with 200
        (u(FROM, "/captcha/block403?id=walls"), ""),
        (u(FROM, f"/redirect/301?to={behind}"), expected),  # a wall after a redirect
        (u(FROM, "/status/403?id=walls"), expected),  # the site's own 403
        (u(FROM, "/redirect/301?to=" + quote(expected, safe="")), expected),
    ]
    csv = write_csv(tmp_path / "in.csv", "url,expected\n" + "".join(f"{a},{b}\n" for a, b in rows))
    with caplog.at_level(logging.INFO, logger="urlcheck.extensions"):
        results, crawler = await crawl(csv, tmp_path / "out.jsonl", **FAST)
    by_row = {r["row"]: r for r in results}
    assert sorted(by_row) == list(range(1, 9))

    def wall(row: int) -> tuple[str | None, str | None, list[str]]:
        line = by_row[row]
        return line["error"], line["chain"][-1].get("vendor"), line["reasons"]

    assert wall(1) == ("blocked", "cloudflare", ["error_blocked"])
    assert wall(2) == ("blocked", "akamai", ["error_blocked"])
    assert wall(3) == ("blocked", "datadome", ["error_blocked"])
    assert wall(4) == ("blocked", "cloudflare", ["error_blocked"])
    assert wall(5) == ("blocked", "generic", [])  # no expected target: no verdict
    assert wall(6) == ("blocked", "imperva", ["error_blocked"])
    assert by_row[6]["hops"] == 1 and by_row[6]["chain"][0]["status"] == 301
    assert wall(7) == (None, None, ["no_redirect", "final_status_403", "final_url_mismatch"])
    assert by_row[8]["verdict"] == "pass"

    first = by_row[1]
    assert first["status"] == 403 and first["final_status"] is None
    assert first["chain"][0]["block"] == "captcha:cloudflare-challenge"
    assert first["error_message"] == (
        "captcha:cloudflare-challenge (status 403): a captcha page by cloudflare "
        "answered, not the site"
    )

    stats = crawler.stats.get_stats()
    walls = {k: v for k, v in stats.items() if k.startswith("urlcheck/blocked/")}
    assert walls == {
        "urlcheck/blocked/akamai": 1,
        "urlcheck/blocked/cloudflare": 2,
        "urlcheck/blocked/datadome": 1,
        "urlcheck/blocked/generic": 1,
        "urlcheck/blocked/imperva": 1,
    }
    [block] = [r.message for r in caplog.records if r.message.startswith("urlcheck summary")]
    assert (
        "  bot walls (rows): akamai 1, cloudflare 2, datadome 1, generic 1, imperva 1"
        in block.splitlines()
    )
    # The host table of the log: the wall after the redirect is the target host's.
    [hosts] = [r.message for r in caplog.records if r.message.startswith("urlcheck hosts:")]
    assert (
        f"  bot walls (rows answered by a captcha or block page): {FROM} 5, {TO} 1"
        in hosts.splitlines()
    )


@pytest.mark.parametrize("level", ["warn", "off"])
@deferred_f_from_coro_f
async def test_a_wall_can_be_taken_as_the_site_s_answer(site, tmp_path, level):
    """URLCHECK_BOT_WALLS=warn (or off, for a detection that mistakes a site's own page): the
    wall's page is judged as the site's answer, and warn says so on the hop and the row."""
    u = site.url
    rows = [(u(FROM, "/captcha/cloudflare?id=walls-kept"), u(TO, "/ok?id=walls-kept"))]
    csv = write_csv(tmp_path / "in.csv", "url,expected\n" + "".join(f"{a},{b}\n" for a, b in rows))
    results, crawler = await crawl(csv, tmp_path / "out.jsonl", URLCHECK_BOT_WALLS=level, **FAST)
    [line] = results
    assert line["error"] is None and line["final_status"] == 403
    assert line["reasons"] == ["no_redirect", "final_status_403", "final_url_mismatch"]
    stats = crawler.stats.get_stats()
    assert not [k for k in stats if k.startswith("urlcheck/blocked/")]
    if level == "warn":
        assert line["chain"][0]["vendor"] == "cloudflare" and "bot_wall" in line["warnings"]
        assert stats["urlcheck/warning/bot_wall"] == 1
        assert stats["urlcheck/wall/captcha/cloudflare-challenge"] == 1
    else:
        assert "vendor" not in line["chain"][0] and "bot_wall" not in line["warnings"]
        assert not [k for k in stats if k.startswith("urlcheck/wall/")]
