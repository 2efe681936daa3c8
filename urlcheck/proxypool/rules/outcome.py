"""How a request through a proxy ended, and what that says about the proxy."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["ErrorKind", "Outcome", "classify", "permanent_reason"]


class ErrorKind(StrEnum):
    """Why a request got no usable answer from the site."""

    CONNECT = "connect"  # the proxy could not reach the site (CONNECT refused, 502 from the proxy)
    TIMEOUT = "timeout"
    TLS = "tls"
    PROXY_AUTH = "proxy_auth"  # 407: permanent, the proxy goes dead
    PROXY_UNREACHABLE = "proxy_unreachable"  # the proxy itself refused, reset or did not answer
    PROXY_DNS = "proxy_dns"  # the proxy's own host name does not resolve: permanent, dead
    CONNECTION_LOST = "connection_lost"
    OTHER = "other"


# Bits of an outcome code, as windows store them.
FAIL = 1  # counts as a failure of the proxy on this site
SOFT = 2  # rate limited (429/503): a fraction of a failure, and only for the (proxy, site) pair
CAPTCHA = 4
BLOCK = 8
PROXY_FAULT = 16  # certainly the proxy's fault, whatever other proxies see on the site
PERMANENT = 32  # no point retrying this proxy: 407, or its host name does not resolve
CELL = 64  # set by the policy: a failure counted for the (proxy, site) pair only, not the proxy
DNS = 128  # with PERMANENT: the proxy's host name does not resolve (else: 407)
WINDOW_BITS = FAIL | SOFT | CAPTCHA | BLOCK

_RATE_LIMIT_STATUSES = frozenset({429, 503})
_PROXY_FAULTS = frozenset({ErrorKind.PROXY_UNREACHABLE, ErrorKind.PROXY_AUTH, ErrorKind.PROXY_DNS})
_PERMANENT = {
    ErrorKind.PROXY_AUTH: "proxy authentication failed (407)",
    ErrorKind.PROXY_DNS: "the proxy's host name does not resolve (DNS)",
}


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one request ended.

    Site answers such as 404, 410, 500 or a plain 403 are successes for the proxy: it did its job.
    A 429 or 503 (or ``rate_limited=True``) counts softly against the (proxy, site) pair only.
    ``captcha`` and ``block`` take ``True`` or a kind name (``"recaptcha"``, ``"cloudflare"``).
    """

    status: int | None = None
    latency: float | None = None  # seconds
    error: ErrorKind | None = None
    captcha: bool | str = False
    block: bool | str = False
    rate_limited: bool = False

    @property
    def ok(self) -> bool:
        return classify(self) & (FAIL | SOFT) == 0


def classify(outcome: Outcome) -> int:
    """The outcome's code: an OR of the bits above."""
    error = outcome.error
    status = outcome.status
    if error is None and status == 407:
        error = ErrorKind.PROXY_AUTH
    code = 0
    if error is not None:
        code = FAIL
        if error in _PROXY_FAULTS:
            code |= PROXY_FAULT
            if error in _PERMANENT:
                code |= PERMANENT
                if error is ErrorKind.PROXY_DNS:
                    code |= DNS
    if outcome.captcha:
        code |= FAIL | CAPTCHA
    if outcome.block:
        code |= FAIL | BLOCK
    if not code and (outcome.rate_limited or status in _RATE_LIMIT_STATUSES):
        code = SOFT
    return code


def permanent_reason(code: int) -> str:
    """Why an outcome with the ``PERMANENT`` bit kills its proxy at once."""
    return _PERMANENT[ErrorKind.PROXY_DNS if code & DNS else ErrorKind.PROXY_AUTH]
