"""A proxy: where it is, how to log in, and how much traffic it may take.

Credentials are kept out of every string form of a proxy: ``repr``, ``str``, ``display`` and
``url`` show ``host:port`` only, and the messages of ``ProxySpecError`` say what is wrong without
any part of the spec (a line that failed to parse may have its password anywhere: the caller
names where the line is, by file and line number).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from urllib.parse import unquote, urlsplit

__all__ = ["Credentials", "Proxy", "ProxySpecError", "parse_proxies"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_OPTION_NAMES = frozenset({"weight", "tags", "max_concurrent", "id"})
# A pool option at the end of a vendor-form line (its password may hold spaces).
_TRAILING_OPTION = re.compile(r"\s+(?:weight|tags|max_concurrent|id)=\S*\Z")
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOST_NAME = re.compile(rf"(?=.{{1,254}}\Z){_LABEL}(?:\.{_LABEL})*\.?\Z")
_FORMS = "expected scheme://[user:password@]host:port, host:port or host:port:user:password"


class ProxySpecError(ValueError):
    """A proxy spec that cannot be used. The message never contains credentials."""


class Credentials:
    """User and password for a proxy. Unpacks as ``user, password``; prints as redacted."""

    __slots__ = ("_password", "_user")

    def __init__(self, user: str, password: str) -> None:
        self._user = user
        self._password = password

    @property
    def user(self) -> str:
        return self._user

    @property
    def password(self) -> str:
        return self._password

    def __iter__(self) -> Iterator[str]:
        yield self._user
        yield self._password

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Credentials):
            return NotImplemented
        return (self._user, self._password) == (other._user, other._password)

    def __hash__(self) -> int:
        return hash((self._user, self._password))

    def __repr__(self) -> str:
        return "Credentials(<redacted>)"

    __str__ = __repr__

    def __copy__(self) -> Credentials:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Credentials:
        return self

    def __reduce__(self) -> str | tuple[object, ...]:
        # Pickling would be the one quiet way to copy a secret into a file or a queue.
        raise TypeError("Credentials cannot be pickled")


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Proxy:
    """One forward proxy: ``scheme://host:port`` plus optional credentials, weight, tags and cap.

    Build it with ``Proxy.parse`` (a spec line or mapping) or ``Proxy.from_url``.
    """

    __slots__ = (
        "_credentials",
        "display",
        "host",
        "id",
        "max_concurrent",
        "port",
        "scheme",
        "tags",
        "url",
        "weight",
    )

    id: str
    scheme: str
    host: str
    port: int
    weight: float
    tags: frozenset[str]
    max_concurrent: int | None
    display: str
    url: str
    _credentials: Credentials | None

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int,
        *,
        credentials: Credentials | None = None,
        weight: float = 1.0,
        tags: Iterable[str] = (),
        max_concurrent: int | None = None,
        id: str | None = None,
    ) -> None:
        if scheme not in _DEFAULT_PORTS:
            raise ProxySpecError("the scheme must be http or https")
        if not host:
            raise ProxySpecError("the proxy spec has no host")
        if not _is_host(host):
            raise ProxySpecError("the host is not a host name or an IP address")
        if not 0 < port < 65536:
            raise ProxySpecError("the port is out of range (1-65535)")
        if not (isinstance(weight, int | float) and math.isfinite(weight) and weight > 0):
            raise ProxySpecError("weight must be a positive number")
        if max_concurrent is not None and max_concurrent < 0:
            raise ProxySpecError("max_concurrent must be >= 0")
        display = _host_port(host, port)
        set_ = object.__setattr__
        set_(self, "scheme", scheme)
        set_(self, "host", host)
        set_(self, "port", port)
        set_(self, "_credentials", credentials)
        set_(self, "weight", float(weight))
        set_(self, "tags", frozenset(t for t in tags if t))
        set_(self, "max_concurrent", max_concurrent)
        set_(self, "display", display)
        set_(self, "url", f"{scheme}://{display}")
        set_(self, "id", id or _default_id(display, credentials))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Proxy is immutable")

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        weight: float = 1.0,
        tags: Iterable[str] = (),
        max_concurrent: int | None = None,
        id: str | None = None,
    ) -> Proxy:
        """Parse ``scheme://[user:password@]host[:port]``; credentials may be %-escaped."""
        try:
            parts = urlsplit(url.strip())
            host = parts.hostname or ""
            port = parts.port
        except ValueError:
            raise ProxySpecError(f"unparseable proxy URL ({_FORMS})") from None
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise ProxySpecError("the scheme must be http or https")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ProxySpecError("a proxy URL has no path or query")
        credentials = None
        if parts.username is not None or parts.password is not None:
            credentials = Credentials(unquote(parts.username or ""), unquote(parts.password or ""))
        return cls(
            scheme,
            host,
            port if port is not None else _DEFAULT_PORTS.get(scheme, 0),
            credentials=credentials,
            weight=weight,
            tags=tags,
            max_concurrent=max_concurrent,
            id=id,
        )

    @classmethod
    def parse(cls, spec: str | Mapping[str, object]) -> Proxy:
        """Parse a spec line or a mapping.

        Line: ``URL [weight=2] [tags=us,dc] [max_concurrent=4] [id=name]``, where URL is
        ``scheme://[user:password@]host[:port]`` (a space in the password %-escaped: ``%20``),
        or the vendor form ``host:port[:user:password]`` (http): its password is the rest of
        the line up to the options, colons and spaces included, taken as written.
        Mapping: ``{"url": ..., "weight": ..., "tags": [...], "max_concurrent": ..., "id": ...}``.
        """
        vendor: tuple[str, int, Credentials | None] | None = None
        if isinstance(spec, str):
            text = spec.strip()
            if "://" in (text.split(None, 1) or [""])[0]:
                url, *words = text.split()
            else:
                url, words = _without_options(text)
                vendor = _vendor_form(url)
            options: dict[str, object] = {}
            for word in words:
                name, eq, value = word.partition("=")
                if not eq:
                    raise ProxySpecError(
                        "an option needs '=' (a space in a proxy URL? write it %-escaped: %20)"
                    )
                options[name] = value
        else:
            options = dict(spec)
            raw_url = options.pop("url", None)
            if not isinstance(raw_url, str):
                raise ProxySpecError("proxy mapping needs a 'url' string")
            url = raw_url
        if set(options) - _OPTION_NAMES:
            raise ProxySpecError(f"unknown options (known: {', '.join(sorted(_OPTION_NAMES))})")
        try:
            weight = float(options.get("weight", 1.0))  # type: ignore[arg-type]
            raw_cap = options.get("max_concurrent")
            cap = None if raw_cap in (None, "") else int(raw_cap)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise ProxySpecError("bad weight or max_concurrent") from None
        raw_tags = options.get("tags", ())
        tags = raw_tags.split(",") if isinstance(raw_tags, str) else raw_tags
        if not isinstance(tags, Iterable):
            raise ProxySpecError("tags must be a list")
        raw_id = options.get("id")
        ident = str(raw_id) if raw_id else None
        names = [str(t).strip() for t in tags]
        if vendor is not None:
            host, port, credentials = vendor
            return cls(
                "http",
                host,
                port,
                credentials=credentials,
                weight=weight,
                tags=names,
                max_concurrent=cap,
                id=ident,
            )
        return cls.from_url(url, weight=weight, tags=names, max_concurrent=cap, id=ident)

    @property
    def credentials(self) -> Credentials | None:
        return self._credentials

    @property
    def auth_header(self) -> str | None:
        """The ``Proxy-Authorization`` value (Basic), or None without credentials."""
        if self._credentials is None:
            return None
        raw = f"{self._credentials.user}:{self._credentials.password}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")

    def __repr__(self) -> str:
        if self.id == self.display:
            return f"Proxy({self.display!r})"
        return f"Proxy({self.display!r}, id={self.id!r})"

    def __str__(self) -> str:
        return self.display

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Proxy):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[object, ...]:
        return (
            self.id,
            self.url,
            self._credentials,
            self.weight,
            self.tags,
            self.max_concurrent,
        )

    def __copy__(self) -> Proxy:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Proxy:
        return self

    def __reduce__(self) -> str | tuple[object, ...]:
        # Keep proxies out of pickled request queues: pass `id` around instead.
        raise TypeError("Proxy cannot be pickled (it may hold credentials); pass its id")


