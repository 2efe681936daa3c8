"""Typed, validating reads of Scrapy settings: every bad value names its setting.

Kept apart from :mod:`urlcheck.config.crawlconfig` so that component modules can define their own
config records without importing the module that gathers them all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

__all__ = ["ConfigError", "Settings", "SettingsReader"]


class Settings(Protocol):
    """What the core reads of a settings object (Scrapy's ``BaseSettings`` is one)."""

    def get(self, name: str, default: Any = None) -> Any: ...

    def getbool(self, name: str, default: bool = False) -> bool: ...

    def getdict(self, name: str, default: dict[Any, Any] | None = None) -> dict[Any, Any]: ...


class ConfigError(ValueError):
    """A setting has a value urlcheck cannot use; the message names the setting."""


class SettingsReader:
    """Typed, validating access to a Scrapy settings object."""

    def __init__(self, settings: Settings) -> None:
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
