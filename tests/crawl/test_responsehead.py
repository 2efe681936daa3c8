"""The response head parser (urlcheck.crawl.responsehead) on hand-written bytes: what it reads,
and what it refuses, with which error."""

from __future__ import annotations

import pytest
from twisted.internet.testing import StringTransport
from twisted.web._newclient import Request as TxRequest
from twisted.web.http_headers import Headers

from urlcheck.crawl.responsehead import (
    BROWSER_HEAD_LIMIT,
    HeadTooLargeError,
    LocationTooLongError,
    client_factory,
    head_limit,
)


def answer_to(data: bytes, *, max_url_length: int = 65_536, chunk: int = 65_536):
    """Feeds ``data`` to a connection of the handler's pool, in chunks as a socket would;
    returns the response or the error its request ended with."""
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
