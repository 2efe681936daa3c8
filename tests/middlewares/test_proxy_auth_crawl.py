"""A proxy answering 407 is our credential fault, not the site's doing: a real crawl through
real proxies (tests/servers/proxy.py), one of them given the wrong password, sticky by host.
That proxy is set aside (dead, flagged misconfigured) and its requests go through the others:
no row ends ``blocked``."""

from __future__ import annotations

import json
import logging

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv
from tests.sitefixture import ProxyServer, SiteServer, running_proxies

pytestmark = pytest.mark.crawl

# Forty healthy sites: each goes to the proxy rendezvous hashing picks for it, which depends on
# the proxies' ports (random): with ten, 1 run in 18 gave the bad proxy none of them.
SITES = tuple(f"127.0.0.{i}" for i in range(40, 80))
GOOD = ("127.0.0.35", "127.0.0.36", "127.0.0.37")
BAD = "127.0.0.38"  # wants a password we do not have


@deferred_f_from_coro_f
async def test_a_407_sets_the_proxy_aside_and_the_request_goes_to_another(tmp_path, caplog):
    with (
        SiteServer(SITES, log_path=tmp_path / "site.jsonl") as site,
        running_proxies(
            [ProxyServer(h, log_path=tmp_path / f"proxy-{h}.jsonl") for h in GOOD]
            + [ProxyServer(BAD, auth=("cust", "right"), log_path=tmp_path / "proxy-bad.jsonl")]
        ) as proxies,
    ):
        *good, bad = proxies
        rows = [site.url(h, f"/ok?run=auth407&i={i}") for i in range(2) for h in SITES]
        csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
        with caplog.at_level(logging.INFO):
            results, crawler = await crawl(
                csv,
                tmp_path / "out.jsonl",
                **FAST,
                URLCHECK_PROXIES=[p.url for p in good] + [f"http://cust:wrong@{bad.address}"],
                URLCHECK_PROXY_STICKY="host",
                URLCHECK_PROXY_STRATEGY="round-robin",
            )
        asked_bad = bad.log()
        bad_address, good_addresses = bad.address, {p.address for p in good}
    assert len(results) == len(rows)
    assert [(r["row"], r["error"], r["error_message"]) for r in results if r["error"]] == []
    assert all(r["final_status"] == 200 for r in results)
    assert {r["proxy"] for r in results} <= good_addresses
    # The bad proxy was asked (and answered 407), then never again once set aside.
    assert asked_bad and {e["status"] for e in asked_bad} == {407}
    assert len(asked_bad) < len(SITES)
    snapshot = json.loads((tmp_path / "proxies.json").read_text())
    states = {p["display"]: p["state"] for p in snapshot["proxies"]}
    assert states[bad_address] == "dead"
    assert all(states[address] == "healthy" for address in good_addresses)
    flagged = [
        r for r in caplog.records if bad_address in r.getMessage() and r.levelno >= logging.WARNING
    ]
    assert flagged, "the 407 proxy's death is a WARNING (misconfigured)"
    assert "wrong" not in caplog.text  # the password never reaches the log
    stats = crawler.stats.get_stats()
    assert stats.get("urlcheck/proxy/released/proxy_auth", 0) == len(asked_bad)
    assert not stats.get("urlcheck/proxy/block/proxy_auth")
