"""A proxy: where it is, how to log in, and how much traffic it may take.

Credentials are kept out of every string form of a proxy: ``repr``, ``str``, ``display``,
``url`` and the messages of ``ProxySpecError`` show ``host:port`` only.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Iterable, Iterator, Mapping
from urllib.parse import unquote, urlsplit

from urlcheck.check.urls import redacted

__all__ = ["Credentials", "Proxy", "ProxySpecError", "parse_proxies"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_OPTION_NAMES = frozenset({"weight", "tags", "max_concurrent", "id"})


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
        where = _host_port(host, port) if host else "<no host>"
        if scheme not in _DEFAULT_PORTS:
            raise ProxySpecError(f"proxy {where}: scheme must be http or https")
        if not host:
            raise ProxySpecError("proxy spec has no host")
        if not 0 < port < 65536:
            raise ProxySpecError(f"proxy {where}: port out of range")
        if not (isinstance(weight, int | float) and math.isfinite(weight) and weight > 0):
            raise ProxySpecError(f"proxy {where}: weight must be a positive number")
        if max_concurrent is not None and max_concurrent < 0:
            raise ProxySpecError(f"proxy {where}: max_concurrent must be >= 0")
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
            raise ProxySpecError(f"unparseable proxy URL {redacted(url)!r}") from None
        scheme = parts.scheme.lower()
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ProxySpecError(f"proxy {redacted(url)!r}: a proxy URL has no path or query")
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

        Line: ``URL [weight=2] [tags=us,dc] [max_concurrent=4] [id=name]``.
        Mapping: ``{"url": ..., "weight": ..., "tags": [...], "max_concurrent": ..., "id": ...}``.
        """
        if isinstance(spec, str):
            url, *words = spec.split()
            options: dict[str, object] = {}
            for word in words:
                name, eq, value = word.partition("=")
                if not eq:
                    raise ProxySpecError(f"proxy {redacted(url)!r}: option {name!r} needs '='")
                options[name] = value
        else:
            options = dict(spec)
            raw_url = options.pop("url", None)
            if not isinstance(raw_url, str):
                raise ProxySpecError("proxy mapping needs a 'url' string")
            url = raw_url
        unknown = set(options) - _OPTION_NAMES
        if unknown:
            raise ProxySpecError(f"proxy {redacted(url)!r}: unknown options {sorted(unknown)}")
        try:
            weight = float(options.get("weight", 1.0))  # type: ignore[arg-type]
            raw_cap = options.get("max_concurrent")
            cap = None if raw_cap in (None, "") else int(raw_cap)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise ProxySpecError(f"proxy {redacted(url)!r}: bad weight or max_concurrent") from None
        raw_tags = options.get("tags", ())
        tags = raw_tags.split(",") if isinstance(raw_tags, str) else raw_tags
        if not isinstance(tags, Iterable):
            raise ProxySpecError(f"proxy {redacted(url)!r}: tags must be a list")
        raw_id = options.get("id")
        return cls.from_url(
            url,
            weight=weight,
            tags=(str(t).strip() for t in tags),
            max_concurrent=cap,
            id=str(raw_id) if raw_id else None,
        )

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
