"""urlcheck's own settings (``URLCHECK_*``), parsed once into frozen, typed configs.

Each component parses what it needs with :class:`SettingsReader`, which names the bad setting
and the value it got in its error, so ``-s URLCHECK_MAX_HOPS=ten`` fails with one clear line.
Defaults and meanings: docs/settings.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

T = TypeVar("T")

__all__ = ["CheckConfig", "ConfigError", "SettingsReader", "resolve_user_agent"]


class ConfigError(ValueError):
    """A setting has a value urlcheck cannot use; the message names the setting."""


class SettingsReader:
    """Typed, validating access to a Scrapy settings object."""

    def __init__(self, settings: BaseSettings) -> None:
        self._settings = settings

    def _raw(self, name: str, default: Any) -> Any:
        value = self._settings.get(name)
        return default if value is None or value == "" else value

    def _convert(self, name: str, default: T, convert: Callable[[Any], T], kind: str) -> T:
        raw = self._raw(name, default)
        try:
            return convert(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"setting {name}: expected {kind}, got {raw!r}") from None

    def number(self, name: str, default: float, *, minimum: float | None = 0.0) -> float:
        value = self._convert(name, default, float, "a number")
        if math.isnan(value) or (minimum is not None and value < minimum):  # NaN or too small
            raise ConfigError(f"setting {name}: expected a number >= {minimum}, got {value!r}")
        return value

    def integer(self, name: str, default: int, *, minimum: int | None = 0) -> int:
        def to_int(raw: Any) -> int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError(raw)
            return int(raw)

        value = self._convert(name, default, to_int, "a whole number")
        if minimum is not None and value < minimum:
            raise ConfigError(f"setting {name}: expected a whole number >= {minimum}, got {value}")
        return value

    def optional_integer(self, name: str, *, minimum: int = 0) -> int | None:
        if self._raw(name, None) is None:
            return None
        return self.integer(name, 0, minimum=minimum)

    def boolean(self, name: str, default: bool) -> bool:
        try:
            return self._settings.getbool(name, default)
        except ValueError:
            raise ConfigError(
                f"setting {name}: expected true/false (1/0), got {self._settings.get(name)!r}"
            ) from None

    def choice(self, name: str, default: str, choices: Sequence[str]) -> str:
        value = str(self._raw(name, default)).strip().lower()
        if value not in choices:
            raise ConfigError(
                f"setting {name}: expected one of {', '.join(choices)}, got {value!r}"
            )
        return value

    def text(self, name: str, default: str) -> str:
        return str(self._raw(name, default))

    def int_list(self, name: str, default: Sequence[int]) -> tuple[int, ...]:
        raw = self._raw(name, list(default))
        items = raw.split(",") if isinstance(raw, str) else raw
        try:
            return tuple(int(str(item).strip()) for item in items if str(item).strip())
        except (TypeError, ValueError):
            raise ConfigError(
                f"setting {name}: expected a list of status codes, got {raw!r}"
            ) from None

    def str_list(self, name: str) -> tuple[str, ...]:
        raw = self._raw(name, [])
        items = raw.replace("\n", ",").split(",") if isinstance(raw, str) else raw
        return tuple(str(item).strip() for item in items if str(item).strip())


USER_AGENTS: dict[str, str] = {
    "urlcheck": "urlcheck/0.1 (bulk URL and redirect checker)",
    "chrome": (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
        "(KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36"
    ),
    "firefox": "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:145.0) Gecko/20100101 Firefox/145.0",
    "safari": (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7) AppleWebKit/605.1.15 "
        "(KHTML, like Gecko) Version/18.6 Safari/605.1.15"
    ),
    "googlebot": ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
    "googlebot-smartphone": (
        "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
        "(KHTML, like Gecko) Chrome/142.0.0.0 Mobile Safari/537.36 "
        "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
    ),
    "bingbot": ("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"),
}


def resolve_user_agent(value: str) -> str:
    """A preset name (any case) gives its string; anything else is used as given."""
    value = value.strip()
    if not value:
        raise ConfigError("setting URLCHECK_USER_AGENT: expected a preset name or a string, got ''")
    return USER_AGENTS.get(value.lower(), value)


@dataclass(frozen=True, slots=True)
class CheckConfig:
    """How the ``check`` spider follows and judges each row's chain."""

    max_hops: int = 10
    follow_meta_refresh: bool = False
    method: Literal["GET", "HEAD"] = "GET"
    ignore_trailing_slash: bool = True
    temporary_redirect: Literal["fail", "warn"] = "fail"
    max_chain_hops: int | None = None
    rows_ahead_per_host: int = 2
    rows_ahead: int = 200

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> CheckConfig:
        read = SettingsReader(settings)
        method = read.choice("URLCHECK_METHOD", "get", ("get", "head")).upper()
        temporary = read.choice("URLCHECK_TEMPORARY_REDIRECT", "fail", ("fail", "warn"))
        return cls(
            max_hops=read.integer("URLCHECK_MAX_HOPS", 10, minimum=0),
            follow_meta_refresh=read.boolean("URLCHECK_FOLLOW_META_REFRESH", False),
            method="HEAD" if method == "HEAD" else "GET",
            ignore_trailing_slash=read.boolean("URLCHECK_VERDICT_IGNORE_TRAILING_SLASH", True),
            temporary_redirect="warn" if temporary == "warn" else "fail",
            max_chain_hops=read.optional_integer("URLCHECK_MAX_CHAIN_HOPS", minimum=0),
            rows_ahead_per_host=read.integer("URLCHECK_ROWS_AHEAD_PER_HOST", 2, minimum=1),
            rows_ahead=read.integer("URLCHECK_ROWS_AHEAD", 200, minimum=1),
        )
