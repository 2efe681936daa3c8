"""Names for the ways a hop can fail without a response: dns, connect, timeout, tls,
too_large, connection_lost, blocked_address, host_unavailable, robots_disallowed,
session_lost, ignored (and ``network`` for anything else), each with a message; and for an
answer urlcheck does not take as a response (:mod:`urlcheck.crawl.responsehead`), its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
    UnsupportedURLSchemeError,
)
from twisted.internet import error as txerror
from twisted.web.client import ResponseFailed, ResponseNeverReceived

from urlcheck.check.addressguard import BlockedAddressError
from urlcheck.crawl.responsehead import AnswerError
from urlcheck.politeness.circuit import HostUnavailableError

if TYPE_CHECKING:
    from twisted.python.failure import Failure


class ProxySessionLostError(IgnoreRequest):
    """The request's sticky proxy session ended (its proxy left the pool, or is benched for
    the host) and ``URLCHECK_PROXY_SESSION_LOSS`` is ``end``: it is not sent from another
    address. The row's error is ``session_lost``."""


_BY_TYPE: tuple[tuple[tuple[type[BaseException], ...], str], ...] = (
    ((BlockedAddressError,), "blocked_address"),
    ((ProxySessionLostError,), "session_lost"),
    ((HostUnavailableError,), "host_unavailable"),
    ((CannotResolveHostError, txerror.DNSLookupError), "dns"),
    ((DownloadTimeoutError, txerror.TimeoutError, txerror.TCPTimedOutError), "timeout"),
    (
        (
            DownloadConnectionRefusedError,
            txerror.ConnectionRefusedError,
            txerror.ConnectError,
            txerror.NoRouteError,
        ),
        "connect",
    ),
    ((ResponseDataLossError, txerror.ConnectionLost, txerror.ConnectionDone), "connection_lost"),
    ((UnsupportedURLSchemeError,), "unsupported_scheme"),
)


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception, what it wraps (``from``), and Twisted's ResponseFailed reasons."""
    found: list[BaseException] = []
    pending = [exc]
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found.append(current)
        if current.__cause__ is not None:
            pending.append(current.__cause__)
        if isinstance(current, (ResponseFailed, ResponseNeverReceived)):
            pending.extend(reason.value for reason in current.reasons)
    return found


def _is_tls(exc: BaseException) -> bool:
    module = type(exc).__module__
    return module.startswith(("OpenSSL", "ssl", "service_identity")) or "SSL" in type(exc).__name__


def classify_exception(exc: BaseException) -> tuple[str, str]:
    """``(kind, message)`` for an exception that ended a download."""
    if isinstance(exc, AnswerError):
        return exc.kind, str(exc)
    causes = _causes(exc)
    message = str(exc) or type(exc).__name__
    if any(_is_tls(cause) for cause in causes):
        return "tls", f"TLS handshake or certificate failed: {message}"
    for cause in causes:
        for types, kind in _BY_TYPE:
            if isinstance(cause, types):
                return kind, message
    if isinstance(exc, (DownloadCancelledError, IgnoreRequest)) and "size" in message:
        return "too_large", message
    if isinstance(exc, IgnoreRequest):  # a component refused the request: say which, if known
        if "robots.txt" in message:
            return "robots_disallowed", message
        return "ignored", message
    if isinstance(exc, (DownloadFailedError, ResponseFailed, ResponseNeverReceived)):
        return "connection_lost", message
    return "network", f"{type(exc).__name__}: {message}"


def classify_failure(failure: Failure) -> tuple[str, str]:
    assert failure.value is not None
    return classify_exception(failure.value)
