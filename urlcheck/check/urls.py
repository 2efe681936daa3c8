"""URL rules of urlcheck: input URLs, Location resolution, hop kinds, URL equality.

Parsing and resolving is the WHATWG URL Standard's, as browsers do it, through ada-url (the
parser Node.js uses). On top of it this module keeps urlcheck's own policy: the conveniences
for input URLs, which schemes are followed, error codes, warnings about Locations whose target a
person would not expect, hop kinds and the "same target" comparison. No Scrapy here; the rules
are documented in docs/urls-and-verdicts.md.

The URLs returned are WHATWG serialisations without a fragment: a browser sends exactly these
bytes. ``scrapy.Request`` would re-escape some of them (``|``, ``[``, ``^`` in a query, ...),
so requests carry them with ``verbatim_url``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ada_url import idna_to_ascii, join_url, normalize_url

__all__ = [
    "InvalidURL",
    "Resolved",
    "Target",
    "comparable",
    "hop_kind",
    "host_key",
    "input_host",
    "normalise_input",
    "redacted",
    "refresh_target",
    "resolve_location",
    "same_target",
    "without_userinfo",
]

# Unicode whitespace (every str.isspace() character), C0 controls, DEL and the zero-width
# characters that spreadsheets and web pages leave around pasted URLs.
_TRIM_CHARS = (
    "".join(map(chr, range(0x21)))
    + "\x7f\x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
    + "\u180e\u200b\u200c\u200d\u2060\ufeff"
)
# What the URL parser itself strips from both ends of a Location: C0 controls and space.
_C0_SPACE = "".join(map(chr, range(0x21)))
_TAB_OR_NEWLINE = re.compile("[\t\n\r]")
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# "example.com:8080/x" starts like a scheme but is a host and a port.
_PORT_LIKE = re.compile(r"[0-9]+(?:[/?#]|\Z)")
_MISTYPED_SCHEME = re.compile(r"https?/", re.IGNORECASE)
_HTTP_PREFIXES = ("http:", "https:")

# A WHATWG serialisation of an http(s) URL without fragment: scheme, userinfo, host, port,
# path, query. Userinfo has "@" and "/" percent-encoded, so splits like these are exact.
_HREF_RE = re.compile(
    r"(https?)://(?:([^@/]*)@)?(\[[^\]]*\]|[^:/]*)(?::([0-9]+))?(/[^?]*)(?:\?(.*))?"
)
_HOSTINFO_RE = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*:)?//([^/?#]*)")

# Warnings: the Location's target is not what a person reading it would expect.
_NO_SLASHES = re.compile(r"https?:(?![/\\]{2})", re.IGNORECASE)
_EXTRA_SLASHES = re.compile(r"(?:https?:)?[/\\]{3}", re.IGNORECASE)
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_SURROGATE = re.compile("[\udc80-\udcff]")

_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SHOW_MAX = 200


class InvalidURL(ValueError):  # noqa: N818 (name fixed by the interface)
    """A URL or Location that cannot be requested.

    ``code`` is ``invalid_url`` (an input URL), ``bad_location`` (a Location header that is
    missing, empty or unparsable) or ``unsupported_scheme`` (a Location to a scheme other
    than http/https). ``warnings`` names what was surprising about it (``location_empty``).
    ``str(error)`` is a message naming the value.
    """

    def __init__(
        self, message: str, *, code: str = "invalid_url", warnings: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.code = code
        self.warnings = warnings

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_invalid_url, (str(self), self.code, self.warnings))


def _rebuild_invalid_url(message: str, code: str, warnings: tuple[str, ...] = ()) -> InvalidURL:
    return InvalidURL(message, code=code, warnings=warnings)


@dataclass(frozen=True, slots=True)
class Resolved:
    """Where a Location leads: the URL a browser requests next, and what was surprising."""

    url: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Target:
    """An input URL as first requested. ``host`` equals ``host_key(url)``; ``warnings`` are
    the Location warnings' ``url_`` counterparts (``url_backslash``, ...)."""

    url: str
    host: str
    scheme_added: bool
    warnings: tuple[str, ...] = ()


def _show(value: str | bytes) -> str:
    shown = repr(value)
    return shown if len(shown) <= _SHOW_MAX else f"{shown[: _SHOW_MAX - 3]}..."


