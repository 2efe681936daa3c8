"""BodyCapMiddleware on a real crawler (``get_crawler``, ``build_from_crawler``) with hand-built
requests and responses: downloads stop at the headers for bodyless types and at the cap
otherwise, without failing; gzip and deflate bodies are inflated up to the cap."""

from __future__ import annotations

import gzip
import zlib

import pytest
from scrapy import Request, Spider, signals
from scrapy.exceptions import StopDownload
from scrapy.http import Headers, HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from urlcheck.crawl import meta as m
from urlcheck.middlewares.bodycap import BodyCapMiddleware

CAP = 4096
URL = "http://127.0.0.2/page"


class _Spider(Spider):
    name = "bodycap"


@pytest.fixture
def crawler():
    crawler = get_crawler(_Spider, {"URLCHECK_BODY_MAX_BYTES": CAP})
    crawler.spider = crawler._create_spider()
    return crawler


@pytest.fixture
def mw(crawler) -> BodyCapMiddleware:
    return build_from_crawler(BodyCapMiddleware, crawler)


def stopped(crawler, signal: object, request: Request, **kwargs: object) -> StopDownload | None:
    """What the download handler sees: the StopDownload a handler of ``signal`` raised."""
    results = crawler.signals.send_catch_log(
        signal=signal, request=request, spider=crawler.spider, **kwargs
    )
    for _, result in results:
        if isinstance(result, Failure) and isinstance(result.value, StopDownload):
            return result.value
    return None


def test_the_cap_comes_from_the_setting(mw: BodyCapMiddleware) -> None:
    assert mw.max_bytes == CAP


@pytest.mark.parametrize(
    "content_type", [b"image/png", b"Application/PDF", b"video/mp4", b"application/x-tar"]
)
def test_a_bodyless_type_stops_at_the_headers_and_keeps_the_response(
    crawler, mw: BodyCapMiddleware, content_type: bytes
) -> None:
    headers = Headers({b"Content-Type": content_type})
    stop = stopped(crawler, signals.headers_received, Request(URL), headers=headers, body_length=9)
    assert stop is not None
    assert stop.fail is False  # the status still reaches the spider


@pytest.mark.parametrize("content_type", [b"text/html; charset=utf-8", b"", b"application/json"])
def test_a_page_that_may_hold_a_refresh_or_a_challenge_is_read(
    crawler, mw: BodyCapMiddleware, content_type: bytes
) -> None:
    headers = Headers({b"Content-Type": content_type} if content_type else {})
    assert (
        stopped(crawler, signals.headers_received, Request(URL), headers=headers, body_length=9)
        is None
    )


def test_the_body_is_read_up_to_the_cap_then_stopped(crawler, mw: BodyCapMiddleware) -> None:
    request = Request(URL)
    chunk = b"x" * 1000
    for _ in range(4):
        assert stopped(crawler, signals.bytes_received, request, data=chunk) is None
    assert request.meta[m.BODY_BYTES] == 4000
    stop = stopped(crawler, signals.bytes_received, request, data=chunk)
    assert stop is not None and stop.fail is False
    assert request.meta[m.BODY_BYTES] == 5000


def test_process_response_forgets_the_count(mw: BodyCapMiddleware) -> None:
    request = Request(URL, meta={m.BODY_BYTES: 1234})
    response = HtmlResponse(URL, body=b"<html></html>", request=request)
    assert mw.process_response(request, response) is response
    assert m.BODY_BYTES not in request.meta


@pytest.mark.parametrize(
    ("encoding", "pack"),
    [
        (b"gzip", gzip.compress),
        (b"x-gzip", gzip.compress),
        (b"deflate", zlib.compress),
        (b"deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers send
    ],
)
def test_a_compressed_body_is_inflated_up_to_the_cap(
    mw: BodyCapMiddleware, encoding: bytes, pack
) -> None:
    page = b"<html>" + b"a" * 100_000 + b"</html>"  # a bomb, as far as the cap goes
    request = Request(URL)
    headers = {b"Content-Encoding": encoding, b"Content-Type": b"text/html"}
    response = HtmlResponse(URL, body=pack(page), headers=headers, request=request)

    inflated = mw.process_response(request, response)

    assert inflated.body == page[:CAP]
    assert b"Content-Encoding" not in inflated.headers
    assert inflated.headers[b"Content-Type"] == b"text/html"


def test_a_truncated_gzip_body_gives_what_it_holds(mw: BodyCapMiddleware) -> None:
    page = b"<html>" + bytes(range(256)) * 8 + b"</html>"
    cut = gzip.compress(page)[:-20]  # the download was stopped mid-stream
    request = Request(URL)
    response = Response(URL, body=cut, headers={b"Content-Encoding": b"gzip"}, request=request)
    inflated = mw.process_response(request, response)
    assert page.startswith(inflated.body) and len(inflated.body) > 1000


@pytest.mark.parametrize(
    "headers",
    [
        {b"Content-Encoding": b"br"},
        {b"Content-Encoding": [b"gzip", b"gzip"]},  # twice: left to HttpCompressionMiddleware
        {b"Content-Encoding": b"gzip"},  # says gzip, is not
        {},
    ],
)
def test_anything_else_is_left_as_it_came(mw: BodyCapMiddleware, headers) -> None:
    request = Request(URL)
    response = Response(URL, body=b"plain text, not compressed", headers=headers, request=request)
    assert mw.process_response(request, response) is response
