"""Bodies are read only as far as the checks need: a 1 GB page or a gzip bomb costs nothing.

A download stops (``StopDownload(fail=False)``, so the status still reaches the spider) right
after the headers when the content type cannot hold a meta refresh or a challenge page, and
otherwise after ``URLCHECK_BODY_MAX_BYTES``. gzip/deflate bodies are inflated here, bounded by
the same cap, before Scrapy's HttpCompressionMiddleware (which inflates without a cap unless
DOWNLOAD_MAXSIZE is set, and fails on the truncated bodies we keep) ever sees them.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import StopDownload

from urlcheck.crawl import meta as m
from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response

_BODYLESS_TYPES = (
    b"image/",
    b"video/",
    b"audio/",
    b"font/",
    b"application/pdf",
    b"application/zip",
    b"application/octet-stream",
    b"application/x-",
)


def inflate(body: bytes, encoding: bytes, limit: int) -> bytes | None:
    """At most ``limit`` bytes of a gzip or deflate body, tolerating truncation; None when the
    body is not in that encoding after all."""
    # 47 = auto-detect gzip or zlib header; -15 = raw deflate, which some servers send.
    for wbits in (47, -15) if encoding == b"deflate" else (47,):
        try:
            return zlib.decompressobj(wbits).decompress(body, limit)
        except zlib.error:
            continue
    return None


class BodyCapMiddleware:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = cls(runtime(crawler).config.body_max_bytes)
        crawler.signals.connect(middleware._headers_received, signal=signals.headers_received)
        crawler.signals.connect(middleware._bytes_received, signal=signals.bytes_received)
        return middleware

    def _headers_received(self, headers: Headers, request: Request, **_: Any) -> None:
        content_type = (headers.get(b"Content-Type") or b"").lower()
        if content_type.startswith(_BODYLESS_TYPES):
            raise StopDownload(fail=False)

    def _bytes_received(self, data: bytes, request: Request, **_: Any) -> None:
        seen = request.meta.get(m.BODY_BYTES, 0) + len(data)
        request.meta[m.BODY_BYTES] = seen
        if seen >= self.max_bytes:
            raise StopDownload(fail=False)

    def process_response(self, request: Request, response: Response) -> Response:
        request.meta.pop(m.BODY_BYTES, None)
        encodings = response.headers.getlist(b"Content-Encoding")
        if len(encodings) != 1 or encodings[0].lower() not in (b"gzip", b"x-gzip", b"deflate"):
            return response
        body = inflate(response.body, encodings[0].lower(), self.max_bytes)
        if body is None:
            return response
        headers = response.headers.copy()
        del headers[b"Content-Encoding"]
        return response.replace(body=body, headers=headers)
