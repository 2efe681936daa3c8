"""The certificate ledger without a crawl: what a connection's check found is found again by the
response's host and certificate, stays bounded, and a strict refusal is kept per host and port
until a connection there is accepted."""

from __future__ import annotations

from scrapy.http import Response
from twisted.internet.ssl import Certificate

from tests.servers.tlsserver import issue
from urlcheck.check.tls import CertificateCheck
from urlcheck.crawl.tlscheck import CertificateLedger

URL = "https://127.0.0.4:8443/ok"


def test_a_response_finds_the_check_of_its_host_and_certificate() -> None:
    ledger = CertificateLedger()
    issued = issue(None, ips=("127.0.0.4",))
    certificate = Certificate.loadPEM(issued.cert_pem())
    digest = certificate.original.digest("sha256")
    check = CertificateCheck(["tls_self_signed"])
    ledger.record("127.0.0.4", digest, check)
    assert ledger.of_response(Response(URL, certificate=certificate)) is check
    other = Response(URL.replace("127.0.0.4", "127.0.0.5"), certificate=certificate)
    assert ledger.of_response(other) is None  # the same certificate on another host
    assert ledger.of_response(Response(URL.replace("https", "http"))) is None


def test_the_ledger_keeps_the_newest_answers_only() -> None:
    ledger = CertificateLedger(size=2)
    checks = [CertificateCheck() for _ in range(3)]
    for n, check in enumerate(checks):
        ledger.record("a.test", bytes([n]), check)
    assert ledger._checks == {("a.test", b"\x01"): checks[1], ("a.test", b"\x02"): checks[2]}


def test_a_refusal_is_kept_per_host_and_port_until_one_is_accepted() -> None:
    ledger = CertificateLedger()
    check = CertificateCheck(["tls_expired"])
    ledger.refuse("A.test", 443, check)
    assert ledger.refused("a.test", 443) is check
    assert ledger.refused("a.test", 8443) is None
    ledger.accepted("a.test", 443)
    assert ledger.refused("a.test", 443) is None
