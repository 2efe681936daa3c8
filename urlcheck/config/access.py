"""What some sites ask of their visitors, per host: extra headers (``URLCHECK_HEADERS``), cookies
(``URLCHECK_COOKIES``) and basic auth (``URLCHECK_AUTH``), parsed once and validated.

Each is a mapping from a host key to what that host gets. A key is a host name or address,
optionally with a port (``staging.example:8443``) or a scheme (``https://staging.example``) to
narrow it; only that host gets it, never its subdomains. ``*`` (every host) is allowed for
headers alone. Every hop of a chain is its own request, so a redirect to another host gets that
host's extras or none: an ``Authorization`` or ``Cookie`` never follows a redirect off its host.

Values are secrets: errors name the setting, the host key and the header or cookie name, never a
value, and :meth:`SiteAccess.described` (what meta.json records) keeps names only.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from urlcheck.check.urls import host_key
from urlcheck.config.reader import ConfigError

if TYPE_CHECKING:
    from urlcheck.config.reader import Settings

__all__ = ["HostRule", "SiteAccess", "SiteExtras"]

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 field names, RFC 6265 cookie names
_COOKIE_VALUE = re.compile(r'"?[\x21\x23-\x2B\x2D-\x3A\x3C-\x5B\x5D-\x7E]*"?')  # RFC 6265 4.1.1
# Headers that frame the message or belong to a hop: set by the client, never by a setting.
_FORBIDDEN = frozenset({
    "connection", "content-length", "host", "keep-alive", "proxy-authorization",
    "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
})  # fmt: skip
_CREDENTIAL_HEADERS = frozenset({"authorization", "cookie"})
EVERY_HOST = "*"


@dataclass(frozen=True, slots=True)
class HostRule:
    """Which requests a host key names."""

    key: str  # as the user wrote it (for errors and meta.json)
    host: str  # "*" for every host
    port: int | None = None
    scheme: str | None = None

    @classmethod
    def parse(cls, setting: str, key: object) -> HostRule:
        text = str(key).strip()
        if text == EVERY_HOST:
            return cls(text, EVERY_HOST)
        try:
            parts = urlsplit(text if "://" in text else f"//{text}")
            port = parts.port
        except ValueError:
            parts, port = None, None
        host = host_key(f"http://{parts.netloc}") if parts is not None else ""
        if (
            parts is None
            or not host
            or parts.path not in ("", "/")
            or parts.query
            or parts.fragment
            or "@" in parts.netloc
            or (parts.scheme and parts.scheme.lower() not in ("http", "https"))
        ):
            raise ConfigError(
                f"setting {setting}: {text!r} is not a host (a host name or address, with an "
                "optional :port or http(s):// in front)"
            )
        return cls(text, host, port, parts.scheme.lower() or None)

    def matches(self, scheme: str, host: str, port: int) -> bool:
        if self.host == EVERY_HOST:
            return True
        return (
            self.host == host
            and (self.port is None or self.port == port)
            and (self.scheme is None or self.scheme == scheme)
        )


@dataclass(frozen=True, slots=True)
class SiteExtras:
    """What one request gets: headers to set, cookies to add, the Authorization header."""

    headers: tuple[tuple[str, str], ...] = ()
    cookies: tuple[tuple[str, str], ...] = ()
    authorization: bytes | None = None

    def __repr__(self) -> str:  # the values are secrets
        names = [name for name, _ in self.headers]
        cookies = [name for name, _ in self.cookies]
        auth = self.authorization is not None
        return f"SiteExtras(headers={names}, cookies={cookies}, authorization={auth})"


@dataclass(frozen=True, slots=True)
class SiteAccess:
    headers: tuple[tuple[HostRule, tuple[tuple[str, str], ...]], ...] = ()
    cookies: tuple[tuple[HostRule, tuple[tuple[str, str], ...]], ...] = ()
    auth: tuple[tuple[HostRule, bytes], ...] = ()

    def __repr__(self) -> str:  # the values are secrets
        return f"SiteAccess({self.described()!r})"

    @property
    def enabled(self) -> bool:
        return bool(self.headers or self.cookies or self.auth)

    @classmethod
    def from_settings(cls, settings: Settings) -> SiteAccess:
        headers = [
            (rule, tuple(_header(rule, name, value) for name, value in fields.items()))
            for rule, fields in _per_host(settings, "URLCHECK_HEADERS", credentials=False)
        ]
        cookies = [
            (rule, tuple(_cookie(rule, name, value) for name, value in fields.items()))
            for rule, fields in _per_host(settings, "URLCHECK_COOKIES", credentials=True)
        ]
        auth = [
            (rule, _basic(rule, value))
            for rule, value in _per_host(settings, "URLCHECK_AUTH", credentials=True, table=False)
        ]
        return cls(tuple(headers), tuple(cookies), tuple(auth))

    def for_request(self, scheme: str, host: str, port: int) -> SiteExtras:
        """What a request to ``scheme://host:port`` gets; later keys win over earlier ones."""
        headers: dict[str, tuple[str, str]] = {}
        for rule, fields in self.headers:
            if rule.matches(scheme, host, port):
                headers.update((name.lower(), (name, value)) for name, value in fields)
        cookies: dict[str, str] = {}
        for rule, pairs in self.cookies:
            if rule.matches(scheme, host, port):
                cookies.update(pairs)
        authorization = None
        for rule, header in self.auth:
            if rule.matches(scheme, host, port):
                authorization = header
        return SiteExtras(tuple(headers.values()), tuple(cookies.items()), authorization)

    def described(self) -> dict[str, Any]:
        """The settings with every value left out (meta.json's effective settings)."""
        return {
            "URLCHECK_HEADERS": {rule.key: [n for n, _ in fields] for rule, fields in self.headers},
            "URLCHECK_COOKIES": {rule.key: [n for n, _ in pairs] for rule, pairs in self.cookies},
            "URLCHECK_AUTH": [rule.key for rule, _ in self.auth],
        }


