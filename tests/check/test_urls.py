from __future__ import annotations

import pickle
from urllib.parse import urlparse

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.test import get_crawler

from urlcheck.check.urls import (
    InvalidURL,
    Resolved,
    Target,
    comparable,
    hop_kind,
    host_key,
    input_host,
    normalise_input,
    refresh_target,
    resolve_location,
    same_target,
    without_userinfo,
)

# --------------------------------------------------------------------------- normalise_input

# (raw, url, host, scheme_added)
VALID_INPUTS = [
    # plain, case, whitespace
    (
        "https://www.example.com/some/path?x=1",
        "https://www.example.com/some/path?x=1",
        "www.example.com",
        False,
    ),
    ("HTTP://EXAMPLE.COM", "http://example.com/", "example.com", False),
    ("HTTPS://example.com", "https://example.com/", "example.com", False),
    ("https://Example.COM/Path/CASE", "https://example.com/Path/CASE", "example.com", False),
    ("  http://example.com/x \t", "http://example.com/x", "example.com", False),
    ("\thttp://example.com/x\r\n", "http://example.com/x", "example.com", False),
    ("\u00a0http://example.com/x\u200b", "http://example.com/x", "example.com", False),
    ("\ufeffexample.com\u3000", "https://example.com/", "example.com", True),
    ("\u2060\u200cexample.com/a\u200d", "https://example.com/a", "example.com", True),
    # missing scheme
    ("www.example.com", "https://www.example.com/", "www.example.com", True),
    ("example.com/path?q=1#frag", "https://example.com/path?q=1", "example.com", True),
    ("//host.example/x", "https://host.example/x", "host.example", True),
    ("example.com:8080/x", "https://example.com:8080/x", "example.com", True),
    ("localhost:3000", "https://localhost:3000/", "localhost", True),
    ("localhost:3000?x=1", "https://localhost:3000/?x=1", "localhost", True),
    ("example.com:443/x", "https://example.com/x", "example.com", True),
    # fragment dropped, empty query dropped, root path added
    ("http://example.com/a#frag", "http://example.com/a", "example.com", False),
    ("http://example.com/a?b=1#frag?x", "http://example.com/a?b=1", "example.com", False),
    ("https://example.com#top", "https://example.com/", "example.com", False),
    ("https://example.com?x=1", "https://example.com/?x=1", "example.com", False),
    ("https://example.com/?", "https://example.com/?", "example.com", False),
    ("https://example.com/x?b=2&a=1", "https://example.com/x?b=2&a=1", "example.com", False),
    # IDN
    ("bücher.de", "https://xn--bcher-kva.de/", "xn--bcher-kva.de", True),
    ("https://BÜCHER.de/Straße", "https://xn--bcher-kva.de/Stra%C3%9Fe", "xn--bcher-kva.de", False),
    ("例え.jp", "https://xn--r8jz45g.jp/", "xn--r8jz45g.jp", True),
    ("http://例え。jp/パス", "http://xn--r8jz45g.jp/%E3%83%91%E3%82%B9", "xn--r8jz45g.jp", False),
    ("münchen.de:8080", "https://xn--mnchen-3ya.de:8080/", "xn--mnchen-3ya.de", True),
    ("faß.de", "https://xn--fa-hia.de/", "xn--fa-hia.de", True),  # UTS 46, as browsers
    ("i❤.ws", "https://xn--i-7iq.ws/", "xn--i-7iq.ws", True),  # emoji domain, as browsers
    ("https://xn--bcher-kva.de/", "https://xn--bcher-kva.de/", "xn--bcher-kva.de", False),
    ("https://XN--BCHER-KVA.DE/", "https://xn--bcher-kva.de/", "xn--bcher-kva.de", False),
    # path and query encoding
    ("https://example.com/😀", "https://example.com/%F0%9F%98%80", "example.com", False),
    ("https://example.com/a b/c d", "https://example.com/a%20b/c%20d", "example.com", False),
    (
        "https://example.com/search?q=a b&x=ü",
        "https://example.com/search?q=a%20b&x=%C3%BC",
        "example.com",
        False,
    ),
    (
        "https://example.com/%C3%A9t%c3%a9",
        "https://example.com/%C3%A9t%c3%a9",
        "example.com",
        False,
    ),
    # a stray "%" is sent as it is, as browsers do
    ("https://example.com/100%", "https://example.com/100%", "example.com", False),
    ("https://example.com/a%2", "https://example.com/a%2", "example.com", False),
    ("https://example.com/%zz%41", "https://example.com/%zz%41", "example.com", False),
    ("https://example.com/?q=50%off", "https://example.com/?q=50%off", "example.com", False),
    ("https://example.com/a'b?c'd", "https://example.com/a'b?c%27d", "example.com", False),
    (
        'https://example.com/p|q<>"{}^`',
        "https://example.com/p|q%3C%3E%22%7B%7D%5E%60",
        "example.com",
        False,
    ),
    ("https://example.com/a\\b", "https://example.com/a/b", "example.com", False),
    ("https://example.com/a/./b/../c", "https://example.com/a/c", "example.com", False),
    ("https://example.com/a/..", "https://example.com/", "example.com", False),
    ("https://example.com/../../x", "https://example.com/x", "example.com", False),
    ("https://example.com/a//b", "https://example.com/a//b", "example.com", False),
    ("https://example.com/ö?ö=ö", "https://example.com/%C3%B6?%C3%B6=%C3%B6", "example.com", False),
    # ports
    ("http://example.com:80/", "http://example.com/", "example.com", False),
    ("https://example.com:443/x", "https://example.com/x", "example.com", False),
    ("http://example.com:443/x", "http://example.com:443/x", "example.com", False),
    ("https://example.com:80/x", "https://example.com:80/x", "example.com", False),
    ("https://example.com:8080/x", "https://example.com:8080/x", "example.com", False),
    ("http://example.com:/x", "http://example.com/x", "example.com", False),
    ("http://example.com:0080/", "http://example.com/", "example.com", False),
    ("http://example.com:65535/", "http://example.com:65535/", "example.com", False),
    # IP literals
    ("127.0.0.2:8080", "https://127.0.0.2:8080/", "127.0.0.2", True),
    ("http://127.0.0.2:8080/x", "http://127.0.0.2:8080/x", "127.0.0.2", False),
    ("[::1]:8080", "https://[::1]:8080/", "::1", True),
    ("http://[::1]:8080/x", "http://[::1]:8080/x", "::1", False),
    ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/", "::1", False),
    ("http://[2001:DB8::A]:80/", "http://[2001:db8::a]/", "2001:db8::a", False),
    # userinfo
    ("http://user:pass@example.com/", "http://user:pass@example.com/", "example.com", False),
    ("http://user@Example.com/", "http://user@example.com/", "example.com", False),
    ("http://us er:p@ss@example.com/", "http://us%20er:p%40ss@example.com/", "example.com", False),
    ("http://@example.com/", "http://example.com/", "example.com", False),
    ("http://example.com@evil.example/", "http://example.com@evil.example/", "evil.example", False),
    # host forms
    ("http://example.com./", "http://example.com./", "example.com.", False),
    ("https://my_host.example.com/", "https://my_host.example.com/", "my_host.example.com", False),
    ("http://localhost/", "http://localhost/", "localhost", False),
]