def _why(url: str) -> str:
    """A reason for an absolute URL the parser refused (the parser gives none)."""
    match = _HOSTINFO_RE.match(re.sub(r"^([A-Za-z][A-Za-z0-9+.\-]*:)[/\\]*", r"\1//", url))
    hostport = match.group(1).rpartition("@")[2] if match else ""
    if hostport.startswith("["):
        address, bracket, after = hostport.partition("]")
        if not bracket:
            return "the IPv6 address has no closing ']'"
        if after and not after.startswith(":"):
            return f"unexpected {after!r} after the IPv6 address"
        return f"host {address}] is not a valid IPv6 address"
    host, _, port = hostport.partition(":")
    if not host:
        return "no host"
    if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        return f"port {port!r} is not a number from 0 to 65535"
    if " " in host:
        return f"host {host!r} contains a space"
    return f"host {host!r} is not a valid host name"


def _host(href: str) -> str:
    """The host of an http(s) serialisation, IPv6 without brackets (``host_key``, faster)."""
    host = href.split("/", 3)[2].rpartition("@")[2]
    return host[1 : host.index("]")] if host.startswith("[") else host.partition(":")[0]


def _surprises(text: str, href: str, base: str | None) -> tuple[str, ...]:
    """What about ``text`` (trimmed) resolving to ``href`` a person would not expect."""
    # Cheap character tests first: this runs for every Location and input row.
    found: list[str] = []
    if "\\" in text and "\\" in text.partition("?")[0].partition("#")[0]:
        found.append("backslash")
    if text[:1] in "hH/\\":
        if _NO_SLASHES.match(text):
            found.append("scheme_no_slashes")
        elif _EXTRA_SLASHES.match(text):
            found.append("extra_slashes")
    host = _host(href)
    if (
        host[-1:].isdigit()
        and ":" not in host  # IPv6
        and host not in text
        and _gives_host(text, href, base, host)
    ):
        # A WHATWG host that ends in a number is an IPv4 address, serialised dotted-decimal.
        found.append("ipv4_numeric")
    if "@" in text and "@" in href.split("/", 3)[2]:
        found.append("userinfo")
    if "%" in text and _STRAY_PERCENT.search(text):
        found.append("percent")
    return tuple(found)


def _gives_host(text: str, href: str, base: str | None, host: str) -> bool:
    # Whether the host came from the Location rather than from its base: resolved against a
    # base with another host, the Location still leads to it.
    if base is None:
        return True
    try:
        elsewhere = join_url(f"{base.partition(':')[0]}://base.invalid/", text)
    except ValueError:
        return True
    return _host(elsewhere) == host


def _absolute(base: str, text: str) -> str:
    # A scheme-relative Location takes the base's scheme, enough for _why() to find its host.
    return text if _SCHEME_RE.match(text) else f"{base.partition(':')[0]}:{text}"


# --------------------------------------------------------------------------- input URLs


def _with_scheme(text: str, default_scheme: str) -> tuple[str, bool]:
    """Return ``text`` with a scheme, and whether it was added."""
    if text.startswith(("https://", "http://")):
        return text, False
    if text.startswith("//"):
        return f"{default_scheme}:{text}", True
    match = _SCHEME_RE.match(text)
    if match is None:
        if _MISTYPED_SCHEME.match(text):
            raise ValueError("the scheme is mistyped (expected 'http://' or 'https://')")
        return f"{default_scheme}://{text}", True
    if _PORT_LIKE.match(text, match.end()) and not text.startswith("//", match.end()):
        return f"{default_scheme}://{text}", True
    scheme = match.group(1).lower()
    if f"{scheme}:" not in _HTTP_PREFIXES:
        raise ValueError(f"scheme {scheme!r} is not http or https")
    return text, False


def normalise_input(raw: str, *, default_scheme: str = "https") -> Target:
    """The URL to request first for a URL from the input file.

    Trimmed, ``default_scheme`` added when it has none, then parsed as a browser does.
    Raises :class:`InvalidURL` (code ``invalid_url``) when it cannot be checked.
    """
    if default_scheme not in {"http", "https"}:
        raise ValueError(f"default_scheme must be 'http' or 'https', not {default_scheme!r}")
    text = raw.strip(_TRIM_CHARS)
    try:
        if not text:
            raise ValueError("empty URL")
        if _TAB_OR_NEWLINE.search(text):
            # Browsers would drop it; in a CSV cell it means two cells were merged.
            raise ValueError("contains a tab or a line break")
        url, added = _with_scheme(text, default_scheme)
        try:
            href = normalize_url(url).partition("#")[0]
        except ValueError:
            raise ValueError(_why(url)) from None
    except ValueError as exc:
        raise InvalidURL(f"URL {_show(raw)}: {exc}", code="invalid_url") from None
    warnings = tuple(f"url_{name}" for name in _surprises(url, href, None))
    return Target(href, _host(href), added, warnings)


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
# An input URL already as the parser writes it: http(s), lower case, a host that is a DNS name
# whose last label starts with a letter (never read as an IPv4 address) or a dotted-decimal
# IPv4 address, no userinfo, then only printable ASCII. Its host is read off as it stands.
_PLAIN_INPUT = re.compile(
    r"https?://("
    r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*[a-z](?:[a-z0-9-]*[a-z0-9])?"
    rf"|(?:{_OCTET}\.){{3}}{_OCTET}"
    r")(?::([0-9]{1,5}))?(?:[/?#][!-~]*)?"
)


