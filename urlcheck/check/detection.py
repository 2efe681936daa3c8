"""Is a response a captcha, a block page, or the site's own answer? Recognised by vendor signatures.

``detect(status, headers, body, url)`` runs the signatures of `SIGNATURES` in order and returns the
first match as a `Detection`. Each signature is a small function whose docstring names the marker
of the real page it recognises; docs/detection.md lists them all.

A signature that is only a widget (reCAPTCHA, hCaptcha, Turnstile) needs corroboration, because
normal pages embed those widgets in login and contact forms: a status that challenges are sent
with (202, 401, 403, 405, 429, 503), or a title or heading that speaks of a check. Generic phrases
("verify you are human") need the page to show them prominently or to be short, so an article
that quotes them is not a captcha. A 403 without a block marker is the site's own answer about
the page, not a block.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "NOT_DETECTED",
    "SCAN_BYTES",
    "SIGNATURES",
    "Detection",
    "ResponseView",
    "Signature",
    "detect",
    "header_map",
    "vendor_of",
]

Kind = Literal["captcha", "block"]

SCAN_BYTES = 32 * 1024
"""Only the first 32 KiB of a body are searched: challenge and block pages are small (most under
10 KB) and their markers sit in the head or the first screen. A search costs about 0.4 us per KiB
per marker, so the window bounds the cost on large normal pages."""

SHORT_PAGE = 16 * 1024
"""Interstitial pages are a few KB; articles and shop pages are far larger. A generic phrase on a
page shorter than this counts even when it is not in a title or heading."""


@dataclass(frozen=True, slots=True)
class Detection:
    """What a response says about the client that asked: a captcha, a block, or nothing."""

    kind: Kind | None
    vendor: str | None = None  # e.g. "cloudflare"; None for generic pages
    signature: str | None = None  # the name of the signature that matched

    def __bool__(self) -> bool:
        return self.kind is not None


NOT_DETECTED = Detection(None)


@dataclass(slots=True)
class ResponseView:
    """A response as the signatures see it: lower-cased, the body cut to `SCAN_BYTES`."""

    status: int
    headers: Mapping[str, str]  # lower-case names
    text: bytes  # the first SCAN_BYTES of the body, ASCII-lower-cased
    size: int  # length of the body as given
    url: str  # lower-cased
    _prominent: bytes | None = field(default=None, repr=False)
    _words: dict[bytes, bool] = field(default_factory=dict, repr=False)

    def has(self, *markers: bytes) -> bool:
        return any(marker in self.text for marker in markers)

    def word(self, word: bytes) -> bool:
        """`has(word)`, remembered: a part common to several markers, searched once to skip them."""
        found = self._words.get(word)
        if found is None:
            found = self._words[word] = word in self.text
        return found

    def header(self, name: str) -> str:
        return self.headers.get(name, "").strip().lower()

    @property
    def prominent(self) -> bytes:
        """The title and the h1-h4 headings (with any markup inside them)."""
        if self._prominent is None:
            title = _TITLE.search(self.text)
            parts = [title.group(1)] if title else []
            parts += [m.group(1) for m in itertools.islice(_HEADING.finditer(self.text), 12)]
            self._prominent = b"\n".join(parts)
        return self._prominent

    def corroborated(self) -> bool:
        """A status that challenges are sent with, or a title or heading that speaks of a check."""
        if self.status in _CHALLENGE_STATUSES:
            return True
        prominent = self.prominent
        return any(cue in prominent for cue in _CHECK_CUES)

    def shown(self, *phrases: bytes) -> bool:
        """A phrase in the title or a heading, or anywhere on a short page."""
        if self.size < SHORT_PAGE:
            return self.has(*phrases)
        prominent = self.prominent
        return any(phrase in prominent for phrase in phrases)


# Not 404, 410 or 5xx pages: sites put their page template, widgets included, on those too.
_CHALLENGE_STATUSES = frozenset({202, 401, 403, 405, 429, 503})

# Bounded repetitions only: a page cannot make these backtrack for long.
_TITLE = re.compile(rb"<title[^>]{0,200}>([^<]{0,500})")
_HEADING = re.compile(rb"<h[1-4][^>]{0,300}>(.{0,500}?)</h[1-4]", re.DOTALL)
_CHECK_CUES = (
    b"captcha",
    b"robot",
    b"human",
    b"verif",
    b"security check",
    b"one more step",
    b"are you a",
    b"challenge",
    b"unusual traffic",
    b"access denied",
    b"blocked",
    b"just a moment",
    b"attention required",
)


@dataclass(frozen=True, slots=True)
class Signature:
    name: str
    kind: Kind
    vendor: str | None
    test: Callable[[ResponseView], bool]

    @property
    def doc(self) -> str:
        return " ".join((self.test.__doc__ or "").split())


SIGNATURES: list[Signature] = []
"""Tried in this order; the first that matches decides. Vendors' own pages come before the widgets
and the generic phrases, so that a page is attributed to the most specific source."""


def _signature(
    kind: Kind, vendor: str | None
) -> Callable[[Callable[[ResponseView], bool]], Callable[[ResponseView], bool]]:
    def register(test: Callable[[ResponseView], bool]) -> Callable[[ResponseView], bool]:
        SIGNATURES.append(Signature(test.__name__.replace("_", "-"), kind, vendor, test))
        return test

    return register


# --- vendors' challenge and captcha pages -------------------------------------------------------

_CF_ORCHESTRATE = re.compile(rb"/cdn-cgi/challenge-platform/(?:h/[a-z]/)?orchestrate/")


@_signature("captcha", "cloudflare")
def cloudflare_challenge(page: ResponseView) -> bool:
    """Cloudflare's managed / JS challenge interstitial: the ``cf-mitigated: challenge`` header
    (sent since 2023), the ``<title>Just a moment...</title>``, the inline ``window._cf_chl_opt``
    object, or the ``/cdn-cgi/challenge-platform/h/<x>/orchestrate/`` script. Not the
    ``/cdn-cgi/challenge-platform/scripts/jsd/main.js`` script, which Cloudflare adds to normal
    pages. The legacy "I'm Under Attack" page: its ``jschl_vc`` and ``jschl-answer`` fields."""
    if page.header("cf-mitigated") == "challenge":
        return True
    if page.has(b"<title>just a moment...</title>", b"_cf_chl_opt", b"jschl"):
        return True
    return page.word(b"/cdn-cgi/challenge-platform/") and bool(_CF_ORCHESTRATE.search(page.text))


@_signature("captcha", "ddos-guard")
def ddos_guard(page: ResponseView) -> bool:
    """DDoS-Guard's browser check interstitial: ``<title>DDoS-Guard</title>`` and its
    ``/.well-known/ddos-guard/`` check scripts."""
    return page.word(b"ddos-guard") and page.has(
        b"<title>ddos-guard</title>", b"/.well-known/ddos-guard/"
    )


@_signature("block", "datadome")
def datadome_banned(page: ResponseView) -> bool:
    """DataDome's page for a banned client: the inline ``var dd={...}`` object of the
    ``captcha-delivery.com`` page with ``'t':'bv'`` (blocked visitor; ``'t':'fe'`` is a captcha
    that can be solved)."""
    return (
        page.word(b"captcha")
        and page.word(b"captcha-delivery.com")
        and page.has(b"'t':'bv'", b'"t":"bv"', b"t=bv")
    )


@_signature("captcha", "datadome")
def datadome(page: ResponseView) -> bool:
    """DataDome's captcha / device check: the ``geo.captcha-delivery.com`` iframe or
    ``ct.captcha-delivery.com/c.js`` script, or a 403 carrying DataDome's ``x-datadome`` header or
    ``datadome`` cookie (both are also on the normal pages of protected sites, hence the 403)."""
    if page.word(b"captcha") and page.word(b"captcha-delivery.com"):
        return True
    return page.status == 403 and (
        "x-datadome" in page.headers or "datadome=" in page.header("set-cookie")
    )


@_signature("captcha", "perimeterx")
def perimeterx(page: ResponseView) -> bool:
    """PerimeterX / HUMAN's block page ("Access to this page has been denied"): the
    ``<div id="px-captcha">``, the ``captcha.px-cdn.net`` script, and the "Press & Hold to confirm
    you are a human" text. Not ``client.px-cloud.net`` or ``window._pxAppId``, which normal pages
    of protected sites carry."""
    if page.word(b"captcha") and page.has(b'id="px-captcha"', b"captcha.px-cdn.net"):
        return True
    return page.word(b"press &") and page.has(
        b"press &amp; hold to confirm", b"press & hold to confirm"
    )


@_signature("captcha", "aws")
def aws_waf_captcha(page: ResponseView) -> bool:
    """AWS WAF's CAPTCHA (405) and Challenge (202) actions: the ``x-amzn-waf-action`` header with
    ``captcha`` or ``challenge``, or the interstitial's ``window.gokuProps`` and
    ``captcha-sdk.awswaf.com`` / ``captcha.awswaf.com`` script on a 202 or error status."""
    if page.header("x-amzn-waf-action") in ("captcha", "challenge"):
        return True
    return (page.status == 202 or page.status >= 400) and page.has(
        b"window.gokuprops", b"captcha-sdk.awswaf.com", b"captcha.awswaf.com"
    )


_GOOGLE_SORRY = re.compile(r"^https?://(?:www\.|ipv4\.|ipv6\.)?google\.[a-z.]{2,12}/sorry/")


@_signature("captcha", "google")
def google_sorry(page: ResponseView) -> bool:
    """Google's "sorry" page (usually 429, at ``/sorry/index``): "Our systems have detected unusual
    traffic from your computer network" on that short page or a challenge status, or a redirect
    whose Location is the sorry page."""
    if _GOOGLE_SORRY.match(page.url) or _GOOGLE_SORRY.match(page.header("location")):
        return True
    return (page.size < SHORT_PAGE or page.status in _CHALLENGE_STATUSES) and page.has(
        b"unusual traffic from your computer network"
    )


# --- vendors' block pages -----------------------------------------------------------------------


@_signature("block", "akamai")
def akamai(page: ResponseView) -> bool:
    """Akamai's "Access Denied" page: "You don't have permission to access ... on this server."
    followed by ``Reference #18.xxxx`` (written ``Reference&#32;&#35;``) and, on newer pages, an
    ``errors.edgesuite.net`` link. Apache's own 403 uses the first sentence without a reference."""
    return page.has(b"you don't have permission to access") and page.has(
        b"reference&#32;&#35;", b"reference #", b"errors&#46;edgesuite&#46;net", b"edgesuite.net"
    )