@pytest.mark.parametrize(("raw", "url", "host", "added"), VALID_INPUTS)
def test_normalise_input(raw: str, url: str, host: str, added: bool) -> None:
    target = normalise_input(raw)
    assert (target.url, target.host, target.scheme_added) == (url, host, added)


@pytest.mark.parametrize(("raw", "url", "host", "added"), VALID_INPUTS)
def test_normalised_url_is_what_scrapy_sends(raw: str, url: str, host: str, added: bool) -> None:
    # Sent verbatim (Scrapy would re-escape "|" and the like) and keyed on its download slot.
    assert normalise_input(url).url == url
    request = Request(url, meta={"verbatim_url": True})
    assert request.url == url
    assert urlparse_cached(request).hostname == host
    assert host_key(url) == host


# (raw, url, warnings): input URLs a browser reads differently from how they look
INPUT_WARNINGS = [
    ("http://0x7f.1/", "http://127.0.0.1/", ("url_ipv4_numeric",)),
    ("http://1.2.3/", "http://1.2.0.3/", ("url_ipv4_numeric",)),
    ("http://2130706433:8080", "http://127.0.0.1:8080/", ("url_ipv4_numeric",)),
    ("http://127.0.0.1/", "http://127.0.0.1/", ()),
    ("http://exa\\mple.com/", "http://exa/mple.com/", ("url_backslash",)),
    ("http:/x.example/", "http://x.example/", ("url_scheme_no_slashes",)),
    ("https:example.com", "https://example.com/", ("url_scheme_no_slashes",)),
    ("http:///x.example", "http://x.example/", ("url_extra_slashes",)),
    ("http://example.com@evil.example/", "http://example.com@evil.example/", ("url_userinfo",)),
    ("https://example.com/100%", "https://example.com/100%", ("url_percent",)),
    ("https://example.com/a?b=1", "https://example.com/a?b=1", ()),
]


