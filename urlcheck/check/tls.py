"""Certificates as a browser sees them: what an https hop's verification found, as hop warnings.

The crawl verifies each https connection's chain against the system trust store (plus
``URLCHECK_CA_BUNDLE``), the host name and the dates (urlcheck.crawl.tlscheck); this module turns
what it found into the words results use, without Scrapy or OpenSSL:

* ``tls_self_signed``, ``tls_expired``, ``tls_name_mismatch``, ``tls_unknown_ca`` (and
  ``tls_invalid`` for any other verification error): a browser shows an error page. Each is a hop
  warning, and makes the row's finding ``tls_certificate_invalid``, an audit check
  (urlcheck.check.audit, ``URLCHECK_CHECK_TLS_CERTIFICATE_INVALID``): by default it fails the
  verdict.
* ``tls_expiring_soon``: a valid certificate that expires within `EXPIRING_SOON` (14 days), a
  warning only.

``URLCHECK_TLS``: ``check`` (the default) records and follows; ``strict`` refuses the connection
(the row ends ``error: "tls"`` with the reason, not followed); ``off`` verifies nothing (the
behaviour before issue 24).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

__all__ = [
    "CERTIFICATE_INVALID",
    "EXPIRING_SOON",
    "TLS_FAILURES",
    "TLS_MODES",
    "CertificateCheck",
    "TLSConfig",
    "TLSMode",
    "hop_tls",
    "reason_for",
    "tls_invalid",
]

TLSMode = Literal["check", "strict", "off"]
TLS_MODES: tuple[TLSMode, ...] = ("check", "strict", "off")

SELF_SIGNED = "tls_self_signed"
EXPIRED = "tls_expired"
NAME_MISMATCH = "tls_name_mismatch"
UNKNOWN_CA = "tls_unknown_ca"
INVALID = "tls_invalid"
EXPIRING = "tls_expiring_soon"
# What a browser refuses: each makes the finding CERTIFICATE_INVALID. Expiring soon only warns.
TLS_FAILURES = frozenset({SELF_SIGNED, EXPIRED, NAME_MISMATCH, UNKNOWN_CA, INVALID})

# The row's finding when a hop has one of TLS_FAILURES: the audit check of that name places it.
CERTIFICATE_INVALID = "tls_certificate_invalid"

EXPIRING_SOON = timedelta(days=14)

# OpenSSL's X509_V_ERR_* codes (x509_vfy.h), stable across versions.
_REASONS = {
    18: SELF_SIGNED,  # DEPTH_ZERO_SELF_SIGNED_CERT
    19: SELF_SIGNED,  # SELF_SIGNED_CERT_IN_CHAIN
    9: EXPIRED,  # CERT_NOT_YET_VALID: outside its dates, as browsers say
    10: EXPIRED,  # CERT_HAS_EXPIRED
    13: EXPIRED,  # ERROR_IN_CERT_NOT_BEFORE_FIELD
    14: EXPIRED,  # ERROR_IN_CERT_NOT_AFTER_FIELD
    2: UNKNOWN_CA,  # UNABLE_TO_GET_ISSUER_CERT
    20: UNKNOWN_CA,  # UNABLE_TO_GET_ISSUER_CERT_LOCALLY
    21: UNKNOWN_CA,  # UNABLE_TO_VERIFY_LEAF_SIGNATURE
    27: UNKNOWN_CA,  # CERT_UNTRUSTED
    62: NAME_MISMATCH,  # HOSTNAME_MISMATCH
    64: NAME_MISMATCH,  # IP_ADDRESS_MISMATCH
}


def reason_for(openssl_error: int) -> str:
    """The result's word for an OpenSSL certificate verification error."""
    return _REASONS.get(openssl_error, INVALID)


@dataclass(frozen=True, slots=True)
class TLSConfig:
    """Settings URLCHECK_TLS and URLCHECK_CA_BUNDLE, parsed."""

    mode: TLSMode = "check"
    ca_bundle: Path | None = None  # PEM certificates trusted besides the system's (private CAs)


@dataclass(slots=True)
class CertificateCheck:
    """What one connection's verification found: the problems, in the order met, and the leaf
    certificate's expiry (UTC)."""

    problems: list[str] = field(default_factory=list)
    not_after: datetime | None = None

    def add(self, problem: str) -> None:
        if problem not in self.problems:
            self.problems.append(problem)


def hop_tls(check: CertificateCheck, now: datetime) -> tuple[list[str], str | None]:
    """The hop's TLS warnings and its ``cert_expires`` (ISO 8601, UTC, ``Z``)."""
    warnings = list(check.problems)
    expires = check.not_after
    if expires is None:
        return warnings, None
    if not warnings and expires - now < EXPIRING_SOON:
        warnings.append(EXPIRING)
    return warnings, expires.astimezone(UTC).isoformat().replace("+00:00", "Z")


def tls_invalid(warnings: Iterable[str]) -> bool:
    """Whether a hop's warnings say a browser would refuse its certificate."""
    return any(w in TLS_FAILURES for w in warnings)
