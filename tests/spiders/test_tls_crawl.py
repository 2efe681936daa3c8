"""Certificates as a browser sees them, in real crawls against https servers on 127.0.0.4, one
per certificate made here (``tests/servers/tlsserver.py``): each failure is a hop warning and
fails the verdict with ``tls_certificate_invalid`` (that audit check's default level);
``URLCHECK_TLS=strict`` ends the row ``tls`` without following; ``off`` verifies nothing;
``URLCHECK_CA_BUNDLE`` trusts a private CA."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv
from tests.servers.tlsserver import TLSServer, issue, make_ca

pytestmark = pytest.mark.crawl

HOST = "127.0.0.4"
DAY = timedelta(days=1)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("tls")
    ca = make_ca()
    bundle = directory / "private-ca.pem"
    bundle.write_bytes(ca.cert_pem())
    now = datetime.now(UTC)
    certificates = {
        "good": issue(ca, ips=(HOST,)),
        "soon": issue(ca, ips=(HOST,), not_after=now + 5 * DAY),
        "self_signed": issue(None, ips=(HOST,)),
        "expired": issue(ca, ips=(HOST,), not_before=now - 30 * DAY, not_after=now - DAY),
        "mismatch": issue(ca, ips=("127.0.0.5",), names=("other.test",)),
        "unknown_ca": issue(make_ca("a CA nobody trusts"), ips=(HOST,)),
    }
    with ExitStack() as stack:
        servers = {
            name: stack.enter_context(TLSServer(HOST, issued, directory, name))
            for name, issued in certificates.items()
        }
        yield {"bundle": bundle, "servers": servers}


def _csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    return write_csv(path, "url,expected\n" + "".join(f"{a},{b}\n" for a, b in rows))


def _by_row(results: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {r["row"]: r for r in results}


@deferred_f_from_coro_f
async def test_each_certificate_failure_is_a_hop_warning_and_fails_the_verdict(tls, site, tmp_path):
    s = tls["servers"]
    names = ["good", "soon", "self_signed", "expired", "mismatch", "unknown_ca"]
    rows = [(s[name].url(), s[name].url()) for name in names]
    # An http hop redirecting to a self-signed https page: followed, and flagged.
    target = s["self_signed"].url()
    rows.append((site.url("127.0.0.2", "/redirect/301?to=" + quote(target, safe="")), target))
    csv = _csv(tmp_path / "in.csv", rows)
    results, _ = await crawl(
        csv, tmp_path / "out.jsonl", **FAST, URLCHECK_CA_BUNDLE=str(tls["bundle"])
    )
    by_row = _by_row(results)
    assert sorted(by_row) == list(range(1, 8))

    def seen(row: int) -> tuple[list[str], list[str]]:
        line = by_row[row]
        assert line["error"] is None and line["final_status"] == 200
        return line["chain"][-1].get("warnings", []), line["reasons"]

    assert seen(1) == ([], [])
    assert seen(2) == (["tls_expiring_soon"], [])  # a warning only
    assert seen(3) == (["tls_self_signed"], ["tls_certificate_invalid"])
    assert seen(4) == (["tls_expired"], ["tls_certificate_invalid"])
    assert seen(5) == (["tls_name_mismatch"], ["tls_certificate_invalid"])
    assert seen(6) == (["tls_unknown_ca"], ["tls_certificate_invalid"])
    assert seen(7) == (["tls_self_signed"], ["tls_certificate_invalid"])
    assert [by_row[r]["verdict"] for r in range(1, 8)] == ["pass"] * 2 + ["fail"] * 5
    assert by_row[3]["warnings"] == ["tls_self_signed"]  # the row lists its hops' warnings
    assert "cert_expires" not in by_row[7]["chain"][0]  # the http hop

    # The expiry, as the certificate says it.
    expires = datetime.fromisoformat(by_row[2]["chain"][0]["cert_expires"])
    assert timedelta(days=4) < expires - datetime.now(UTC) < timedelta(days=6)
    assert datetime.fromisoformat(by_row[1]["chain"][0]["cert_expires"]) > expires


@deferred_f_from_coro_f
async def test_strict_refuses_the_connection_and_says_why(tls, site, tmp_path):
    s = tls["servers"]
    target = s["self_signed"].url()
    rows = [
        (s["good"].url(), s["good"].url()),
        (s["self_signed"].url(), s["self_signed"].url()),
        (site.url("127.0.0.2", "/redirect/301?to=" + quote(target, safe="")), target),
        (s["soon"].url(), ""),  # expiring soon is no reason to refuse
    ]
    csv = _csv(tmp_path / "in.csv", rows)
    results, _ = await crawl(
        csv,
        tmp_path / "out.jsonl",
        **FAST,
        URLCHECK_CA_BUNDLE=str(tls["bundle"]),
        URLCHECK_TLS="strict",
        RETRY_TIMES=0,
    )
    by_row = _by_row(results)
    assert by_row[1]["verdict"] == "pass"
    for row in (2, 3):
        line = by_row[row]
        assert line["error"] == "tls", line
        assert line["error_message"].startswith(
            "certificate refused (URLCHECK_TLS=strict): tls_self_signed"
        )
        assert line["chain"][-1]["error"] == "tls"
        assert line["chain"][-1]["warnings"] == ["tls_self_signed"]
        assert line["final_status"] is None and line["verdict"] == "fail"
        assert "error_tls" in line["reasons"]
    assert by_row[3]["chain"][0]["status"] == 301  # the hop before was answered
    assert by_row[4]["error"] is None and by_row[4]["warnings"] == ["tls_expiring_soon"]


@deferred_f_from_coro_f
async def test_off_keeps_the_old_behaviour_and_the_system_store_knows_no_private_ca(tls, tmp_path):
    s = tls["servers"]
    rows = [(s["self_signed"].url(), s["self_signed"].url()), (s["good"].url(), s["good"].url())]
    off, _ = await crawl(
        _csv(tmp_path / "in.csv", rows), tmp_path / "off.jsonl", **FAST, URLCHECK_TLS="off"
    )
    for line in off:
        assert line["verdict"] == "pass" and line["warnings"] == []
        assert "cert_expires" not in line["chain"][0]
    # Without URLCHECK_CA_BUNDLE the test CA is nobody's: the good certificate is unknown.
    checked, _ = await crawl(_csv(tmp_path / "in2.csv", rows[1:]), tmp_path / "on.jsonl", **FAST)
    assert checked[0]["chain"][0]["warnings"] == ["tls_unknown_ca"]


@deferred_f_from_coro_f
async def test_an_https_page_redirecting_to_http_is_a_downgrade(tls, site, tmp_path):
    """The audit's `https_downgrade` (fail by default) end to end: a trusted https page whose
    301 sends the browser to http. Without an expected target it only warns."""
    good = tls["servers"]["good"]
    plain = site.url("127.0.0.2", "/ok")
    down = good.url("/redirect?to=" + quote(plain, safe=""))
    rows = [(down, plain), (down, "")]
    results, _ = await crawl(
        _csv(tmp_path / "in.csv", rows), tmp_path / "out.jsonl", **FAST,
        URLCHECK_CA_BUNDLE=str(tls["bundle"]),
    )  # fmt: skip
    by_row = _by_row(results)
    assert [hop["status"] for hop in by_row[1]["chain"]] == [301, 200]
    assert by_row[1]["final_url"] == plain and by_row[1]["verdict"] == "fail"
    assert by_row[1]["reasons"] == ["https_downgrade"]
    assert by_row[2]["verdict"] is None and "https_downgrade" in by_row[2]["warnings"]