@pytest.mark.parametrize(("raw", "url", "warnings"), INPUT_WARNINGS)
def test_normalise_input_warnings(raw: str, url: str, warnings: tuple[str, ...]) -> None:
    assert normalise_input(raw) == Target(url, host_key(url), False, warnings)


def test_default_scheme_http() -> None:
    assert normalise_input("example.com/x", default_scheme="http") == Target(
        "http://example.com/x", "example.com", True
    )
    assert normalise_input("https://example.com/x", default_scheme="http").url == (
        "https://example.com/x"
    )
    with pytest.raises(ValueError, match="default_scheme"):
        normalise_input("example.com", default_scheme="ftp")


@pytest.mark.parametrize("space", [chr(c) for c in range(0x3001) if chr(c).isspace()])
def test_every_unicode_space_is_trimmed(space: str) -> None:
    assert normalise_input(f"{space}example.com{space}").url == "https://example.com/"


# (raw, part of the message)
INVALID_INPUTS = [
    ("", "empty URL"),
    ("   \t ", "empty URL"),
    (" \u200b\u00a0 ", "empty URL"),
    ("mailto:x@y", "scheme 'mailto' is not http or https"),
    ("javascript:alert(1)", "scheme 'javascript' is not http or https"),
    ("JavaScript:alert(1)", "scheme 'javascript' is not http or https"),
    ("ftp://x", "scheme 'ftp' is not http or https"),
    ("file:///etc/passwd", "scheme 'file' is not http or https"),
    ("data:text/html,x", "scheme 'data' is not http or https"),
    ("tel:+46701234567", "scheme 'tel' is not http or https"),
    ("http://", "no host"),
    ("://x", "no host"),
    ("https://:8080/x", "no host"),
    ("http://user@/x", "no host"),
    ("http://?q=1", "no host"),
    ("http://exa mple.com", "host 'exa mple.com' contains a space"),
    ("exa mple.com/x", "host 'exa mple.com' contains a space"),
    ("http://example.com:99999", "port '99999' is not a number from 0 to 65535"),
    ("http://example.com:8o/", "port '8o' is not a number"),
    ("http://example.com:-1/", "port '-1' is not a number"),
    ("http://example.com:\uff18\uff10/", "is not a number"),  # full-width digits
    ("http://a:1:2/", "port '1:2' is not a number"),
    ("http://999.1.1.1/", "host '999.1.1.1' is not a valid host name"),
    ("http://example.123/", "host 'example.123' is not a valid host name"),
    ("http://exa<mple.com/", "host 'exa<mple.com' is not a valid host name"),
    ("http://a%zz.com/", "host 'a%zz.com' is not a valid host name"),
    ("http://[bad", "the IPv6 address has no closing ']'"),
    ("http://[::1/x", "the IPv6 address has no closing ']'"),
    ("http://[not-ip]/", "host [not-ip] is not a valid IPv6 address"),
    ("http://[::1]x/", "unexpected 'x' after the IPv6 address"),
    ("http://[fe80::1%25eth0]/", "is not a valid IPv6 address"),
    ("http//example.com", "the scheme is mistyped"),
    ("HTTPS/example.com", "the scheme is mistyped"),
    ("http://exa\nmple.com", "contains a tab or a line break"),
    ("http://example.com/a\tb", "contains a tab or a line break"),
]


@pytest.mark.parametrize(("raw", "problem"), INVALID_INPUTS)
def test_normalise_input_rejects(raw: str, problem: str) -> None:
    with pytest.raises(InvalidURL) as info:
        normalise_input(raw)
    assert info.value.code == "invalid_url"
    message = str(info.value)
    assert problem in message
    # The message names the value (shortened when it is long).
    assert message.startswith(f"URL {repr(raw)[:50]}")


def test_long_values_are_shortened_in_messages() -> None:
    with pytest.raises(InvalidURL) as info:
        normalise_input("mailto:" + "x" * 5000)
    assert len(str(info.value)) < 300
    assert "scheme 'mailto'" in str(info.value)


