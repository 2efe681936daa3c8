"""The address guard: the policy (pure), the endpoint that applies it at connect time (on a
memory reactor, so a broken guard sends nothing), and real crawls inside a network namespace
the test makes itself, where 169.254.169.254, 10.1.2.3 and a "public" 93.184.216.34 live on
its own loopback interface (tests/check/netns_guard_child.py)."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from twisted.internet.address import IPv4Address
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import MemoryReactor

from tests.check.netns_guard_child import PUBLIC, ROBOTS_TARGETS
from tests.conftest import FAST, crawl, write_csv
from tests.sitefixture import ProxyServer
from urlcheck.check.addressguard import (
    AddressPolicy,
    BlockedAddressError,
    embedded_ipv4,
    literal_address,
    scope_of,
)
from urlcheck.config.crawlconfig import ConfigError
from urlcheck.crawl.downloadhandler import GuardedEndpoint
from urlcheck.crawl.failures import classify_exception

if TYPE_CHECKING:
    from twisted.python.failure import Failure

ip = ipaddress.ip_address


@pytest.mark.parametrize(
    ("address", "scope"),
    [
        ("169.254.169.254", "link_local"),
        ("::ffff:169.254.169.254", "link_local"),
        ("64:ff9b::a9fe:a9fe", "link_local"),
        ("2002:a9fe:a9fe::1", "link_local"),
        ("fe80::1", "link_local"),
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("0.0.0.0", "loopback"),
        ("::", "loopback"),
        ("0.1.2.3", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.20.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),
        ("::ffff:10.0.0.1", "private"),
        ("fd12:3456::1", "unique_local"),
        ("192.0.2.1", "reserved"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("224.0.0.1", "reserved"),
        ("fec0::1", "private"),
        ("93.184.216.34", "public"),
        ("2606:2800:220:1:248:1893:25c8:1946", "public"),
        ("::ffff:93.184.216.34", "public"),
    ],
)
def test_scopes(address, scope):
    assert scope_of(ip(address)) == scope


def test_embedded_ipv4_is_what_an_ipv6_form_reaches():
    assert embedded_ipv4(ip("::ffff:a9fe:a9fe")) == ip("169.254.169.254")
    assert embedded_ipv4(ip("::a9fe:a9fe")) == ip("169.254.169.254")  # IPv4-compatible
    assert embedded_ipv4(ip("::1")) == ip("::1")
    assert embedded_ipv4(ip("2606:2800::1")) == ip("2606:2800::1")


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("169.254.169.254", "169.254.169.254"),
        ("[::ffff:169.254.169.254]", "::ffff:a9fe:a9fe"),
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("2852039166", "169.254.169.254"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        ("169.254.43518", "169.254.169.254"),
        ("0", "0.0.0.0"),
        ("example.com", None),
        ("deadbeef", None),
        ("", None),
    ],
)
def test_literal_addresses_in_every_form_the_c_resolver_accepts(host, address):
    found = literal_address(host)
    assert (None if found is None else str(found)) == address


def test_policy_rules():
    policy = AddressPolicy()
    # Link-local: never, whatever came before.
    for address in ("169.254.169.254", "::ffff:169.254.169.254", "fe80::1"):
        assert policy.refusal(ip(address), after_public=False) is not None
    # Private space: fine for input rows and private chains, not after a public answer.
    for address in ("127.0.0.1", "10.1.2.3", "fd00::1", "0.0.0.0", "192.0.2.1"):
        assert policy.refusal(ip(address), after_public=False) is None
        scope, reason = policy.refusal(ip(address), after_public=True)
        assert scope == scope_of(ip(address)) and "public" in reason
    assert policy.refusal(ip("93.184.216.34"), after_public=True) is None
    strict = AddressPolicy(block_private_input=True)
    assert strict.refusal(ip("127.0.0.2"), after_public=False) is not None
    assert strict.refusal(ip("93.184.216.34"), after_public=False) is None
    allowing = AddressPolicy(allow=(ipaddress.ip_network("169.254.169.254/32"),))
    assert allowing.refusal(ip("169.254.169.254"), after_public=True) is None
    assert allowing.refusal(ip("::ffff:169.254.169.254"), after_public=True) is None
    assert allowing.refusal(ip("169.254.1.1"), after_public=False) is not None
    off = AddressPolicy(enabled=False)
    assert off.refusal(ip("169.254.169.254"), after_public=True) is None


def test_policy_settings():
    policy = AddressPolicy.from_settings(
        Settings(
            {
                "URLCHECK_ALLOW_NETWORKS": "10.0.0.0/8, fd00::/8",
                "URLCHECK_BLOCK_PRIVATE_INPUT": "true",
            }
        )
    )
    assert policy.allow == (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8"))
    assert policy.block_private_input and policy.enabled
    with pytest.raises(ConfigError, match=r"URLCHECK_ALLOW_NETWORKS: 'intranet'"):
        AddressPolicy.from_settings(Settings({"URLCHECK_ALLOW_NETWORKS": "intranet"}))
    assert AddressPolicy.from_settings(Settings({})) == AddressPolicy()


def test_the_error_names_host_address_and_why():
    exc = BlockedAddressError("metadata.test", ip("169.254.169.254"), "link_local", "never")
    assert str(exc) == "metadata.test (169.254.169.254) is link-local address space: never"
    assert classify_exception(exc) == ("blocked_address", str(exc))


class ScriptedResolver:
    """Answers each lookup with the next list of addresses: a name that rebinds."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)

    def resolveHostName(self, receiver, hostName, portNumber=0, *args, **kwargs):
        receiver.resolutionBegan(None)
        for address in self.answers.pop(0):
            receiver.addressResolved(IPv4Address("TCP", address, portNumber))
        receiver.resolutionComplete()