def _per_host(
    settings: Settings, setting: str, *, credentials: bool, table: bool = True
) -> list[tuple[HostRule, Any]]:
    raw = settings.get(setting)
    if raw is None or raw in ("", {}):
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"setting {setting}: expected a mapping of hosts (JSON with -s, a table in "
            'urlcheck.toml), e.g. {"staging.example": ...}'
        )
    found = []
    for key, value in raw.items():
        rule = HostRule.parse(setting, key)
        if credentials and rule.host == EVERY_HOST:
            raise ConfigError(
                f"setting {setting}: {EVERY_HOST!r} would send credentials to every host the "
                "chains reach; name the hosts"
            )
        if table and not isinstance(value, Mapping):
            raise ConfigError(f"setting {setting}: host {rule.key!r}: expected a mapping of names")
        found.append((rule, value))
    return found


def _text(setting: str, rule: HostRule, what: str, value: object) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ConfigError(f"setting {setting}: host {rule.key!r}: {what} must be text")
    text = str(value)
    if any(c in text for c in "\r\n\0"):
        raise ConfigError(f"setting {setting}: host {rule.key!r}: {what} holds a line break or NUL")
    return text


def _header(rule: HostRule, name: object, value: object) -> tuple[str, str]:
    setting, name = "URLCHECK_HEADERS", str(name)
    if not _TOKEN.fullmatch(name) or name.lower() in _FORBIDDEN:
        raise ConfigError(
            f"setting {setting}: host {rule.key!r}: {name!r} is not a header a setting may set"
        )
    if rule.host == EVERY_HOST and name.lower() in _CREDENTIAL_HEADERS:
        raise ConfigError(
            f"setting {setting}: {name} for every host ('*') would send a credential to every "
            "host the chains reach; name the hosts (or use URLCHECK_AUTH, URLCHECK_COOKIES)"
        )
    return name, _text(setting, rule, f"header {name}", value)


def _cookie(rule: HostRule, name: object, value: object) -> tuple[str, str]:
    setting, name = "URLCHECK_COOKIES", str(name)
    if not _TOKEN.fullmatch(name):
        raise ConfigError(f"setting {setting}: host {rule.key!r}: {name!r} is not a cookie name")
    text = _text(setting, rule, f"cookie {name}", value)
    if not _COOKIE_VALUE.fullmatch(text):
        raise ConfigError(
            f"setting {setting}: host {rule.key!r}: cookie {name}'s value holds a character a "
            "cookie may not (a space, quote, comma, semicolon or backslash)"
        )
    return name, text


def _basic(rule: HostRule, value: object) -> bytes:
    """``"user:password"``, or ``{"user": ..., "password": ...}`` where ``password_env`` may
    name an environment variable holding the password instead."""
    setting = "URLCHECK_AUTH"
    if isinstance(value, str):
        user, colon, password = value.partition(":")
        if not colon:
            raise ConfigError(f"setting {setting}: host {rule.key!r}: expected user:password")
    elif isinstance(value, Mapping):
        user = _text(setting, rule, "user", value.get("user", ""))
        env = value.get("password_env")
        if env is not None:
            password = os.environ.get(str(env), "")
            if not password:
                raise ConfigError(
                    f"setting {setting}: host {rule.key!r}: the environment variable {env!s} "
                    "(password_env) is not set"
                )
        else:
            password = _text(setting, rule, "password", value.get("password", ""))
    else:
        raise ConfigError(
            f"setting {setting}: host {rule.key!r}: expected user:password or a table with user "
            "and password (or password_env)"
        )
    if ":" in user or any(c in user + password for c in "\r\n\0"):
        raise ConfigError(
            f"setting {setting}: host {rule.key!r}: a user may hold no ':' and neither may hold "
            "a line break"
        )
    return b"Basic " + base64.b64encode(f"{user}:{password}".encode())