def test_invalid_url_pickles_with_its_code() -> None:
    error = InvalidURL("Location 'x': bad", code="bad_location")
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.code) == (InvalidURL, "Location 'x': bad", "bad_location")
    assert isinstance(copy, ValueError)


# --------------------------------------------------------------------------- resolve_location

BASE = "http://example.com/a/b?x=1"

# (base, location, resolved)
LOCATIONS: list[tuple[str, str | bytes, str]] = [
    (BASE, "/new", "http://example.com/new"),
    (BASE, "new", "http://example.com/a/new"),
    (BASE, "../x", "http://example.com/x"),
    (BASE, "../../../../x", "http://example.com/x"),
    (BASE, "./", "http://example.com/a/"),
    (BASE, "?q=1", "http://example.com/a/b?q=1"),
    (BASE, "//cdn.example.com/x", "http://cdn.example.com/x"),
    ("https://example.com/", "//cdn.example.com/x", "https://cdn.example.com/x"),
    (BASE, "https://é.fr/ü", "https://xn--9ca.fr/%C3%BC"),
    (BASE, "  /padded  ", "http://example.com/padded"),
    (BASE, "\t/tab\r\n", "http://example.com/tab"),
    (BASE, "/a\tb", "http://example.com/ab"),  # browsers drop tabs and newlines inside
    (BASE, b"\xc3\xa9", "http://example.com/a/%C3%A9"),  # UTF-8 bytes
    (BASE, b"/caf\xe9", "http://example.com/caf%E9"),  # latin-1 bytes, sent back byte for byte
    (BASE, b"/stra\xdfe?q=\xe9", "http://example.com/stra%DFe?q=%E9"),
    (BASE, b"/ok", "http://example.com/ok"),
    (BASE, "/a b?c d", "http://example.com/a%20b?c%20d"),
    (BASE, "/😀", "http://example.com/%F0%9F%98%80"),
    (BASE, "/100%", "http://example.com/100%"),
    (BASE, "/x#frag", "http://example.com/x"),
    (BASE, "#top", "http://example.com/a/b?x=1"),
    (BASE, "https://EXAMPLE.com:443/x", "https://example.com/x"),
    (BASE, "HTTPS://WWW.Example.com", "https://www.example.com/"),
    (BASE, "http://[::1]:80/", "http://[::1]/"),
    (BASE, "http://127.0.0.3:8080/y", "http://127.0.0.3:8080/y"),
    (BASE, "http:/y", "http://example.com/y"),  # same scheme without '//': relative
    (BASE, "http:y", "http://example.com/a/y"),
    (BASE, "https://bücher.de/neu", "https://xn--bcher-kva.de/neu"),
    (BASE, "/a/./b/../c", "http://example.com/a/c"),
    (BASE, "http://u:p@h.example/", "http://u:p@h.example/"),
    (BASE, "/path:with:colons", "http://example.com/path:with:colons"),
]


@pytest.mark.parametrize(("base", "location", "resolved"), LOCATIONS)
def test_resolve_location(base: str, location: str | bytes, resolved: str) -> None:
    assert resolve_location(base, location).url == resolved
    assert Request(resolved, meta={"verbatim_url": True}).url == resolved


# (location, code, part of the message)
BAD_LOCATIONS: list[tuple[str | bytes | None, str, str]] = [
    (None, "bad_location", "the Location header is missing"),
    (
        "",
        "bad_location",
        f"the Location header is empty (''): a browser would request {BASE} again",
    ),
    (b"", "bad_location", "the Location header is empty (b''): a browser would request"),
    ("   \t", "bad_location", "the Location header is empty ('   \\t'): a browser would"),
    ("http://[bad", "bad_location", "no closing ']'"),
    ("http://", "bad_location", "no host"),
    ("https://", "bad_location", "no host"),
    ("//exa mple.com/", "bad_location", "host 'exa mple.com' contains a space"),
    ("http://exa mple.com/", "bad_location", "contains a space"),
    ("http://example.com:99999/", "bad_location", "port '99999' is not a number"),
    (b"https://caf\xe9.fr/", "bad_location", "is not a valid host name"),
    ("javascript:void(0)", "unsupported_scheme", "scheme 'javascript' is not http or https"),
    ("JAVASCRIPT:alert(1)", "unsupported_scheme", "scheme 'javascript'"),
    ("data:text/html,x", "unsupported_scheme", "scheme 'data'"),
    ("mailto:a@example.com", "unsupported_scheme", "scheme 'mailto'"),
    ("file:///etc/passwd", "unsupported_scheme", "scheme 'file'"),
    ("ftp://example.com/f", "unsupported_scheme", "scheme 'ftp'"),
    ("tel:+46701234567", "unsupported_scheme", "scheme 'tel'"),
    ("localhost:8080/x", "unsupported_scheme", "scheme 'localhost'"),
]


