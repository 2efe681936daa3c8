"""URL rules of urlcheck: input normalisation, Location resolution, hop kinds, URL equality.

Pure functions (stdlib and ``idna`` only, no Scrapy), documented in docs/urls-and-verdicts.md.
Every URL this module returns is a fixed point of ``w3lib.url.safe_url_string``, which
``scrapy.Request`` applies to its URL, so the URL a request carries is the one we computed.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import quote, unquote_to_bytes, urljoin

import idna

__all__ = [
    "InvalidURL",
    "Target",
    "comparable",
    "hop_kind",
    "host_key",
    "normalise_input",
    "resolve_location",
    "same_target",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}

# Unicode whitespace (every str.isspace() character), C0 controls, DEL and the zero-width
# characters that spreadsheets and web pages leave around pasted URLs.
_TRIM_CHARS = (
    "".join(map(chr, range(0x21)))
    + "\x7f\x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
    + "\u180e\u200b\u200c\u200d\u2060\ufeff"
)
_TAB_OR_NEWLINE = re.compile("[\t\n\r]")
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# "example.com:8080/x" starts like a scheme but is a host and a port.
_PORT_LIKE = re.compile(r"[0-9]+(?:[/?#]|\Z)")
_MISTYPED_SCHEME = re.compile(r"https?/", re.IGNORECASE)
# scheme, authority, path, query; the fragment is left out.
_ABSOLUTE_RE = re.compile(r"([^:]*)://([^/?#]*)([^?#]*)(?:\?([^#]*))?")
_HOSTINFO_RE = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*:)?//([^/?#]*)")

# Characters kept as they are, the sets w3lib's safe_url_string keeps for http(s) URLs
# (the query one also escapes "'", as the URL standard does for special schemes).
_PATH_SAFE = "!$&'()*+,/:;=@%"
_QUERY_SAFE = "!$&()*+,/:;=?@%"
_USERINFO_SAFE = "!$&'()*+,"
_PATH_NEEDS_WORK = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,/:;=@%]|%(?![0-9A-Fa-f]{2})")
_QUERY_NEEDS_WORK = re.compile(r"[^A-Za-z0-9\-._~!$&()*+,/:;=?@%]|%(?![0-9A-Fa-f]{2})")
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

_HOST_RE = re.compile(r"(?:[a-z0-9_\-]{1,63}\.)*[a-z0-9_\-]{1,63}\.?\Z")
# The URL standard reads a host whose last label is a number as an IPv4 address.
_ENDS_IN_NUMBER = re.compile(r"(?:\A|\.)(?:[0-9]+|0x[0-9a-f]*)\.?\Z")
_SHOW_MAX = 200


class InvalidURL(ValueError):  # noqa: N818 (name fixed by the interface)
    """A URL or Location that cannot be requested.

    ``code`` is ``invalid_url`` (an input URL), ``bad_location`` (a Location header that is
    missing, empty or unparsable) or ``unsupported_scheme`` (a Location to a scheme other
    than http/https). ``str(error)`` is a message naming the value.
    """

    def __init__(self, message: str, *, code: str = "invalid_url") -> None:
        super().__init__(message)
        self.code = code

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_invalid_url, (str(self), self.code))


def _rebuild_invalid_url(message: str, code: str) -> InvalidURL:
    return InvalidURL(message, code=code)


class _BadURLError(Exception):
    """What is wrong with a URL; the public functions add the value and the error code."""


@dataclass(frozen=True, slots=True)
class Target:
    """A normalised input URL. ``host`` equals ``host_key(url)``."""

    url: str
    host: str
    scheme_added: bool


class _Parts(NamedTuple):
    scheme: str
    userinfo: str  # encoded, without "@"; "" when absent
    host: str  # lowercase ASCII; an IPv6 address without brackets, as urlparse().hostname
    port: int | None  # None when absent or the scheme's default
    path: str  # encoded, starts with "/"
    query: str | None  # encoded, without "?"; None when absent or empty

    def url(self) -> str:
        netloc = f"[{self.host}]" if ":" in self.host else self.host
        if self.port is not None:
            netloc = f"{netloc}:{self.port}"
        if self.userinfo:
            netloc = f"{self.userinfo}@{netloc}"
        if self.query is None:
            return f"{self.scheme}://{netloc}{self.path}"
        return f"{self.scheme}://{netloc}{self.path}?{self.query}"


def _show(value: str | bytes) -> str:
    shown = repr(value)
    return shown if len(shown) <= _SHOW_MAX else f"{shown[: _SHOW_MAX - 3]}..."


def _trim(raw: str) -> str:
    return raw.strip(_TRIM_CHARS)


# --------------------------------------------------------------------------- hosts


@functools.lru_cache(maxsize=1 << 16)
def _ascii_host(host: str) -> str:
    # Hosts repeat across rows of big files, so the IDNA work is cached per distinct host.
    ascii_host = host.lower() if host.isascii() else _idna_encode(host)
    if len(ascii_host.rstrip(".")) > 253 or not _HOST_RE.match(ascii_host):
        if " " in host:
            raise _BadURLError(f"host {host!r} contains a space")
        raise _BadURLError(f"host {host!r} is not a valid host name")
    if _ENDS_IN_NUMBER.search(ascii_host):
        try:
            ipaddress.IPv4Address(ascii_host.rstrip("."))
        except ValueError:
            raise _BadURLError(f"host {host!r} is not a valid IPv4 address") from None
        return ascii_host.rstrip(".")
    if "xn--" in ascii_host:
        for label in ascii_host.rstrip(".").split("."):
            if label.startswith("xn--") and not _valid_a_label(label):
                raise _BadURLError(f"host {host!r} has an invalid punycode label {label!r}")
    return ascii_host


def _idna_encode(host: str) -> str:
    # UTS 46 non-transitional processing is what browsers do ("faß.de" -> xn--fa-hia.de).
    # It refuses symbols such as emoji that browsers still accept ("i❤.ws"), so those fall
    # back to IDNA 2003, the codec Scrapy itself uses.
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError:
        pass
    try:
        return unicodedata.normalize("NFKC", host).lower().encode("idna").decode("ascii")
    except UnicodeError:
        raise _BadURLError(f"host {host!r} is not a valid internationalised domain name") from None


def _valid_a_label(label: str) -> bool:
    try:
        idna.decode(label)
    except idna.IDNAError:
        try:
            label.encode("ascii").decode("idna")
        except UnicodeError:
            return False
    return True


def _ipv6_host(text: str) -> str:
    if "%" in text:
        raise _BadURLError(f"IPv6 address [{text}] has a zone identifier")
    try:
        return ipaddress.IPv6Address(text).compressed
    except ValueError:
        raise _BadURLError(f"[{text}] is not a valid IPv6 address") from None


# --------------------------------------------------------------------------- paths


def _encode(part: str, needs_work: re.Pattern[str], safe: str) -> str:
    if needs_work.search(part) is None:
        return part
    if "%" in part:
        part = _STRAY_PERCENT.sub("%25", part)
    # surrogateescape: undecodable bytes of a Location go out as the server sent them.
    return quote(part, safe=safe, errors="surrogateescape")


def _remove_dot_segments(path: str) -> str:
    # RFC 3986 section 5.2.4, as browsers and urljoin() apply it.
    segments = path.split("/")
    out: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in {".", ".."}:
        out.append("")
    return "/" + "/".join(out)


def _encode_userinfo(userinfo: str) -> str:
    user, colon, password = userinfo.partition(":")
    if not user and not password:
        return ""
    # Unquote then quote, as safe_url_string does, so the result is its fixed point.
    user = quote(unquote_to_bytes(user), safe=_USERINFO_SAFE)
    if not colon:
        return user
    return f"{user}:{quote(unquote_to_bytes(password), safe=_USERINFO_SAFE)}"


# --------------------------------------------------------------------------- parsing


def _split(url: str) -> _Parts:
    """Parse and normalise an absolute http(s) URL ("scheme://..."; scheme checked by caller)."""
    match = _ABSOLUTE_RE.match(url)
    assert match is not None  # the pattern matches any string with "://"
    scheme, authority, path, query = match.groups()
    scheme = scheme.lower()

    userinfo = ""
    if "@" in authority:
        raw_userinfo, _, authority = authority.rpartition("@")
        userinfo = _encode_userinfo(raw_userinfo)

    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise _BadURLError("the IPv6 address has no closing ']'")
        host = _ipv6_host(authority[1:close])
        after = authority[close + 1 :]
        if after and not after.startswith(":"):
            raise _BadURLError(f"unexpected {after!r} after the IPv6 address")
        port_text = after[1:]
    else:
        raw_host, _, port_text = authority.partition(":")
        if not raw_host:
            raise _BadURLError("no host")
        if ":" in port_text:
            raise _BadURLError(f"host {authority!r} has more than one ':'")
        host = _ascii_host(raw_host)

    port: int | None = None
    if port_text:
        if not (port_text.isascii() and port_text.isdigit()):
            raise _BadURLError(f"port {port_text!r} is not a number")
        port = int(port_text)
        if not 0 < port <= 65535:
            raise _BadURLError(f"port {port} is out of range 1-65535")
        if port == _DEFAULT_PORTS[scheme]:
            port = None

    path = _encode(path, _PATH_NEEDS_WORK, _PATH_SAFE) if path else "/"
    if "/." in path:
        path = _remove_dot_segments(path)
    if query is not None:
        query = _encode(query, _QUERY_NEEDS_WORK, _QUERY_SAFE) or None
    return _Parts(scheme, userinfo, host, port, path, query)


def _with_scheme(text: str, default_scheme: str) -> tuple[str, bool]:
    """Return ``text`` as "scheme://..." and whether the scheme was added."""
    if text.startswith("//"):
        return f"{default_scheme}:{text}", True
    match = _SCHEME_RE.match(text)
    if match is None:
        if _MISTYPED_SCHEME.match(text):
            raise _BadURLError("the scheme is mistyped (expected 'http://' or 'https://')")
        return f"{default_scheme}://{text}", True
    rest = text[match.end() :]
    if not rest.startswith("//") and _PORT_LIKE.match(rest):
        return f"{default_scheme}://{text}", True
    scheme = match.group(1).lower()
    if scheme not in _DEFAULT_PORTS:
        raise _BadURLError(f"scheme {scheme!r} is not http or https")
    if not rest.startswith("//"):
        raise _BadURLError(f"'//' is missing after '{match.group(0)}'")
    return text, False


def _parse_input(raw: str, default_scheme: str = "https") -> tuple[_Parts, bool]:
    text = _trim(raw)
    if not text:
        raise _BadURLError("empty URL")
    if _TAB_OR_NEWLINE.search(text):
        raise _BadURLError("contains a tab or a line break")
    url, added = _with_scheme(text, default_scheme)
    return _split(url), added


def _parts_of(url: str, what: str = "URL") -> _Parts:
    try:
        return _parse_input(url)[0]
    except _BadURLError as exc:
        raise InvalidURL(f"{what} {_show(url)}: {exc}", code="invalid_url") from None


# --------------------------------------------------------------------------- public API


def normalise_input(raw: str, *, default_scheme: str = "https") -> Target:
    """Normalise a URL from the input file into the URL to request first.

    Raises :class:`InvalidURL` (code ``invalid_url``) when it cannot be checked.
    """
    if default_scheme not in _DEFAULT_PORTS:
        raise ValueError(f"default_scheme must be 'http' or 'https', not {default_scheme!r}")
    try:
        parts, added = _parse_input(raw, default_scheme)
    except _BadURLError as exc:
        raise InvalidURL(f"URL {_show(raw)}: {exc}", code="invalid_url") from None
    return Target(parts.url(), parts.host, added)


def resolve_location(base: str, location: str | bytes | None) -> str:
    """Resolve a redirect's Location header against the URL that answered with it.

    Returns the normalised URL to request next, without a fragment. Raises
    :class:`InvalidURL` with code ``bad_location`` (missing, empty, unparsable) or
    ``unsupported_scheme`` (not http/https).
    """
    if location is None:
        raise InvalidURL("the Location header is missing", code="bad_location")
    # Undecodable bytes (latin-1 and the like) survive as surrogates and are percent-encoded
    # byte for byte, the way curl and Scrapy's RedirectMiddleware send them back.
    text = location.decode("utf-8", "surrogateescape") if isinstance(location, bytes) else location
    text = _TAB_OR_NEWLINE.sub("", _trim(text))
    if not text:
        raise InvalidURL(f"the Location header is empty: {_show(location)}", code="bad_location")
    try:
        base_parts = _parse_input(base)[0]
        match = _SCHEME_RE.match(text)
        if match is not None:
            scheme = match.group(1).lower()
            if scheme not in _DEFAULT_PORTS:
                raise InvalidURL(
                    f"Location {_show(location)}: scheme {scheme!r} is not http or https",
                    code="unsupported_scheme",
                )
            rest = text[match.end() :]
            if rest.startswith("//"):
                absolute = f"{scheme}:{rest}"
            elif scheme == base_parts.scheme:
                # "http:/x" on an http page is relative, as in browsers and urljoin().
                absolute = urljoin(base_parts.url(), rest)
            else:
                raise _BadURLError(f"'//' is missing after '{match.group(0)}'")
        elif text.startswith("//"):
            absolute = f"{base_parts.scheme}:{text}"
        else:
            absolute = urljoin(base_parts.url(), text)
        return _split(absolute).url()
    except _BadURLError as exc:
        raise InvalidURL(f"Location {_show(location)}: {exc}", code="bad_location") from None


def _drop_www(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


def hop_kind(src: str, dst: str) -> str:
    """Classify a redirect from ``src`` to ``dst`` by what changed.

    ``same``, ``cross_host``, or "+"-joined parts of ``scheme``, ``host``, ``slash``,
    ``path`` in that order (e.g. ``scheme+host``). Raises :class:`InvalidURL` for a URL
    that cannot be parsed.
    """
    a, b = _parts_of(src), _parts_of(dst)
    kinds: list[str] = []
    if a.scheme != b.scheme:
        kinds.append("scheme")
    if a.host != b.host or a.port != b.port:
        if _drop_www(a.host) != _drop_www(b.host):
            return "cross_host"
        kinds.append("host")
    if a.path != b.path or a.query != b.query:
        slash_only = a.query == b.query and (a.path + "/" == b.path or b.path + "/" == a.path)
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
    try:
        return _ascii_host(host)
    except _BadURLError:
        return host.lower()


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
    parts = _parts_of(url)
    path = _normalise_escapes(parts.path)
    if ignore_trailing_slash and path.endswith("/"):
        path = path[:-1]
    query = None
    if parts.query:
        query = "&".join(sorted(_normalise_escapes(p) for p in parts.query.split("&")))
    return parts._replace(userinfo="", path=path, query=query).url()


def same_target(a: str, b: str, *, ignore_trailing_slash: bool = True) -> bool:
    """Whether two URLs name the same target; a URL that cannot be parsed equals nothing."""
    try:
        return comparable(a, ignore_trailing_slash=ignore_trailing_slash) == comparable(
            b, ignore_trailing_slash=ignore_trailing_slash
        )
    except InvalidURL:
        return False