def input_host(raw: str) -> str:
    """``normalise_input(raw).host``, read off a plain URL without parsing it (indexing a
    million rows spent 4 s in the parser); raises :class:`InvalidURL` as it does."""
    return input_host_and_key(raw)[0]


def input_host_and_key(raw: str) -> tuple[str, str]:
    """:func:`input_host`, and the key rows asking for the same URL share: the URL as sent
    (``without_userinfo(normalise_input(raw).url)``), or a plain URL as it stands. Either way
    equal keys are equal URLs as sent, since a plain URL equal to another's normalised form is
    its own normalised form."""
    m = _PLAIN_INPUT.fullmatch(raw)
    if m is not None and "xn--" not in m[1] and (m[2] is None or int(m[2]) <= 65535):
        return m[1], raw
    target = normalise_input(raw)
    return target.host, without_userinfo(target.url)


# --------------------------------------------------------------------------- Locations


def _decode(location: str | bytes) -> str:
    if isinstance(location, str):
        return location
    # Header bytes are read as UTF-8; bytes that are not (latin-1 and the like) are sent back
    # percent-encoded byte for byte, as curl, Chromium and Scrapy's RedirectMiddleware do.
    text = location.decode("utf-8", "surrogateescape")
    if text.isascii():
        return text
    return _SURROGATE.sub(lambda m: f"%{ord(m.group()) - 0xDC00:02X}", text)


def resolve_location(base: str, location: str | bytes | None) -> Resolved:
    """Resolve a redirect's Location header against the URL that answered with it.

    Returns the URL a browser requests next (without a fragment) and warnings. Raises
    :class:`InvalidURL` with code ``bad_location`` (missing, empty, unparsable) or
    ``unsupported_scheme`` (not http/https).
    """
    if location is None:
        raise InvalidURL("the Location header is missing", code="bad_location")
    text = _decode(location).strip(_C0_SPACE)
    if not text:
        raise InvalidURL(
            f"the Location header is empty ({_show(location)}): a browser would request "
            f"{base.partition('#')[0]} again",
            code="bad_location",
            warnings=("location_empty",),
        )
    try:
        href = join_url(base, text)
    except ValueError:
        raise InvalidURL(
            f"Location {_show(location)}: {_why(_absolute(base, text))}",
            code="bad_location",
        ) from None
    if not href.startswith(_HTTP_PREFIXES):
        scheme = href.partition(":")[0]
        raise InvalidURL(
            f"Location {_show(location)}: scheme {scheme!r} is not http or https",
            code="unsupported_scheme",
        )
    href = href.partition("#")[0]
    return Resolved(href, tuple(f"location_{name}" for name in _surprises(text, href, base)))


# HTML's "shared declarative refresh steps" up to the URL string ("5; url='/x'", "0,/x",
# "0 /x"); _REFRESH_URL_KEY is the spec's U, R, L, "=" steps, each optional in turn.
_WS = "[\\t\\n\\f\\r ]"
_REFRESH_RE = re.compile(
    rf"{_WS}*(?:[0-9]+|(?=\.))[0-9.]*(?:(?=[;,\t\n\f\r ]){_WS}*[;,]?{_WS}*(.*))?\Z", re.DOTALL
)
_REFRESH_URL_KEY = re.compile(rf"[Uu](?:[Rr](?:[Ll]{_WS}*(?:={_WS}*)?)?)?")


def refresh_target(content: str) -> str | None:
    """The URL string of a ``<meta http-equiv="refresh" content=...>``, as browsers read it.

    ``None`` when ``content`` is not a refresh or names no URL (the page refreshes itself).
    Resolve the result against the document's base URL with :func:`resolve_location`.
    """
    match = _REFRESH_RE.match(content)
    if match is None or not match.group(1):
        return None
    rest = match.group(1)
    key = _REFRESH_URL_KEY.match(rest)
    if key is not None:
        rest = rest[key.end() :]
    if rest[:1] in {"'", '"'}:
        rest = rest[1:].partition(rest[0])[0]
    return rest or None


# --------------------------------------------------------------------------- hops and hosts


def _parts(url: str) -> re.Match[str]:
    """scheme, userinfo, host, port, path, query of a URL as ``normalise_input`` gives it."""
    match = _HREF_RE.match(normalise_input(url).url)
    assert match is not None  # normalise_input returns http(s) serialisations
    return match


