"""Sends what a site asks of its visitors: the headers, cookies and basic auth that
``URLCHECK_HEADERS``, ``URLCHECK_COOKIES`` and ``URLCHECK_AUTH`` name for the request's host
(:mod:`urlcheck.config.access`). Off (``NotConfigured``) when none is set.

Each hop of a chain is a request of its own, judged by its own URL: a redirect to another host
carries none of the first host's credentials. Placed after Scrapy's CookiesMiddleware (700), so
with ``COOKIES_ENABLED`` the configured cookies are added to the jar's, and after its
HttpAuthMiddleware (300), whose own ``Authorization`` is kept. Idempotent: a retried copy of a
request is given the same values again, not twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from scrapy.exceptions import NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from urlcheck.crawl.runtime import runtime

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from urlcheck.config.access import SiteAccess

_DEFAULT_PORTS = {"http": 80, "https": 443}


class SiteAccessMiddleware:
    def __init__(self, access: SiteAccess) -> None:
        self.access = access

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        access = runtime(crawler).config.access
        if not access.enabled:
            raise NotConfigured  # a message would be a warning on every run
        return cls(access)

    def process_request(self, request: Request) -> None:
        parts = urlparse_cached(request)
        scheme = parts.scheme.lower()
        port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
        extras = self.access.for_request(scheme, (parts.hostname or "").lower(), port)
        for name, value in extras.headers:
            request.headers[name] = value
        if extras.cookies:
            sent = (request.headers.get(b"Cookie") or b"").decode("latin-1")
            pairs = [p.strip() for p in sent.split(";") if p.strip()]
            have = {p.partition("=")[0] for p in pairs}
            pairs += [f"{name}={value}" for name, value in extras.cookies if name not in have]
            request.headers[b"Cookie"] = "; ".join(pairs)
        if extras.authorization is not None and b"Authorization" not in request.headers:
            request.headers[b"Authorization"] = extras.authorization