def _is_host(host: str) -> bool:
    """An IP address or a DNS name (IDNA for non-ASCII): nothing a proxy URL could not mean."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return True
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    return _HOST_NAME.match(ascii_host) is not None


def _without_options(line: str) -> tuple[str, list[str]]:
    """A vendor-form line's body and its trailing pool options."""
    words: list[str] = []
    while (found := _TRAILING_OPTION.search(line)) is not None:
        words.insert(0, found.group().strip())
        line = line[: found.start()]
    return line, words


def _vendor_form(body: str) -> tuple[str, int, Credentials | None]:
    """``host:port`` or ``host:port:user:password`` (an IPv6 host in brackets); the password is
    all after the third colon."""
    if body.startswith("["):
        host, bracket, rest = body[1:].partition("]")
        if not bracket or not rest.startswith(":"):
            raise ProxySpecError(f"an IPv6 host needs its brackets and a port ({_FORMS})")
        rest = rest[1:]
    else:
        host, colon, rest = body.partition(":")
        if not colon:
            raise ProxySpecError(f"not a proxy ({_FORMS})")
    fields = rest.split(":", 2)
    if not fields[0].isascii() or not fields[0].isdigit():
        raise ProxySpecError(f"the port is not a number ({_FORMS})")
    if len(fields) == 2:
        raise ProxySpecError(f"a user without a password ({_FORMS})")
    credentials = Credentials(fields[1], fields[2]) if len(fields) == 3 else None
    return host.lower(), int(fields[0]), credentials


def _default_id(display: str, credentials: Credentials | None) -> str:
    # Gateways often serve many accounts on one host:port, so credentials must tell proxies apart;
    # a 24-bit one-way tag does that without giving anything usable away.
    if credentials is None:
        return display
    digest = hashlib.blake2b(
        f"{credentials.user}\0{credentials.password}".encode(), digest_size=3, person=b"urlcheck"
    ).hexdigest()
    return f"{display}#{digest}"


def parse_proxies(lines: Iterable[str]) -> list[Proxy]:
    """Parse spec lines, skipping blanks and ``#`` comments."""
    proxies = []
    for line in lines:
        text = line.strip()
        if text and not text.startswith("#"):
            proxies.append(Proxy.parse(text))
    return proxies
