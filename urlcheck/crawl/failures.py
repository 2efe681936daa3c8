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
from twisted.web._newclient import RequestTransmissionFailed
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


# When a connection that broke did: what the failure Twisted wraps the reasons in says.
_WHEN: tuple[tuple[type[BaseException], str], ...] = (
    (ResponseNeverReceived, "before answering"),
    (ResponseFailed, "in the middle of its answer"),
    (RequestTransmissionFailed, "while the request was being sent"),
)


def _in_words(causes: list[BaseException]) -> str | None:
    """What happened to the connection, for a person: Twisted's failures print as a list of
    Python reprs (``[<twisted.python.failure.Failure ...>]``)."""
    if any(isinstance(cause, ResponseDataLossError) for cause in causes):
        return "the server closed the connection before the end of the body it announced"
    for cause in causes:
        for wrapper, when in _WHEN:
            if isinstance(cause, wrapper):
                return _broken(when, [reason.value for reason in cause.reasons])  # type: ignore[attr-defined]
    return None


def _broken(when: str, reasons: list[BaseException]) -> str:
    if any(isinstance(reason, txerror.ConnectionDone) for reason in reasons):
        return f"the server closed the connection {when}"
    if any(isinstance(reason, txerror.ConnectionLost) for reason in reasons):
        return f"the connection was cut {when} (reset, not closed)"
    details = "; ".join(_one_line(reason) for reason in reasons)
    return f"the connection failed {when}: {details}"


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _tls_words(causes: list[BaseException]) -> str:
    cause = next(cause for cause in causes if _is_tls(cause))
    # pyOpenSSL's Error holds [(library, function, reason), ...]: the reasons are the words
    args = cause.args[0] if len(cause.args) == 1 else None
    if isinstance(args, list) and args and all(isinstance(a, tuple) for a in args):
        return ", ".join(str(a[-1]) for a in args)
    return _one_line(cause)


def classify_exception(exc: BaseException) -> tuple[str, str]:
    """``(kind, message)`` for an exception that ended a download."""
    if isinstance(exc, AnswerError):
        return exc.kind, str(exc)
    causes = _causes(exc)
    if any(_is_tls(cause) for cause in causes):
        return "tls", f"TLS handshake or certificate failed: {_tls_words(causes)}"
    message = _in_words(causes) or str(exc) or type(exc).__name__
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
