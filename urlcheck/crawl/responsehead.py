"""How much of a response head urlcheck reads, and what it makes of a head it will not take.

Twisted's HTTP client reads a head line of up to 16 KiB and drops the connection on a longer
one, which Scrapy reports as a lost connection (and retries): a Location of 20,000 characters,
which browsers follow, never reached the chain rules. This parser (Scrapy's lenient one, which
skips header lines without a colon, as browsers do) reads a head of up to :func:`head_limit`
bytes, 256 KiB as Chromium (``ERR_RESPONSE_HEADERS_TOO_BIG``) or twice
``URLCHECK_MAX_URL_LENGTH`` when that is more, in lines of any length within it. A head that
goes past it ends the hop with an :class:`AnswerError` naming what the server did:

* a Location that does not fit: ``url_too_long``, its status and its first bytes kept;
* anything else: ``too_large``.

It also refuses, as ``bad_response``, an answer that does not begin with an HTTP status line
(an HTTP/0.9 answer, or no HTTP at all: Twisted's ``ParseError`` read as a lost connection) and
a status code that is not three digits (``-301``, 20 digits: Twisted took any integer).

An :class:`AnswerError` is the server's answer, not a network failure: the download handler
raises it as it is, so Scrapy's retry (which retries lost connections) leaves it alone.

Scrapy has no public hook for the parser; like Scrapy's own lenient protocol, the protocol here
swaps the class of the parser Twisted's ``HTTP11ClientProtocol.request`` creates. Every access
to those private classes is in this module.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from scrapy.core.downloader.handlers.http11 import (
    _LenientHTTP11ClientFactory,
    _LenientHTTP11ClientProtocol,
    _LenientHTTPClientParser,
)
from twisted.python.failure import Failure
from twisted.web._newclient import HEADER, STATUS

from urlcheck.check.printable import printable

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred
    from twisted.internet.interfaces import IAddress
    from twisted.web._newclient import Request as TxRequest
    from twisted.web.iweb import IResponse

BROWSER_HEAD_LIMIT = 256 * 1024  # Chromium's limit on a response's headers
_SHOWN = 60  # characters of a refused status line shown in the message
# RFC 9112 4: HTTP-version SP status-code SP [reason-phrase]; status-code = 3DIGIT (browsers take
# 600-999 too: LinkedIn answers 999). The name is case-insensitive (RFC 9112 2.3 says it is
# not; browsers take "http/1.1" all the same).
_VERSION = re.compile(rb"HTTP/[0-9]+\.[0-9]+", re.IGNORECASE)
_VERSION_START = re.compile(rb"H|HT|HTT|HTTP|HTTP/[0-9]*|HTTP/[0-9]+\.[0-9]*", re.IGNORECASE)
_STATUS_CODE = re.compile(rb"[1-9][0-9][0-9]")


def head_limit(max_url_length: int) -> int:
    """The bytes of a response head read: enough for any Location within the URL limit."""
    return max(BROWSER_HEAD_LIMIT, 2 * max_url_length)


class AnswerError(Exception):
    """The server answered, with something urlcheck does not take as a response. ``kind`` is
    the row's ``error``, the message its ``error_message``."""

    kind: ClassVar[str]


class HeadTooLargeError(AnswerError):
    kind = "too_large"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the response headers are larger than {limit:,} bytes: not read further "
            "(browsers refuse such an answer too)"
        )


class LocationTooLongError(AnswerError):
    """A Location longer than the head may be: the hop's ``status`` and the Location's first
    bytes (``location``, of ``size`` read) are kept for the chain."""

    kind = "url_too_long"

    def __init__(self, status: int, location: bytes, size: int) -> None:
        super().__init__(f"a Location of at least {size:,} bytes: not requested")
        self.status = status
        self.location = location
        self.size = size


class BadResponseError(AnswerError):
    kind = "bad_response"


def _shown(data: bytes) -> str:
    """Bytes the server sent, as a person reads them in a message: control characters escaped,
    and cut to the first few characters."""
    text = printable(data.decode("utf-8", "replace"))
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}..."


def no_status_line(start: bytes) -> BadResponseError:
    return BadResponseError(
        f"the server's answer does not begin with an HTTP status line: it begins "
        f"'{_shown(start)}' (an HTTP/0.9 answer, or not HTTP at all)"
    )