def _parts_of(url: str) -> re.Match[str]:
    try:
        return _parts(url)
    except InvalidURL as exc:
        raise InvalidURL(str(exc), code="invalid_url") from None


def _drop_www(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


def hop_kind(src: str, dst: str) -> str:
    """Classify a redirect from ``src`` to ``dst`` by what changed.

    ``same``, ``cross_host``, or "+"-joined parts of ``scheme``, ``host``, ``slash``,
    ``path`` in that order (e.g. ``scheme+host``). Raises :class:`InvalidURL` for a URL
    that cannot be parsed.
    """
    a_scheme, _, a_host, a_port, a_path, a_query = _parts_of(src).groups()
    b_scheme, _, b_host, b_port, b_path, b_query = _parts_of(dst).groups()
    kinds: list[str] = []
    if a_scheme != b_scheme:
        kinds.append("scheme")
    if a_host != b_host or a_port != b_port:
        if _drop_www(a_host) != _drop_www(b_host):
            return "cross_host"
        kinds.append("host")
    if a_path != b_path or a_query != b_query:
        slash_only = a_query == b_query and (a_path + "/" == b_path or b_path + "/" == a_path)
        kinds.append("slash" if slash_only else "path")
    return "+".join(kinds) if kinds else "same"


def host_key(url: str) -> str:
    """The host as Scrapy's download slot sees it (``urlparse(url).hostname``), IDNA-encoded.

    ``""`` when the URL has no host. Meant for absolute URLs, cheap enough to call per row.
    """
    match = _HOSTINFO_RE.match(url)
    if match is None:
        return ""
    hostinfo = match.group(1).rpartition("@")[2]
    _, bracket, bracketed = hostinfo.partition("[")
    host = bracketed.partition("]")[0] if bracket else hostinfo.partition(":")[0]
    if host.isascii():
        return host.lower()
    return idna_to_ascii(host).decode("ascii", "replace") or host.lower()


def without_userinfo(url: str) -> str:
    """``url`` (as this module returns it) without ``user:password@``: what goes on the wire.

    Scrapy's HTTP/1.1 handler refuses a URL with userinfo; browsers send the request to the host
    (with the credentials as Basic authorization, which urlcheck does not send on).
    """
    scheme, sep, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    if "@" not in authority:
        return url
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{tail}"


def redacted(url: str) -> str:
    """``url`` for logs, messages and job files: without its user and password, and without a
    ``password`` in its query (redis-py reads one there). Any scheme (a proxy's, a Redis URL),
    even a URL that does not parse: everything up to the last ``@`` goes, so a password with an
    unescaped ``/``, ``?`` or ``@`` goes too (a path or query with an ``@`` goes with it).
    """
    scheme, sep, rest = url.strip().partition("://")
    if not sep:
        scheme, rest = "", scheme
    rest = rest.rpartition("@")[2]
    before, question, query = rest.partition("?")
    if question:
        kept = [p for p in query.split("&") if p.partition("=")[0].lower() != "password"]
        rest = f"{before}?{'&'.join(kept)}" if kept else before
    return f"{scheme}{sep}{rest}"


def _normalise_escapes(part: str) -> str:
    if "%" not in part:
        return part

    def repl(match: re.Match[str]) -> str:
        char = chr(int(match.group(0)[1:], 16))
        return char if char in _UNRESERVED else match.group(0).upper()

    return _PERCENT_ESCAPE.sub(repl, part)


def comparable(url: str, *, ignore_trailing_slash: bool = True) -> str:
    """A form of ``url`` for equality tests (see docs/urls-and-verdicts.md).

    Raises :class:`InvalidURL` (code ``invalid_url``) for a URL that cannot be parsed.
    """
    scheme, _, host, port, path, query = _parts_of(url).groups()
    path = _normalise_escapes(path)
    if ignore_trailing_slash and path.endswith("/"):
        path = path[:-1]
    netloc = f"{host}:{port}" if port else host
    if not query:
        return f"{scheme}://{netloc}{path}"
    query = "&".join(sorted(_normalise_escapes(p) for p in query.split("&")))
    return f"{scheme}://{netloc}{path}?{query}"


def same_target(a: str, b: str, *, ignore_trailing_slash: bool = True) -> bool:
    """Whether two URLs name the same target; a URL that cannot be parsed equals nothing."""
    try:
        return comparable(a, ignore_trailing_slash=ignore_trailing_slash) == comparable(
            b, ignore_trailing_slash=ignore_trailing_slash
        )
    except InvalidURL:
        return False