@pytest.mark.parametrize(("location", "code", "problem"), BAD_LOCATIONS)
def test_resolve_location_rejects(location: str | bytes | None, code: str, problem: str) -> None:
    with pytest.raises(InvalidURL) as info:
        resolve_location(BASE, location)
    assert info.value.code == code
    assert problem in str(info.value)
    if location:
        assert repr(location)[:20] in str(info.value)
    empty = location is not None and not location.strip()
    assert info.value.warnings == (("location_empty",) if empty else ())


# (location, resolved, warnings): Locations whose target a person would not expect; from
# http://127.0.0.2:8000/a/b a browser goes to the resolved URL.
HERE = "http://127.0.0.2:8000/a/b"
SURPRISES: list[tuple[str | bytes, str, tuple[str, ...]]] = [
    ("/\\127.0.0.3:8000/x", "http://127.0.0.3:8000/x", ("location_backslash",)),
    ("\\\\127.0.0.3:8000\\x", "http://127.0.0.3:8000/x", ("location_backslash",)),
    ("http:\\\\127.0.0.3:8000\\", "http://127.0.0.3:8000/", ("location_backslash",)),
    ("/x?a\\b", "http://127.0.0.2:8000/x?a\\b", ()),  # a query keeps its backslash
    (
        "http:/127.0.0.3:8000/x",
        "http://127.0.0.2:8000/127.0.0.3:8000/x",
        ("location_scheme_no_slashes",),
    ),
    (
        "http:127.0.0.3:8000/x",
        "http://127.0.0.2:8000/a/127.0.0.3:8000/x",
        ("location_scheme_no_slashes",),
    ),
    ("https:/127.0.0.3:8000/x", "https://127.0.0.3:8000/x", ("location_scheme_no_slashes",)),
    ("HTTPS:127.0.0.3/x", "https://127.0.0.3/x", ("location_scheme_no_slashes",)),
    ("///127.0.0.3:8000/x", "http://127.0.0.3:8000/x", ("location_extra_slashes",)),
    ("http://0x7f.0.0.3:8000/", "http://127.0.0.3:8000/", ("location_ipv4_numeric",)),
    ("http://0x7f.1:8000/", "http://127.0.0.1:8000/", ("location_ipv4_numeric",)),
    ("http://127.1:8000/", "http://127.0.0.1:8000/", ("location_ipv4_numeric",)),
    ("http://0177.0.0.1:8000/", "http://127.0.0.1:8000/", ("location_ipv4_numeric",)),
    ("http://2130706435:8000/", "http://127.0.0.3:8000/", ("location_ipv4_numeric",)),
    ("http://192.168.257/", "http://192.168.1.1/", ("location_ipv4_numeric",)),
    ("//%31%32%37.0.0.3:8000/", "http://127.0.0.3:8000/", ("location_ipv4_numeric",)),
    (
        "http://u@0x7f.0.0.3:8000/",
        "http://u@127.0.0.3:8000/",
        ("location_ipv4_numeric", "location_userinfo"),
    ),
    # the host in dotted-decimal form, or taken from the page: nothing surprising
    ("http://127.0.0.3:8000/", "http://127.0.0.3:8000/", ()),
    ("http://127.0.0.3.:8000/", "http://127.0.0.3:8000/", ()),
    ("http://[0:0::1]:8000/", "http://[::1]:8000/", ()),
    ("/x", "http://127.0.0.2:8000/x", ()),
    ("x?127.1", "http://127.0.0.2:8000/a/x?127.1", ()),
    ("/foo%", "http://127.0.0.2:8000/foo%", ("location_percent",)),
    ("/a?discount=100%", "http://127.0.0.2:8000/a?discount=100%", ("location_percent",)),
    ("/%41%zz", "http://127.0.0.2:8000/%41%zz", ("location_percent",)),
    ("/%41", "http://127.0.0.2:8000/%41", ()),
    (
        "http://127.0.0.2:8000@127.0.0.3:8000/",
        "http://127.0.0.2:8000@127.0.0.3:8000/",
        ("location_userinfo",),
    ),
    (
        "https:\\\\0x7f.0.0.3/%",
        "https://127.0.0.3/%",
        ("location_backslash", "location_ipv4_numeric", "location_percent"),
    ),
]


