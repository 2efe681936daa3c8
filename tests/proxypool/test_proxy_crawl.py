"""Crawls through real forward proxies on loopback (tests/servers/proxy.py), each with its own
egress address, against a test site that answers by the proxy's address."""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import quote, urlsplit

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv
from tests.sitefixture import ProxyServer, SiteServer, host_stats, running_proxies, unused_port

pytestmark = pytest.mark.crawl

SITE_HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
GOOD = [f"127.0.0.{i}" for i in range(20, 25)]
BLOCKED = GOOD[:2]  # blocked by site A with a captcha
SECRET = "s3cr%40t"


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("proxies")
    with (
        SiteServer(SITE_HOSTS, log_path=tmp / "site.jsonl") as site,
        running_proxies(
            [ProxyServer(listen=h, log_path=tmp / f"proxy-{h}.jsonl") for h in GOOD[:4]]
            + [
                ProxyServer(
                    listen=GOOD[4], auth=("user", "s3cr@t"), log_path=tmp / "proxy-auth.jsonl"
                )
            ]
        ) as proxies,
    ):
        yield site, proxies


def proxy_list(proxies, *extra):
    urls = [p.url for p in proxies[:4]] + [f"http://user:{SECRET}@{proxies[4].address}"]
    return [*urls, *extra]


def clients(site, host, tag):
    entries = sorted(site.log(), key=lambda e: e["t_arrival"])
    return [
        e["client"].rsplit(":", 1)[0]
        for e in entries
        if e["host"] == host and f"run={tag}" in e["path"]
    ]


def csv_of(tmp_path, urls):
    return write_csv(tmp_path / "in.csv", "url\n" + "".join(f'"{u}"\n' for u in urls))


@deferred_f_from_coro_f
async def test_results_are_right_through_proxies_and_secrets_stay_secret(net, tmp_path, caplog):
    site, proxies = net
    u = site.url
    rows = [u("127.0.0.3", f"/chain/2?run=plain&i={i}") for i in range(10)]
    rows += [u("127.0.0.3", "/status/404?run=plain"), u("127.0.0.3", "/loop/a?run=plain")]
    csv = csv_of(tmp_path, rows)
    out = tmp_path / "out.jsonl"
    results, crawler = await crawl(
        csv,
        out,
        **FAST,
        URLCHECK_PROXIES=proxy_list(proxies),
        URLCHECK_PROXY_STICKY="none",
        URLCHECK_PROXY_STRATEGY="round-robin",
    )
    by_url = {r["url"]: r for r in results}
    assert len(results) == 12
    assert all(by_url[r]["final_status"] == 200 and by_url[r]["hops"] == 2 for r in rows[:10])
    assert by_url[rows[10]]["final_status"] == 404
    assert by_url[rows[11]]["loop"] is True
    used = {r["proxy"] for r in results}
    assert used <= {p.address for p in proxies} and len(used) >= 3
    assert all(proxy.log() for proxy in proxies), "round-robin used every proxy"
    # The credentials went to the authenticating proxy only, and no further.
    assert not any("proxy_authorization" in e for e in site.log())
    for proxy in proxies[:4]:
        assert not any(e.get("had_proxy_auth") for e in proxy.log())
    assert all(e["auth_ok"] for e in proxies[4].log())
    text = out.read_text() + caplog.text + json.dumps(crawler.stats.get_stats(), default=str)
    assert "s3cr" not in text and "user:" not in text
    assert (tmp_path / "proxies.json").exists()
    assert "s3cr" not in (tmp_path / "proxies.json").read_text()