# Error codes of Cloudflare's pages that refuse this client: 1005-1008 a banned ASN or IP, 1009 a
# banned country, 1010 the browser's signature, 1011 hotlinking, 1012 access denied, 1020 a
# firewall rule. Not 1015, a rate limit (status 429: the caller's back-off), nor the 52x pages,
# where the origin is down (a fact about the site).
_CF_BLOCK_CODES = frozenset({1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012, 1020})
_CF_ERROR_CODE = re.compile(
    rb'(?:cf-error-code">|data-translate="error">error</span>)\s{0,40}(?:<span>)?\s{0,10}(\d{3,4})\b'
)


@_signature("block", "cloudflare")
def cloudflare_block(page: ResponseView) -> bool:
    """Cloudflare's block pages: "Access denied | <site> used Cloudflare to restrict access" with
    ``Error 1020`` (or 1005-1012: banned IP, ASN, country, browser), the error code read from the
    ``cf-error-code`` span or the ``<span data-translate="error">Error</span> <span>1020</span>``
    heading; and the firewall block ("Attention Required! | Cloudflare", "Sorry, you have been
    blocked"). Error 1015 ("You are being rate limited") is not a block."""
    if page.has(b"cf-error-code", b'data-translate="error"'):
        code = _CF_ERROR_CODE.search(page.text)
        if code is not None:
            return int(code.group(1)) in _CF_BLOCK_CODES
    if not (page.word(b"cloudflare") or "cf-ray" in page.headers):
        return False
    return page.has(b"used cloudflare to restrict access", b"sorry, you have been blocked")


