"""Each https connection's certificate verified as a browser verifies it, the answer kept for
the hops that use the connection (:mod:`urlcheck.check.tls` names what is found).

Scrapy's own context factory verifies nothing (``DOWNLOAD_VERIFY_CERTIFICATES`` off), and with
it on refuses the connection with an opaque error. This one wraps it: same ciphers, versions and
method, plus the system trust store (and ``URLCHECK_CA_BUNDLE``) on one shared SSL context, and
a verify callback per connection that records every problem of the chain (issuer, dates) and of
the leaf's names (``service_identity``, as Twisted checks them) and lets the handshake go on;
with ``URLCHECK_TLS=strict`` it refuses instead. What a connection found is kept by host and
leaf certificate (its SHA-256): a hop's response carries its certificate, so a pooled or resumed
connection finds the answer of the handshake that checked it.

Every access to Scrapy's and Twisted's private TLS classes is in this module.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from OpenSSL import SSL
from scrapy.core.downloader.contextfactory import _ScrapyCertificateOptions
from scrapy.utils.httpobj import urlparse_cached
from service_identity import CertificateError, VerificationError
from service_identity.hazmat import DNS_ID, IPAddress_ID, verify_service_identity
from service_identity.pyopenssl import extract_patterns
from twisted.internet._sslverify import ClientTLSOptions
from twisted.web.iweb import IPolicyForHTTPS
from zope.interface import implementer  # type: ignore[import-untyped]

from urlcheck.check.tls import NAME_MISMATCH, CertificateCheck, TLSConfig, reason_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from OpenSSL.crypto import X509
    from scrapy.http import Response
    from twisted.protocols.tls import TLSMemoryBIOProtocol

logger = logging.getLogger(__name__)

LEDGER_SIZE = 4096  # connections' answers kept; the oldest goes first


def _host(name: str) -> str:
    return name.strip("[]").lower()


class CertificateLedger:
    """What each verified connection found, by host and leaf certificate; and, with
    ``URLCHECK_TLS=strict``, why the last connection to a host was refused."""

    def __init__(self, size: int = LEDGER_SIZE) -> None:
        self._size = size
        self._checks: dict[tuple[str, bytes], CertificateCheck] = {}
        self._refused: dict[str, CertificateCheck] = {}

    def record(self, host: str, digest: bytes, check: CertificateCheck) -> None:
        key = (_host(host), digest)
        self._checks.pop(key, None)
        self._checks[key] = check
        if len(self._checks) > self._size:
            del self._checks[next(iter(self._checks))]

    def refuse(self, host: str, port: int, check: CertificateCheck) -> None:
        key = f"{_host(host)}:{port}"
        self._refused.pop(key, None)
        self._refused[key] = check
        if len(self._refused) > self._size:
            del self._refused[next(iter(self._refused))]

    def accepted(self, host: str, port: int) -> None:
        self._refused.pop(f"{_host(host)}:{port}", None)

    def of_response(self, response: Response) -> CertificateCheck | None:
        """The check of the connection ``response`` came on; None for http, or unchecked."""
        certificate = getattr(response, "certificate", None)
        if certificate is None:
            return None
        host = urlparse_cached(response).hostname or ""
        digest = certificate.original.digest("sha256")
        return self._checks.get((_host(host), digest))

    def refused(self, host: str, port: int) -> CertificateCheck | None:
        """Why the last connection to ``host:port`` was refused (strict); None when the last
        one was not."""
        return self._refused.get(f"{_host(host)}:{port}")


def _not_after(certificate: X509) -> datetime | None:
    raw = certificate.get_notAfter()
    if raw is None:
        return None
    try:
        return datetime.strptime(raw.decode("ascii"), "%Y%m%d%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


class _CheckingTLSOptions(ClientTLSOptions):
    """Twisted's client connection creator with a verify callback that records what it finds
    (and, strict, refuses); Twisted's own refuses on a name mismatch, Scrapy's only logs it."""

    def __init__(
        self,
        create: Callable[[TLSMemoryBIOProtocol], SSL.Connection],
        hostname: str,
        port: int,
        *,
        ledger: CertificateLedger,
        strict: bool,
    ) -> None:
        super().__init__(create, hostname)
        self._port = port
        self._ledger = ledger
        self._strict = strict

    def clientConnectionForTLS(self, tlsProtocol: TLSMemoryBIOProtocol) -> SSL.Connection:  # noqa: N802, N803 (Twisted's interface)
        connection = self._createConnection(tlsProtocol)
        if self._sendServerName:
            connection.set_tlsext_host_name(self._hostnameBytes)
        connection.set_verify(SSL.VERIFY_PEER, self._verifier())
        return connection

    def _verifier(self) -> Callable[[SSL.Connection, X509, int, int, int], bool]:
        host, port = self._hostnameASCII, self._port
        service = DNS_ID(host) if self._hostnameIsDnsName else IPAddress_ID(host)
        check = CertificateCheck()
        ledger, strict = self._ledger, self._strict
        leaf_seen = False

        def verify(connection: SSL.Connection, cert: X509, error: int, depth: int, ok: int) -> bool:
            nonlocal leaf_seen
            try:
                if not ok:
                    check.add(reason_for(error))
                if depth == 0 and not leaf_seen:
                    leaf_seen = True
                    check.not_after = _not_after(cert)
                    try:
                        verify_service_identity(extract_patterns(cert), [service], [])
                    except (CertificateError, VerificationError):
                        check.add(NAME_MISMATCH)
                    ledger.record(host, cert.digest("sha256"), check)
            except Exception:  # an exception inside OpenSSL's callback would be lost
                logger.exception("Internal error verifying the certificate of %s", host)
            if not strict:
                return True
            if check.problems:
                ledger.refuse(host, port, check)
                return False
            if depth == 0:
                ledger.accepted(host, port)
            return True

        return verify


@implementer(IPolicyForHTTPS)
class CheckingContextFactory:
    """Wraps Scrapy's context factory (``self._contextFactory`` of the HTTP/1.1 handler):
    URLCHECK_TLS ``check`` or ``strict`` verifies on a context shared by every connection; ``off``,
    or Scrapy's own DOWNLOAD_VERIFY_CERTIFICATES, leaves it to Scrapy's factory."""

    def __init__(self, scrapy_factory: Any, config: TLSConfig, ledger: CertificateLedger) -> None:
        self._inner = scrapy_factory
        self._config = config
        self.ledger = ledger
        self._options: _ScrapyCertificateOptions | None = None

    def _shared_options(self) -> _ScrapyCertificateOptions:
        if self._options is None:
            options = _ScrapyCertificateOptions(**self._inner._get_cert_options_kwargs())
            context = options.getContext()
            context.set_default_verify_paths()  # the system store (pyOpenSSL finds it)
            if self._config.ca_bundle is not None:
                context.load_verify_locations(str(self._config.ca_bundle))
            self._options = options
        return self._options

    def creatorForNetloc(self, hostname: bytes, port: int) -> Any:  # noqa: N802 (Twisted's interface)
        if self._config.mode == "off" or getattr(self._inner, "_verify_certificates", False):
            return self._inner.creatorForNetloc(hostname, port)
        return _CheckingTLSOptions(
            self._shared_options()._makeTLSConnection,
            hostname.decode("ascii"),
            port,
            ledger=self.ledger,
            strict=self._config.mode == "strict",
        )