@pytest.mark.parametrize(("location", "resolved", "warnings"), SURPRISES)
def test_surprising_locations_are_resolved_as_browsers_do_and_named(
    location: str, resolved: str, warnings: tuple[str, ...]
) -> None:
    assert resolve_location(HERE, location) == Resolved(resolved, warnings)


def _scrapy_redirect(location: bytes) -> str:
    middleware = RedirectMiddleware.from_crawler(get_crawler())
    request = Request(BASE)
    response = Response(BASE, status=301, headers={"Location": location}, request=request)
    redirected = middleware.process_response(request, response)
    assert isinstance(redirected, Request)
    return redirected.url.partition("#")[0]


# Scrapy's own RedirectMiddleware, for comparison: where it sends a request elsewhere than a
# browser would (the others differ at most in form, e.g. "|" escaped, ":443" kept).
SCRAPY_GOES_ELSEWHERE = [b"/\\evil.example/", b"\\\\x\\hello", b"/\\/\\//example.org/../path"]


@pytest.mark.parametrize(
    "location",
    [loc if isinstance(loc, bytes) else loc.encode() for base, loc, _ in LOCATIONS if base == BASE],
)
def test_resolve_location_agrees_with_scrapy_on_plain_locations(location: bytes) -> None:
    ours = resolve_location(BASE, location).url
    assert same_target(ours, _scrapy_redirect(location), ignore_trailing_slash=False)


@pytest.mark.parametrize("location", SCRAPY_GOES_ELSEWHERE)
def test_scrapy_resolves_some_locations_unlike_browsers(location: bytes) -> None:
    ours, theirs = resolve_location(BASE, location).url, _scrapy_redirect(location)
    assert not same_target(ours, theirs, ignore_trailing_slash=False)


# --------------------------------------------------------------------------- hop_kind

HOPS = [
    ("http://a.se/x", "https://a.se/x", "scheme"),
    ("https://a.se/x", "http://a.se/x", "scheme"),
    ("https://a.se/x", "https://www.a.se/x", "host"),
    ("https://www.a.se/x", "https://a.se/x", "host"),
    ("https://a.se:8443/x", "https://a.se/x", "host"),
    ("https://a.se/x", "https://a.se/x/", "slash"),
    ("https://a.se/x/", "https://a.se/x", "slash"),
    ("https://a.se/x?q=1", "https://a.se/x/?q=1", "slash"),
    ("https://a.se/x", "https://a.se/y", "path"),
    ("https://a.se/x?a=1", "https://a.se/x?a=2", "path"),
    ("https://a.se/x", "https://a.se/x?utm=1", "path"),
    ("https://a.se/x?a=1", "https://a.se/x/?a=2", "path"),
    ("https://a.se/x?b=1&a=2", "https://a.se/x?a=2&b=1", "path"),
    ("https://a.se/%7Ex", "https://a.se/~x", "path"),
    ("https://a.se/X", "https://a.se/x", "path"),
    ("https://a.se/x", "https://b.se/x", "cross_host"),
    ("http://a.se/x", "https://b.se/y", "cross_host"),
    ("https://a.se/", "https://shop.a.se/", "cross_host"),
    ("https://www.a.se/", "https://www2.a.se/", "cross_host"),
    ("https://www.a.se/", "https://www.b.se/", "cross_host"),
    ("http://127.0.0.2:8080/", "http://127.0.0.3:8080/", "cross_host"),
    ("http://a.se/x", "https://www.a.se/x", "scheme+host"),
    ("http://a.se/x", "https://a.se/x/", "scheme+slash"),
    ("http://a.se/x", "https://www.a.se/x/", "scheme+host+slash"),
    ("http://a.se/x", "https://a.se/y", "scheme+path"),
    ("https://a.se/x", "https://www.a.se/y", "host+path"),
    ("https://a.se/x", "https://www.a.se/x/", "host+slash"),
    ("http://www.a.se/x", "https://a.se/y", "scheme+host+path"),
    ("https://a.se/x", "https://a.se/x", "same"),
    ("https://a.se/x", "https://A.SE:443/x#f", "same"),
    ("http://bücher.de/", "http://xn--bcher-kva.de/", "same"),
]