@_signature("block", "imperva")
def imperva(page: ResponseView) -> bool:
    """Imperva / Incapsula's block page: an iframe on ``/_Incapsula_Resource?CWUDNSAI=...`` with
    "Request unsuccessful. Incapsula incident ID". Normal pages of protected sites load
    ``/_Incapsula_Resource?SWJIYLWA=...``, which is not a block."""
    return page.word(b"incapsula") and page.has(
        b"incapsula incident id", b"_incapsula_resource?cwudnsai="
    )


@_signature("block", "sucuri")
def sucuri(page: ResponseView) -> bool:
    """Sucuri's firewall block page: title "Sucuri WebSite Firewall - Access Denied", heading
    "Access Denied - Sucuri Website Firewall"."""
    return page.word(b"sucuri") and page.has(
        b"access denied - sucuri website firewall", b"sucuri website firewall - access denied"
    )


@_signature("block", "aws")
def cloudfront_block(page: ResponseView) -> bool:
    """A 403 from CloudFront for a request that AWS WAF (or a geo restriction) blocked:
    "The request could not be satisfied." with "Request blocked." (its other 403s, such as a
    bad configuration, do not say "Request blocked")."""
    return (
        page.status == 403
        and page.has(b"the request could not be satisfied")
        and page.has(b"request blocked")
    )


@_signature("block", "wordfence")
def wordfence(page: ResponseView) -> bool:
    """Wordfence's (WordPress) block page, sent as 503 or 403: "Your access to this site has been
    limited by the site owner" ... "Generated by Wordfence"."""
    return page.word(b"wordfence") and page.has(b"your access to this site has been limited")


# --- widgets, corroborated ----------------------------------------------------------------------


