"""Realistic captcha, challenge and block pages, as anti-bot vendors serve them.

One place for the pages that `urlcheck.check.detection` must recognise: the demo site answers them
(``/captcha/<name>``, ``/by-client``) and tests/check/test_detection.py checks each one. The
bodies are files, ``data/pages/<name>.html`` (open one in a browser); this module says how each is
served.
They are shortened copies of the real pages' structure: the titles, element ids, script sources
and headers that identify them are the real ones; ids, keys, rays and addresses are made up
(addresses from the 203.0.113.0/24 documentation range).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from typing import Literal

__all__ = ["DOWN_PAGES", "NORMAL_PAGE", "PAGES", "DemoPage", "down_page"]

HTML = "text/html; charset=utf-8"
_BODIES = files("urlcheck.demo") / "data" / "pages"


@dataclass(frozen=True, slots=True)
class DemoPage:
    """A response to serve, and what `urlcheck.check.detection.detect` should say about it."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    kind: Literal["captcha", "block"]
    vendor: str | None
    signature: str  # the detection signature that recognises it

    def header_map(self) -> dict[str, str]:
        """The headers as `detect` takes them: lower-case names, repeated ones joined by newline."""
        joined: dict[str, str] = {}
        for name, value in self.headers:
            key = name.lower()
            joined[key] = f"{joined[key]}\n{value}" if key in joined else value
        return joined


def _page(
    name: str,
    status: int,
    kind: Literal["captcha", "block"],
    vendor: str | None,
    signature: str,
    *headers: tuple[str, str],
) -> tuple[str, DemoPage]:
    if not any(header.lower() == "content-type" for header, _ in headers):
        headers = (("Content-Type", HTML), *headers)
    body = (_BODIES / f"{name}.html").read_bytes()
    return name, DemoPage(status, headers, body, kind, vendor, signature)


_CLOUDFLARE = (("Server", "cloudflare"), ("CF-RAY", "8a1b2c3d4e5f6789-FRA"))
_DATADOME = (
    ("X-DataDome", "protected"),
    ("X-DD-B", "1"),
    (
        "Set-Cookie",
        "datadome=MadeUpDataDomeCookieValue0000; Max-Age=31536000; Domain=.example.com; Path=/; "
        "Secure; SameSite=Lax",
    ),
)

PAGES: dict[str, DemoPage] = dict(
    [
        _page(
            "cloudflare",
            403,
            "captcha",
            "cloudflare",
            "cloudflare-challenge",
            *_CLOUDFLARE,
            ("cf-mitigated", "challenge"),
            ("Cache-Control", "private, max-age=0, no-store, no-cache, must-revalidate"),
            ("Cross-Origin-Opener-Policy", "same-origin"),
            ("X-Frame-Options", "SAMEORIGIN"),
        ),
        _page(
            "ddos-guard",
            403,
            "captcha",
            "ddos-guard",
            "ddos-guard",
            ("Server", "ddos-guard"),
        ),
        _page("turnstile", 200, "captcha", "cloudflare", "turnstile"),
        _page("recaptcha", 200, "captcha", "google", "recaptcha"),
        _page("hcaptcha", 403, "captcha", "hcaptcha", "hcaptcha"),
        _page(
            "datadome",
            403,
            "captcha",
            "datadome",
            "datadome",
            *_DATADOME,
        ),
        _page(
            "datadome-banned",
            403,
            "block",
            "datadome",
            "datadome-banned",
            *_DATADOME,
        ),
        _page("perimeterx", 403, "captcha", "perimeterx", "perimeterx"),
        _page(
            "aws-waf",
            405,
            "captcha",
            "aws",
            "aws-waf-captcha",
            ("x-amzn-waf-action", "captcha"),
            ("Cache-Control", "no-store, max-age=0"),
        ),
        _page("google-sorry", 429, "captcha", "google", "google-sorry"),
        _page("human-check", 200, "captcha", None, "human-check"),
        _page(
            "akamai",
            403,
            "block",
            "akamai",
            "akamai",
            ("Content-Type", "text/html"),
            ("Server", "AkamaiGHost"),
            ("Mime-Version", "1.0"),
            ("Expires", "Wed, 01 May 2024 10:00:00 GMT"),
        ),
        _page(
            "cloudflare-1020",
            403,
            "block",
            "cloudflare",
            "cloudflare-block",
            *_CLOUDFLARE,
        ),
        _page(
            "cloudflare-block",
            403,
            "block",
            "cloudflare",
            "cloudflare-block",
            *_CLOUDFLARE,
        ),
        _page(
            "imperva",
            403,
            "block",
            "imperva",
            "imperva",
            ("X-CDN", "Imperva"),
            (
                "X-Iinfo",
                "5-12345678-0 0NNN RT(1714557600000 12) q(0 -1 -1 0) r(0 -1) B12(4,315,0) U18",
            ),
        ),
        _page(
            "sucuri",
            403,
            "block",
            "sucuri",
            "sucuri",
            ("Server", "Sucuri/Cloudproxy"),
            ("X-Sucuri-ID", "11005"),
        ),
        _page(
            "cloudfront",
            403,
            "block",
            "aws",
            "cloudfront-block",
            ("Content-Type", "text/html"),
            ("Server", "CloudFront"),
            ("X-Cache", "Error from cloudfront"),
            ("X-Amz-Cf-Pop", "FRA56-P1"),
            ("X-Amz-Cf-Id", "MadeUpRequestId0000000000000000000000000000000000000=="),
        ),
        _page("wordfence", 503, "block", "wordfence", "wordfence"),
        _page("block403", 403, "block", None, "block-page"),
    ]
)
"""Every challenge page by the name the demo site serves it under (``/captcha/<name>``)."""

NORMAL_PAGE = (_BODIES / "normal.html").read_bytes()
"""A normal page of a protected shop: it carries Cloudflare's passive bot script and a reCAPTCHA v3
newsletter form, as many real pages do, and is not a challenge."""

DOWN_PAGES: dict[int, bytes] = {
    502: b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n",
    503: b"<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
    b"<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n"
    b"<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
}
"""nginx's own error pages, as a site that is down for everyone answers."""


def down_page(status: int) -> bytes:
    """nginx's page for `status` (a generic one for codes nginx has no page for here)."""
    if status in DOWN_PAGES:
        return DOWN_PAGES[status]
    return (
        f"<html>\r\n<head><title>{status} Error</title></head>\r\n<body>\r\n"
        f"<center><h1>{status} Error</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n"
    ).encode()
