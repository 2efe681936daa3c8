"""The response head parser (urlcheck.crawl.responsehead) on hand-written bytes: what it reads,
and what it refuses, with which error."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.error import ConnectionDone
from twisted.internet.protocol import Protocol
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.web._newclient import Request as TxRequest
from twisted.web.http_headers import Headers

from urlcheck.crawl.responsehead import (
    BROWSER_HEAD_LIMIT,
    BadResponseError,
    HeadTooLargeError,
    LocationTooLongError,
    client_factory,
    head_limit,
)


def answer_to(data: bytes, *, max_url_length: int = 65_536, chunk: int = 65_536, close=False):
    """Feeds ``data`` to a connection of the handler's pool, in chunks as a socket would (then
    closes it, with ``close``); returns the response or the error its request ended with."""
    factory = client_factory(max_url_length)(lambda protocol: None, "test")
    protocol = factory.buildProtocol(None)
    transport = StringTransport()
    protocol.makeConnection(transport)
    outcome: list[object] = []
    d = protocol.request(TxRequest(b"GET", b"/", Headers({b"Host": [b"a.test"]}), None))
    d.addBoth(outcome.append)
    for start in range(0, len(data), chunk):
        if outcome:
            break
        protocol.dataReceived(data[start : start + chunk])
    if close and not outcome:
        protocol.connectionLost(Failure(ConnectionDone()))
    assert outcome, "the response did not end"
    result = outcome[0]
    reasons = getattr(getattr(result, "value", None), "reasons", None)
    return reasons[0].value if reasons else result


def test_the_head_limit_is_chromiums_or_twice_the_url_limit() -> None:
    assert head_limit(65_536) == BROWSER_HEAD_LIMIT == 262_144
    assert head_limit(1_000_000) == 2_000_000


def test_a_location_over_twisteds_16_kib_line_is_read() -> None:
    location = b"/x?" + b"a" * 40_000
    response = answer_to(b"HTTP/1.1 301 Moved\r\nLocation: " + location + b"\r\n\r\n", chunk=4096)
    assert response.code == 301
    assert response.headers.getRawHeaders(b"Location") == [location]


def test_a_location_longer_than_the_head_ends_as_url_too_long_with_its_first_bytes() -> None:
    head = b"HTTP/1.1 302 Found\r\nX-A: b\r\nLocation: /" + b"\xc3\xa9" * 5_000_000 + b"\r\n\r\n"
    error = answer_to(head, max_url_length=100)
    assert isinstance(error, LocationTooLongError)
    assert error.status == 302 and error.size > BROWSER_HEAD_LIMIT - 100
    assert error.location == (b"/" + b"\xc3\xa9" * 200)[:400]  # 4 bytes a character kept


def test_a_folded_location_is_still_a_location() -> None:
    head = b"HTTP/1.1 301 Moved\r\nLocation: /a\r\n " + b"b" * 300_000 + b"\r\n\r\n"
    error = answer_to(head)
    assert isinstance(error, LocationTooLongError) and error.location.startswith(b"/a b")


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nX-Junk: " + b"a" * 10_000_000 + b"\r\n\r\n",
        # many lines, each short
        b"HTTP/1.1 200 OK\r\n" + b"X-Junk: aaaaaaaaaaaaaaaa\r\n" * 20_000 + b"\r\n",
    ],
    ids=["one 10 MB header", "20,000 headers"],
)
def test_a_head_over_the_limit_is_too_large(head: bytes) -> None:
    error = answer_to(head)
    assert isinstance(error, HeadTooLargeError)
    assert str(error) == (
        "the response headers are larger than 262,144 bytes: not read further "
        "(browsers refuse such an answer too)"
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b"HTTP/1.1 -301 Moved\r\n\r\n",
            "the server answered status '-301', which is no HTTP status (three digits, from 100)",
        ),
        (
            b"HTTP/1.1 2000 OK\r\n\r\n",
            "the server answered status '2000', which is no HTTP status (three digits, from 100)",
        ),
        (
            b"HTTP/1.1 099 Hm\r\n\r\n",
            "the server answered status '099', which is no HTTP status (three digits, from 100)",
        ),
        (b"HTTP/1.1\r\n\r\n", "the server's status line 'HTTP/1.1' has no status code"),
        (
            b"ICY 200 OK\r\n\r\n",
            "the server's answer does not begin with an HTTP status line: it begins "
            "'ICY 200 OK' (an HTTP/0.9 answer, or not HTTP at all)",
        ),
        (
            b"<html>" + b"x" * 100 + b"\n",
            "the server's answer does not begin with an HTTP status line: it begins "
            f"'<html>{'x' * 54}...' (an HTTP/0.9 answer, or not HTTP at all)",
        ),
    ],
)
def test_an_answer_without_an_http_status_is_a_bad_response(data: bytes, message: str) -> None:
    error = answer_to(data)
    assert isinstance(error, BadResponseError) and error.kind == "bad_response"
    assert str(error) == message


def test_a_short_answer_without_a_line_is_told_from_a_cut_status_line() -> None:
    error = answer_to(b"hello", close=True)
    assert isinstance(error, BadResponseError) and "it begins 'hello'" in str(error)
    # the beginning of a status line, then the close: a lost connection
    for start in (b"HT", b"HTTP/1.", b"HTTP/1.1 20"):
        assert isinstance(answer_to(start, close=True), ConnectionDone)


@pytest.mark.parametrize(
    "line", [b"HTTP/1.1 200 OK", b"HTTP/1.0 404", b"http/1.1 999 Denied", b"HTTP/1.1  301  Moved"]
)
def test_a_status_line_browsers_take_is_taken(line: bytes) -> None:
    response = answer_to(line + b"\r\nContent-Length: 0\r\n\r\n")
    assert response.code == int(line.split()[1])
    assert response.phrase in (b"", b"OK", b"Denied", b"Moved")


def test_a_body_on_a_kept_alive_connection_is_delivered_to_its_end() -> None:
    pooled: list[object] = []
    protocol = client_factory(65_536)(pooled.append, "test").buildProtocol(None)
    protocol.makeConnection(StringTransport())
    responses: list[Any] = []
    headers = Headers({b"Host": [b"a.test"]})
    protocol.request(TxRequest(b"GET", b"/", headers, None, persistent=True)).addBoth(
        responses.append
    )
    protocol.dataReceived(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
    received: list[object] = []

    class Body(Protocol):
        def dataReceived(self, data: bytes) -> None:
            received.append(data)

        def connectionLost(self, reason: Failure = None) -> None:
            received.append(type(reason.value).__name__)

    responses[0].deliverBody(Body())
    protocol.dataReceived(b"ok")
    assert received == [b"ok", "ResponseDone"]
    assert pooled == [protocol]  # back in the pool