# v2 and Enterprise load api.js or enterprise.js bare, or with ?render=explicit; v3 names its key.
_RECAPTCHA_WIDGET = re.compile(
    rb"(?:google\.com|recaptcha\.net)/recaptcha/(?:api|enterprise)\.js(?!\?render=(?!explicit))"
)


@_signature("captcha", "google")
def recaptcha(page: ResponseView) -> bool:
    """A reCAPTCHA challenge: the ``www.google.com/recaptcha/api.js`` (or ``recaptcha.net``, or
    ``recaptcha/enterprise.js``) script or the ``g-recaptcha`` element, corroborated (a status
    challenges use, or a title or heading about a check): forms embed reCAPTCHA on normal pages,
    and sites reuse their template for 404s. Not the
    invisible v3 script (``api.js?render=<site key>``), which only scores visitors."""
    return (
        page.corroborated()
        and page.word(b"recaptcha")
        and (page.has(b'class="g-recaptcha') or _RECAPTCHA_WIDGET.search(page.text) is not None)
    )


@_signature("captcha", "hcaptcha")
def hcaptcha(page: ResponseView) -> bool:
    """An hCaptcha challenge: the ``hcaptcha.com/1/api.js`` script or the ``h-captcha`` element,
    corroborated as for reCAPTCHA."""
    return (
        page.corroborated()
        and page.word(b"captcha")
        and page.has(b"hcaptcha.com/1/api.js", b'class="h-captcha')
    )


@_signature("captcha", "cloudflare")
def turnstile(page: ResponseView) -> bool:
    """A Cloudflare Turnstile challenge: the ``challenges.cloudflare.com/turnstile`` script or the
    ``cf-turnstile`` element, corroborated as for reCAPTCHA."""
    return page.corroborated() and page.has(
        b"challenges.cloudflare.com/turnstile", b'class="cf-turnstile'
    )


# --- generic pages ------------------------------------------------------------------------------

_HUMAN_PHRASES = (
    b"verify you are human",
    b"verify that you are human",
    b"verify you are a human",
    b"verify that you are a human",
    b"verifying you are human",
    b"confirm you are human",
    b"confirm you are a human",
    b"are you a robot",
    b"are you a human",
    b"not a robot",
    b"unusual traffic from your computer",
    b"complete the security check",
)


@_signature("captcha", None)
def human_check(page: ResponseView) -> bool:
    """Any vendor's or a site's own human check: "verify you are human", "please verify you are a
    human", "are you a robot", "make sure you're not a robot" (Amazon), "complete the security
    check", shown in a title or heading, or anywhere on a short page."""
    return page.shown(*_HUMAN_PHRASES)


_BLOCK_PHRASES = (
    b"access denied",
    b"request blocked",
    b"you have been blocked",
    b"your ip has been blocked",
    b"your ip address has been blocked",
    b"your ip has been banned",
    b"your ip address has been banned",
)


@_signature("block", None)
def block_page(page: ResponseView) -> bool:
    """A 403 whose page says the client is blocked: "access denied", "request blocked", "your IP
    has been blocked". A 403 without such words (nginx's and Apache's "Forbidden") is the site's
    own answer about the page."""
    return page.status == 403 and page.has(*_BLOCK_PHRASES)


def detect(status: int, headers: Mapping[str, str], body: bytes, url: str = "") -> Detection:
    """Classify one response. `headers` has lower-case names (see `header_map`); `body` is the
    decoded body or its beginning; `url` the response's URL. A 407 is the proxy's answer, left to
    the caller: it is never detected here."""
    if status == 407:
        return NOT_DETECTED
    view = ResponseView(status, headers, body[:SCAN_BYTES].lower(), len(body), url.lower())
    for signature in SIGNATURES:
        if signature.test(view):
            return Detection(signature.kind, signature.vendor, signature.name)
    return NOT_DETECTED


def vendor_of(signature: str) -> str | None:
    """The vendor of the signature named ``signature`` (None for generic pages and unknown
    names): a hop's ``captcha:<signature>`` mark read back."""
    for known in SIGNATURES:
        if known.name == signature:
            return known.vendor
    return None


def header_map(
    items: Iterable[tuple[str | bytes, Iterable[str | bytes] | str | bytes]],
) -> dict[str, str]:
    """Headers as `detect` takes them, from ``(name, values)`` pairs such as Scrapy's
    ``response.headers.items()``: lower-case names, repeated values joined by newlines."""
    joined: dict[str, str] = {}
    for raw_name, raw_values in items:
        name = _text(raw_name).lower()
        values = [raw_values] if isinstance(raw_values, str | bytes) else raw_values
        text = "\n".join(_text(value) for value in values)
        joined[name] = f"{joined[name]}\n{text}" if name in joined else text
    return joined


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value