def read_status_line(line: bytes) -> bytes:
    """The status line as Twisted reads it (``HTTP/1.1 301 Moved``, spaces between its parts
    made single, as browsers read them); BadResponseError when it is no HTTP status line."""
    version, _, rest = line.partition(b" ")
    if not _VERSION.fullmatch(version):
        raise no_status_line(line)
    code, _, phrase = rest.lstrip(b" ").partition(b" ")
    if not code:
        raise BadResponseError(f"the server's status line '{_shown(line)}' has no status code")
    if not _STATUS_CODE.fullmatch(code):
        raise BadResponseError(
            f"the server answered status '{_shown(code)}', which is no HTTP status "
            "(three digits, from 100)"
        )
    return b" ".join((version, code, phrase.lstrip(b" ")))


class BoundedHTTPClientParser(_LenientHTTPClientParser):
    """The lenient parser with a limit on the whole head instead of on each line."""

    head_limit: int
    location_keep: int  # bytes of an over-long Location kept
    _head_bytes: int

    def bound(self, limit: int, location_keep: int) -> None:
        self.head_limit = self.MAX_LENGTH = limit
        self.location_keep = location_keep
        self._head_bytes = 0

    def lineReceived(self, line: bytes) -> None:  # noqa: N802 (Twisted's interface)
        self._head_bytes += len(line) + 1
        if self._head_bytes > self.head_limit:
            self._refuse(line)
        super().lineReceived(line)

    def lineLengthExceeded(self, line: bytes) -> None:  # noqa: N802 (Twisted's interface)
        self._refuse(line.split(b"\n", 1)[0])

    def statusReceived(self, status: bytes) -> None:  # noqa: N802 (Twisted's interface)
        super().statusReceived(read_status_line(status))  # type: ignore[no-untyped-call]

    def connectionLost(self, reason: Failure | None = None) -> None:  # noqa: N802
        # A first line cut short by the close is a lost connection, unless it cannot become a
        # status line (a short HTTP/0.9 answer: "hello" and the close).
        start = self._buffer.lstrip()
        # (Twisted passes a Failure, or on a response's end a bare ConnectionDone.)
        closed = not isinstance(getattr(reason, "value", reason), AnswerError)
        if closed and self.state == STATUS and start and not _could_begin_status(start):
            reason = Failure(no_status_line(start))  # type: ignore[no-untyped-call]
        super().connectionLost(reason)

    def _refuse(self, line: bytes) -> NoReturn:
        """Ends the response (HTTP11ClientProtocol gives up on the connection with this)."""
        if self.state == STATUS:
            read_status_line(line)  # raises when it is no status line at all
            raise HeadTooLargeError(self.head_limit)
        if self.state == HEADER:
            partial: list[bytes] = self._partialHeader or []
            folded = line[:1] in (b" ", b"\t") and partial
            header = b"".join([*partial, line]) if folded else line
            name, _, value = header.partition(b":")
            if name.strip().lower() == b"location":
                value = value.strip()
                raise LocationTooLongError(
                    self.response.code, value[: self.location_keep], len(value)
                )
        raise HeadTooLargeError(self.head_limit)


def _could_begin_status(start: bytes) -> bool:
    """Whether ``start``, the first bytes of an answer, can begin a status line."""
    version, space, _ = start.partition(b" ")
    if space:
        return bool(_VERSION.fullmatch(version))
    return bool(_VERSION_START.fullmatch(version))


class BoundedHTTP11ClientProtocol(_LenientHTTP11ClientProtocol):
    head_limit: int = BROWSER_HEAD_LIMIT
    location_keep: int = BROWSER_HEAD_LIMIT

    def request(self, request: TxRequest) -> Deferred[IResponse]:
        d = super().request(request)
        parser: Any = self._parser  # None when the request was refused (RequestNotSent)
        if parser is not None:
            parser.__class__ = BoundedHTTPClientParser
            parser.bound(self.head_limit, self.location_keep)
        return d


def client_factory(max_url_length: int) -> type[_LenientHTTP11ClientFactory]:
    """``HTTPConnectionPool._factory`` for connections whose parser reads heads up to
    :func:`head_limit`, keeping up to 4 bytes a character of an over-long Location."""
    limit = head_limit(max_url_length)
    keep = 4 * max_url_length

    class Protocol(BoundedHTTP11ClientProtocol):
        head_limit = limit
        location_keep = keep

    class Factory(_LenientHTTP11ClientFactory):
        def buildProtocol(self, addr: IAddress | None) -> Protocol:  # noqa: N802
            return Protocol(self._quiescentCallback)  # type: ignore[no-untyped-call]

    return Factory