def _connect(reactor, host, *, after_public=False, resolver=None, policy=None):
    endpoint = GuardedEndpoint(
        reactor,
        host,
        8080,
        policy=policy or AddressPolicy(),
        after_public=after_public,
        resolver=resolver,
    )
    failures: list[Failure] = []

    def failed(failure: Failure) -> None:
        failures.append(failure)

    endpoint.connect(Factory.forProtocol(Protocol)).addErrback(failed)
    return failures


def test_endpoint_checks_every_resolution_so_dns_rebinding_cannot_pass():
    reactor = MemoryReactor()
    resolver = ScriptedResolver(
        ["127.0.0.2"], ["169.254.169.254"], ["169.254.169.254", "127.0.0.3"]
    )
    assert _connect(reactor, "rebind.test", resolver=resolver) == []
    assert [(c[0], c[1]) for c in reactor.tcpClients] == [("127.0.0.2", 8080)]
    [failure] = _connect(reactor, "rebind.test", resolver=resolver)
    assert isinstance(failure.value, BlockedAddressError)
    assert str(failure.value.address) == "169.254.169.254"
    assert len(reactor.tcpClients) == 1  # nothing was connected to
    # Refused addresses are dropped; the allowed ones are still tried.
    assert _connect(reactor, "rebind.test", resolver=resolver) == []
    assert [c[0] for c in reactor.tcpClients] == ["127.0.0.2", "127.0.0.3"]


@pytest.mark.parametrize(
    "host",
    ["169.254.169.254", "[::ffff:169.254.169.254]", "0xa9.0xfe.0xa9.0xfe", "2852039166", "fe80::1"],
)
def test_endpoint_refuses_literal_link_local_forms_without_connecting(host):
    reactor = MemoryReactor()
    [failure] = _connect(reactor, host, resolver=ScriptedResolver())
    assert isinstance(failure.value, BlockedAddressError)
    assert failure.value.scope == "link_local"
    assert reactor.tcpClients == []  # IPv6 endpoints use connectTCP too


def test_endpoint_refuses_private_space_after_a_public_answer():
    reactor = MemoryReactor()
    for host in ("127.0.0.1", "0.0.0.0", "10.1.2.3", "[::1]"):
        [failure] = _connect(reactor, host, after_public=True)
        assert isinstance(failure.value, BlockedAddressError)
    assert _connect(reactor, "127.0.0.1") == []
    assert _connect(reactor, "[::1]") == []  # an allowed IPv6 literal goes out over IPv6
    assert [c[0] for c in reactor.tcpClients] == ["127.0.0.1", "::1"]