@pytest.mark.parametrize(("src", "dst", "kind"), HOPS)
def test_hop_kind(src: str, dst: str, kind: str) -> None:
    assert hop_kind(src, dst) == kind


def test_hop_kind_rejects_unparsable_urls() -> None:
    with pytest.raises(InvalidURL):
        hop_kind("https://a.se/", "javascript:x")


# --------------------------------------------------------------------------- host_key

HOST_KEYS = [
    ("https://www.a.se/x", "www.a.se"),
    ("https://a.se/", "a.se"),
    ("https://WWW.A.SE/", "www.a.se"),
    ("http://u:p@Host.example:8080/x", "host.example"),
    ("http://u@h.example@other.example/", "other.example"),
    ("http://[::1]:8080/", "::1"),
    ("http://[2001:DB8::1]/", "2001:db8::1"),
    ("http://127.0.0.2:8080/", "127.0.0.2"),
    ("https://bücher.de/", "xn--bcher-kva.de"),
    ("https://a.se?x=//b.se", "a.se"),
    ("https://a.se#x@b.se", "a.se"),
    ("https://a.se", "a.se"),
    ("//a.se/x", "a.se"),
    ("not a url", ""),
    ("/relative/path?u=http://b.se/", ""),
    ("mailto:x@y.se", ""),
    ("http:///x", ""),
]


@pytest.mark.parametrize(("url", "key"), HOST_KEYS)
def test_host_key(url: str, key: str) -> None:
    assert host_key(url) == key
    if url.isascii():
        assert key == (urlparse(url).hostname or "")


def test_www_and_bare_host_are_different_slots() -> None:
    assert host_key("https://www.a.se/") != host_key("https://a.se/")


# --------------------------------------------------------------------------- comparable

COMPARISONS = [
    ("HTTPS://Example.COM/a", "https://example.com/a", True, True),
    ("https://example.com:443/a", "https://example.com/a", True, True),
    ("http://example.com:80/a", "http://example.com/a", True, True),
    ("https://example.com/a#x", "https://example.com/a", True, True),
    ("https://example.com/%7Euser", "https://example.com/~user", True, True),
    ("https://example.com/%41%2d", "https://example.com/A-", True, True),
    ("https://example.com/%c3%a9", "https://example.com/%C3%A9", True, True),
    ("https://example.com/é", "https://example.com/%C3%A9", True, True),
    ("https://example.com/a?b=2&a=1", "https://example.com/a?a=1&b=2", True, True),
    ("https://example.com/a?a=1&a=2", "https://example.com/a?a=2&a=1", True, True),
    ("https://example.com/a?a=1&a=1", "https://example.com/a?a=1", True, False),
    ("https://example.com/a?", "https://example.com/a", True, True),
    ("https://example.com/a/", "https://example.com/a", True, True),
    ("https://example.com/a/", "https://example.com/a", False, False),
    ("https://example.com/a/?q=1", "https://example.com/a?q=1", True, True),
    ("https://example.com/", "https://example.com", True, True),
    ("https://example.com/", "https://example.com", False, True),
    ("https://example.com/a/b/../c", "https://example.com/a/c", True, True),
    ("https://user:pw@example.com/a", "https://example.com/a", True, True),
    ("https://bücher.de/", "https://xn--bcher-kva.de/", True, True),
    ("example.com/a", "https://example.com/a", True, True),
    ("https://www.example.com/", "https://example.com/", True, False),
    ("http://example.com/", "https://example.com/", True, False),
    ("https://example.com:8080/", "https://example.com/", True, False),
    ("https://example.com/A", "https://example.com/a", True, False),
    ("https://example.com/a%2Fb", "https://example.com/a/b", True, False),
    ("https://example.com/?q=a%26b", "https://example.com/?q=a&b", True, False),
    ("https://example.com/a//", "https://example.com/a", True, False),
    ("not a url at all", "not a url at all", True, False),
    ("https://example.com/", "mailto:x@example.com", True, False),
]


@pytest.mark.parametrize(("a", "b", "ignore_slash", "equal"), COMPARISONS)
def test_same_target(a: str, b: str, ignore_slash: bool, equal: bool) -> None:
    assert same_target(a, b, ignore_trailing_slash=ignore_slash) is equal
    assert same_target(b, a, ignore_trailing_slash=ignore_slash) is equal