@deferred_f_from_coro_f
async def test_blocked_proxies_leave_that_site_but_keep_serving_others(net, tmp_path):
    site, proxies = net
    u = site.url
    blocked = ",".join(BLOCKED)
    rows = []
    for i in range(40):
        rows.append(u("127.0.0.2", f"/by-client?blocked={blocked}&as=recaptcha&run=blame&i={i}"))
        rows.append(u("127.0.0.3", f"/ok?run=blame&i={i}"))
    csv = csv_of(tmp_path, rows)
    results, crawler = await crawl(
        csv,
        tmp_path / "out.jsonl",
        **FAST,
        URLCHECK_PROXIES=proxy_list(proxies),
        URLCHECK_PROXY_STICKY="none",
        URLCHECK_PROXY_STRATEGY="round-robin",
    )
    assert len(results) == 80
    site_a = [r for r in results if "/by-client" in r["url"]]
    # Captchas were retried through other proxies: rows end with the real page. Before both
    # blocked pairs are benched, a row can draw blocked proxies on all 3 tries (~4% of runs).
    blocked_rows = [r for r in site_a if r["error"] == "blocked"]
    assert len(blocked_rows) <= 1
    assert all(r["final_status"] == 200 for r in site_a if r["error"] is None)
    assert crawler.stats.get_value("urlcheck/proxy/captcha/recaptcha", 0) >= 2
    a_clients = clients(site, "127.0.0.2", "blame")
    late_a = a_clients[len(a_clients) // 2 :]
    assert sum(c in BLOCKED for c in late_a) <= 2, "blocked proxies kept getting site A"
    b_clients = clients(site, "127.0.0.3", "blame")
    assert set(b_clients[len(b_clients) // 2 :]) & set(BLOCKED), "blocked proxies left B"
    snapshot = json.loads((tmp_path / "proxies.json").read_text())
    assert all(p["state"] != "dead" for p in snapshot["proxies"])


@deferred_f_from_coro_f
async def test_a_site_down_for_everyone_quarantines_nobody(net, tmp_path):
    site, proxies = net
    rows = [site.url("127.0.0.4", f"/down?status=500&run=down&i={i}") for i in range(30)]
    csv = csv_of(tmp_path, rows)
    results, _ = await crawl(
        csv,
        tmp_path / "out.jsonl",
        **FAST,
        URLCHECK_PROXIES=proxy_list(proxies),
        URLCHECK_PROXY_STICKY="none",
    )
    assert [r["final_status"] for r in results] == [500] * 30
    snapshot = json.loads((tmp_path / "proxies.json").read_text())
    assert {p["state"] for p in snapshot["proxies"]} <= {"healthy", "degraded"}
    assert snapshot["totals"]["quarantines_total"] == 0


@deferred_f_from_coro_f
async def test_sticky_hosts_keep_their_proxy(net, tmp_path):
    site, proxies = net
    rows = [site.url(h, f"/ok?run=sticky&i={i}") for i in range(6) for h in SITE_HOSTS[:3]]
    csv = csv_of(tmp_path, rows)
    results, _ = await crawl(
        csv, tmp_path / "out.jsonl", **FAST, URLCHECK_PROXIES=proxy_list(proxies)
    )
    assert all(r["final_status"] == 200 for r in results)
    for host in SITE_HOSTS[:3]:
        assert len(set(clients(site, host, "sticky"))) == 1, host
        assert len({r["proxy"] for r in results if host in r["url"]}) == 1


@deferred_f_from_coro_f
async def test_a_sticky_session_is_not_rotated_on_a_block(net, tmp_path):
    site, proxies = net
    blocked = ",".join(GOOD)  # every proxy is blocked on this site
    rows = [
        site.url("127.0.0.5", f"/by-client?blocked={blocked}&as=akamai&run=stblock&i={i}")
        for i in range(3)
    ]
    csv = csv_of(tmp_path, rows)
    results, _ = await crawl(
        csv, tmp_path / "out.jsonl", **FAST, URLCHECK_PROXIES=proxy_list(proxies)
    )
    assert [r["error"] for r in results] == ["blocked"] * 3
    assert all("block:akamai" in r["error_message"] for r in results)
    assert all(r["retries"] == 0 for r in results)


@deferred_f_from_coro_f
async def test_dead_and_407_proxies_are_taken_out(net, tmp_path):
    site, proxies = net
    with ProxyServer(listen="127.0.0.26", mode="auth407") as auth407:
        rejecting = auth407.address
        dead = f"http://127.0.0.27:{unused_port('127.0.0.27')}"
        rows = [site.url("127.0.0.3", f"/ok?run=dead&i={i}") for i in range(40)]
        csv = csv_of(tmp_path, rows)
        results, _ = await crawl(
            csv,
            tmp_path / "out.jsonl",
            **FAST,
            RETRY_TIMES=3,
            URLCHECK_PROXIES=proxy_list(proxies, auth407.url, dead),
            URLCHECK_PROXY_STICKY="none",
            URLCHECK_PROXY_STRATEGY="round-robin",
        )
    assert sum(r["final_status"] == 200 for r in results) >= 38
    states = {
        p["display"]: p["state"]
        for p in json.loads((tmp_path / "proxies.json").read_text())["proxies"]
    }
    assert states[rejecting] == "dead"
    assert states[dead.removeprefix("http://")] in {"quarantined", "dead", "probing"}


def test_bad_proxy_lines_are_reported_and_skipped(tmp_path, caplog):
    from scrapy.settings import Settings

    from urlcheck.config.crawlconfig import ConfigError
    from urlcheck.config.proxies import ProxySettings

    proxy_file = tmp_path / "proxies.txt"
    proxy_file.write_text(
        "# pool\n\nhttp://127.0.0.20:3128\nnot a proxy\nftp://x:1\n"
        "http://${URLCHECK_TEST_NO_SUCH_VAR}@127.0.0.21:3128\n"
    )
    parsed = ProxySettings.from_settings(Settings({"URLCHECK_PROXY_FILE": str(proxy_file)}))
    assert parsed is not None and [p.display for p in parsed.proxies] == ["127.0.0.20:3128"]
    assert f"{proxy_file}:4" in caplog.text and f"{proxy_file}:5" in caplog.text
    assert "URLCHECK_TEST_NO_SUCH_VAR" in caplog.text
    proxy_file.write_text("garbage\n")
    with pytest.raises(ConfigError, match="no valid proxy"):
        ProxySettings.from_settings(Settings({"URLCHECK_PROXY_FILE": str(proxy_file)}))
    assert ProxySettings.from_settings(Settings({})) is None


@deferred_f_from_coro_f
async def test_idle_proxies_are_probed_through_the_control_host_politely(net, tmp_path):
    site, proxies = net
    control = site.url("127.0.0.5", "/ok?run=probe")
    rows = [site.url("127.0.0.3", f"/delay/0.2?run=probed&i={i}") for i in range(8)]
    csv = csv_of(tmp_path, rows)
    results, crawler = await crawl(
        csv,
        tmp_path / "out.jsonl",
        URLCHECK_PROXIES=proxy_list(proxies),
        URLCHECK_PROXY_PROBE_URLS=control,
        URLCHECK_PROXY_PROBE_IDLE_MIN=0.2,
        URLCHECK_PROXY_PROBE_IDLE_MAX=0.4,
        URLCHECK_PROXY_PROBE_INTERVAL=0.1,
    )
    assert all(r["final_status"] == 200 for r in results)
    stats = crawler.stats.get_stats()
    assert stats.get("urlcheck/proxy/probes/sent", 0) >= 3
    assert stats.get("urlcheck/proxy/probes/passed", 0) >= 3
    probes = [e for e in site.log() if "run=probe" in e["path"] and e["host"] == "127.0.0.5"]
    assert len({e["client"].rsplit(":", 1)[0] for e in probes}) >= 2  # several proxies probed
    control_stats = host_stats(probes)["127.0.0.5"]
    assert control_stats.max_in_flight == 1
    assert control_stats.min_gap is not None and control_stats.min_gap >= 0.29


@deferred_f_from_coro_f
async def test_a_hop_our_address_guard_refuses_does_not_count_against_the_proxy(net, tmp_path):
    # A Location to a link-local literal, reached through a proxy: the guard refuses the hop
    # before the proxy is contacted, so the proxy did nothing wrong and must not pay for it.
    site, proxies = net
    proxy = proxies[0]
    targets = [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/",
        "http://[::ffff:169.254.169.254]/",  # IPv4-mapped: judged as the address it reaches
    ]
    rows = [
        site.url("127.0.0.3", f"/redirect/301?to={quote(t, safe='')}&run=guard") for t in targets
    ]
    rows.append(site.url("127.0.0.3", "/ok?run=guard"))
    results, crawler = await crawl(
        csv_of(tmp_path, rows),
        tmp_path / "out.jsonl",
        **FAST,
        RETRY_TIMES=0,
        URLCHECK_PROXIES=[proxy.url],
    )
    by_row = {r["row"]: r for r in results}
    for n in (1, 2, 3):
        row = by_row[n]
        assert row["error"] == "blocked_address", row
        assert [h["status"] for h in row["chain"]] == [301, None]
        assert row["chain"][1]["error"] == "blocked_address"
    assert by_row[4]["final_status"] == 200 and by_row[4]["proxy"] == proxy.address

    stats = crawler.stats.get_stats()
    assert stats["urlcheck/proxy/released/not_sent"] == 3
    assert stats["urlcheck/proxy/released/ok"] == 4  # the three 301s and the 200
    assert not [k for k in stats if k.startswith("urlcheck/proxy/released/error_")]
    snapshot = json.loads((tmp_path / "proxies.json").read_text())
    [seen] = snapshot["proxies"]
    assert (seen["state"], seen["success_rate"], seen["active"]) == ("healthy", 1.0, 0)
    assert snapshot["totals"]["leases_active"] == 0  # the refused hops' leases were ended
    for site_name, cells in snapshot["matrix"].items():
        assert all(c["success_rate"] == 1.0 for c in cells.values()), site_name
    for blocked in ("169.254.169.254", "fe80::1"):
        assert not snapshot["matrix"].get(blocked)
    # Proof that nothing left: the proxy saw only the loopback site's URLs.
    seen_targets = [e["target"] for e in proxy.log() if "run=guard" in e["target"]]
    assert sorted(seen_targets) == sorted(rows)
    # Nor anything else in this module: every GET or CONNECT it was asked for went to loopback.
    asked = {
        urlsplit(e["target"] if e["method"] != "CONNECT" else f"//{e['target']}").hostname
        for e in proxy.log()
    }
    assert asked and all(ipaddress.ip_address(h).is_loopback for h in asked), asked