# --- real crawls inside a network namespace -------------------------------------------------

CHILD = Path(__file__).with_name("netns_guard_child.py")


def _can_unshare() -> bool:
    tools = shutil.which("unshare") and shutil.which("ip")
    return os.geteuid() == 0 and tools is not None


@pytest.fixture(scope="module")
def namespace_runs(tmp_path_factory):
    if not _can_unshare():
        pytest.skip("needs root, unshare(1) and ip(8) to make a network namespace")
    out = tmp_path_factory.mktemp("netns") / "runs.json"
    # -n: a network namespace with nothing but its own lo; -m: a private mount namespace, so the
    # child can give its resolver its own /etc/hosts.
    subprocess.run(
        ["unshare", "-n", "-m", "--", sys.executable, str(CHILD), str(out)],
        check=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    return json.loads(out.read_text())


def _rows(run):
    return {r["input"]["id"]: r for r in run["results"]}


@pytest.mark.crawl
def test_redirects_into_blocked_space_are_not_requested(namespace_runs):
    run = namespace_runs["default"]
    rows = _rows(run)
    assert len(rows) == len(run["results"]) == run["rows"]
    # hex and int: numeric IPv4 forms, which the WHATWG parser reads as 169.254.169.254.
    names = (
        "meta",
        "mapped",
        "hex",
        "int",
        "private",
        "loopback",
        "zero",
        "name",
        "fe80",
        "twohop",
    )
    for name in names:
        row = rows[name]
        assert row["error"] == "blocked_address", (name, row)
        assert row["chain"][-1]["error"] == "blocked_address"
        assert row["chain"][-2]["location"] == row["chain"][-1]["url"]  # the Location is kept
        assert row["final_url"] is None
    assert "link-local" in rows["meta"]["error_message"]
    assert "metadata.test (169.254.169.254)" in rows["name"]["error_message"]
    assert "location_ipv4_numeric" in rows["hex"]["warnings"]
    for name in ("input_meta", "input_name"):
        assert rows[name]["error"] == "blocked_address" and rows[name]["status"] is None
    # What stays allowed: public to public, private input rows, private to private.
    assert rows["public"]["final_status"] == 200 and rows["public"]["error"] is None
    assert rows["input_private"]["final_status"] == 200
    assert rows["private_chain"]["final_status"] == 200 and rows["private_chain"]["hops"] == 1
    # The proof: no request reached a blocked address, nor the private ones from a public page.
    for entry in run["log"]:
        assert not entry["local"].startswith("169.254.169.254"), entry
        assert "from=public" not in entry["path"] or entry["local"].startswith("93."), entry


@pytest.mark.crawl
def test_robots_txt_requests_are_judged_as_the_hop_that_caused_them(namespace_runs):
    run = namespace_runs["robots"]
    rows = _rows(run)
    assert len(rows) == len(run["results"]) == run["rows"]
    for name, _ in ROBOTS_TARGETS:
        assert rows[name]["error"] == "blocked_address", (name, rows[name])
    assert rows["public"]["final_status"] == 200
    robots = [e["local"].rsplit(":", 1)[0] for e in run["log"] if e["path"] == "/robots.txt"]
    # robots.txt was obeyed (asked of the public host) and never asked of a blocked address.
    assert robots and set(robots) == {PUBLIC}, robots
    assert not [e for e in run["log"] if "from=public" in e["path"]]


def _reached(run, prefix):
    return [e for e in run["log"] if e["local"].startswith(prefix)]


@pytest.mark.crawl
def test_what_a_public_sitemap_names_is_judged_as_a_hop_after_it(namespace_runs):
    runs = namespace_runs["sitemaps"]
    # A public index's sitemaps on a private or link-local address are not fetched.
    for name, where in (("public_index", "10.1.2.3"), ("metadata_index", "169.254.169.254")):
        run = runs[name]
        assert run["results"] == [], name
        assert not _reached(run, where), (name, run["log"])
        assert "a redirect from a public address may not lead there" in run["stderr"] or (
            "link-local" in run["stderr"]
        ), run["stderr"]
        assert "(its URLs are not checked)" in run["stderr"]
    # A public sitemap's rows on a private address: refused as a redirect there would be.
    rows = runs["public_rows"]["results"]
    assert len(rows) == 2 and {r["error"] for r in rows} == {"blocked_address"}, rows
    assert "a redirect from a public address" in rows[0]["error_message"]
    assert not _reached(runs["public_rows"], "10.")
    # A public sitemap URL redirecting to a private one: not fetched, the run ends in one line.
    redirect = runs["public_redirect"]
    assert redirect["results"] == [] and not _reached(redirect, "10.")
    assert "the sitemap could not be fetched" in redirect["stderr"], redirect["stderr"]
    # A job of it, run again from the job's copy of the sitemap: still the site's word.
    for name in ("job_first", "job_again"):
        run = runs[name]
        assert [r["error"] for r in run["results"]] == ["blocked_address"] * 2, run["stderr"]
        assert not _reached(run, "10."), (name, run["log"])


@pytest.mark.crawl
def test_the_users_own_sitemaps_stay_input(namespace_runs):
    # The same private sitemaps and rows, named by the user's own (loopback) index: fetched and
    # checked (this namespace can reach 10.1.2.3: the refusals above are the guard's).
    run = namespace_runs["sitemaps"]["private_index"]
    assert [r["final_status"] for r in run["results"]] == [200] * 4, run["stderr"]
    assert len(_reached(run, "10.1.2.3")) == 2 + 4
    public = namespace_runs["sitemaps"]["public_public"]
    assert [r["final_status"] for r in public["results"]] == [200] * 2, public["stderr"]


@pytest.mark.crawl
def test_allowed_networks_and_strict_input(namespace_runs):
    allow = _rows(namespace_runs["allow"])
    assert allow["input_meta"]["status"] == 404 and allow["input_meta"]["error"] is None
    assert allow["private"]["final_status"] == 200
    assert any(e["local"].startswith("169.254.169.254") for e in namespace_runs["allow"]["log"])
    strict = _rows(namespace_runs["strict"])
    assert strict["input_private"]["error"] == "blocked_address"
    assert "URLCHECK_BLOCK_PRIVATE_INPUT" in strict["input_private"]["error_message"]
    assert strict["public"]["final_status"] == 200
    assert not any(e["local"].startswith("10.") for e in namespace_runs["strict"]["log"])


@pytest.mark.crawl
def test_with_the_guard_off_the_same_rows_reach_the_metadata_address(namespace_runs):
    # What the tests above would see if the guard were broken: this namespace can tell.
    off = _rows(namespace_runs["off"])
    assert off["meta"]["final_status"] == 404 and off["name"]["final_status"] == 404
    assert off["private"]["final_status"] == 200
    assert any(e["local"].startswith("169.254.169.254") for e in namespace_runs["off"]["log"])


@pytest.mark.crawl
@deferred_f_from_coro_f
async def test_through_a_proxy_an_address_literal_is_still_judged(site, tmp_path):
    # The proxy resolves names, so only literals can be judged; they are, before the proxy is
    # asked. (The demo proxy refuses non-loopback origins itself: nothing can leave either way.)
    with ProxyServer("127.0.0.21", log_path=tmp_path / "proxy.jsonl") as proxy:
        rows = [
            "http://169.254.169.254/latest/meta-data/",
            "http://[::ffff:169.254.169.254]/latest/meta-data/",
            site.url("127.0.0.2", "/ok?id=viaproxy"),
        ]
        csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
        results, _ = await crawl(
            csv, tmp_path / "out.jsonl", **FAST, RETRY_TIMES=0, URLCHECK_PROXIES=proxy.url
        )
        by_row = {r["row"]: r for r in results}
        assert by_row[1]["error"] == by_row[2]["error"] == "blocked_address"
        assert by_row[3]["status"] == 200 and by_row[3]["proxy"] == proxy.address
        assert [e["target"] for e in proxy.log()] == [rows[2]]