@pytest.mark.parametrize(
    ("url", "ignore_slash", "form"),
    [
        ("HTTPS://Example.COM:443/a/?b=2&a=%7e1#f", True, "https://example.com/a?a=~1&b=2"),
        ("HTTPS://Example.COM:443/a/?b=2&a=%7e1#f", False, "https://example.com/a/?a=~1&b=2"),
        ("https://example.com/", True, "https://example.com"),
        ("https://example.com/", False, "https://example.com/"),
        (
            "https://u:p@example.com:8080/%e2%82%ac?%2f=1",
            True,
            "https://example.com:8080/%E2%82%AC?%2F=1",
        ),
        ("http://[::1]:80/x", True, "http://[::1]/x"),
    ],
)
def test_comparable(url: str, ignore_slash: bool, form: str) -> None:
    assert comparable(url, ignore_trailing_slash=ignore_slash) == form


def test_comparable_rejects_invalid_urls() -> None:
    with pytest.raises(InvalidURL) as info:
        comparable("http://exa mple.com/")
    assert info.value.code == "invalid_url"


# --------------------------------------------------------------------------- refresh_target

# (content attribute, URL string a browser reads from it); HTML's declarative refresh steps
REFRESHES = [
    ("0;url=/x", "/x"),
    ("0; URL='/a b'", "/a b"),
    (' 3.5 ; url = "/q" trailing', "/q"),
    ("0,/y", "/y"),  # w3lib.html.get_meta_refresh needs "url="
    ("0 /z", "/z"),
    (".5;/w", "/w"),
    ("0\n;\nURL\n=\n/n", "/n"),
    ("0;url=/\\127.0.0.3/ok", "/\\127.0.0.3/ok"),  # raw: resolve_location reads the backslash
    ("0;urlx=/k", "x=/k"),  # "url" is skipped even without "="
    ("0;;/x", ";/x"),
    ("5", None),  # refreshes the page itself
    ("0;", None),
    ("0;url=", None),
    ("0;url=''", None),
    ("x;url=/z", None),  # not a refresh
    ("0foo", None),
]


@pytest.mark.parametrize(("content", "target"), REFRESHES)
def test_refresh_target(content: str, target: str | None) -> None:
    assert refresh_target(content) == target


@pytest.mark.parametrize(
    ("url", "wire"),
    [
        ("http://u:p@127.0.0.3:8000/x?a@b", "http://127.0.0.3:8000/x?a@b"),
        ("http://a.example:8000@b.example/", "http://b.example/"),
        ("https://b.example/x@y", "https://b.example/x@y"),
        ("https://b.example", "https://b.example"),
    ],
)
def test_without_userinfo(url: str, wire: str) -> None:
    assert without_userinfo(url) == wire


@pytest.mark.parametrize(
    "raw",
    [
        "http://127.0.0.10:8999/ok?r=1",
        "https://example.com",
        "https://sub.example.co.uk/a/b?c=d#e",
        "http://a-b.example/x",
        "http://a--b.example/",
        "https://example.com:443/",
        "http://0.0.0.0/",
        "http://255.255.255.255:0/",
        # Not plain: the parser decides.
        "http://Example.COM/",
        "example.com/path",
        " http://example.com/ ",
        "http://example.com/a b",
        "http://exämple.com/",
        "http://xn--exmple-cua.com/",
        "http://a.com./",
        "http://a.1com/",
        "http://1.2.3.04/",
        "http://0x7f.1/",
        "http://127.1/",
        "http://u:p@example.com/",
        "http://a.com\\@b.com/",
        "http://[::1]:8080/",
        "http://-a.example/",
    ],
)
def test_input_host_is_the_parsers_host(raw: str) -> None:
    assert input_host(raw) == normalise_input(raw).host


@pytest.mark.parametrize(
    "raw",
    ["http://1.2.3.4.5/", "http://a.0x1f/", "http://a.com:99999/", "http://256.1.1.1/", "ftp://a/"],
)
def test_input_host_refuses_what_the_parser_refuses(raw: str) -> None:
    with pytest.raises(InvalidURL):
        normalise_input(raw)
    with pytest.raises(InvalidURL):
        input_host(raw)


@pytest.mark.parametrize(("raw", "url", "host", "added"), VALID_INPUTS)
def test_input_host_of_every_valid_input(raw: str, url: str, host: str, added: bool) -> None:
    assert input_host(raw) == host
