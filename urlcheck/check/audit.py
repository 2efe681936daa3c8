"""What a migration audit checks beyond the expected target: each check a reason code and a
level (``fail``, ``warn`` or ``off``) from one setting each, ``Check.setting``
(docs/urls-and-verdicts.md section 9).

A check only says whether its finding applies to a row (:func:`chain_findings`,
:func:`urlcheck.check.finalpage.page_findings`, :mod:`urlcheck.check.manytoone`); where the
finding goes is decided once, by :meth:`AuditRules.place`: a ``fail`` check fails a row that
has an expected target (its code in ``reasons``), a ``warn`` check only warns (``warnings``),
an ``off`` one is dropped. A row without an expected target has no verdict: any finding that is
not ``off`` is a warning there.

A check of another part of the crawl is in the catalogue too and gets its setting, its place
in ``reasons`` and its counts the same way: ``tls_certificate_invalid`` (urlcheck.check.tls),
found from a hop's certificate warnings on any hop, even when the chain broke. Another one can
add itself with :func:`register`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from urlcheck.check.urls import InvalidURL, host_key

if TYPE_CHECKING:
    from urlcheck.check.hops import Hop

__all__ = [
    "CHECKS",
    "LEVELS",
    "AuditRules",
    "Check",
    "Level",
    "chain_findings",
    "is_home",
    "register",
]

Level = Literal["fail", "warn", "off"]
LEVELS: tuple[Level, ...] = ("fail", "warn", "off")

TEMPORARY = frozenset({302, 303, 307})


@dataclass(frozen=True, slots=True)
class Check:
    """One audit check: its reason code, its default level and the setting that changes it."""

    code: str
    setting: str  # the URLCHECK_ setting of its level (spelt out: greppable, documented)
    default: Level
    summary: str  # one line, for the docs
    levels: tuple[Level, ...] = LEVELS  # what its setting accepts


# In the order their codes are listed in ``reasons`` and ``warnings`` (after the verdict's own).
CHECKS: dict[str, Check] = {}
_ORDER: dict[str, int] = {}  # a code's place in CHECKS, for the order of reasons


def register(check: Check) -> Check:
    """Add a check to the catalogue (its setting is read by urlcheck.config.crawlconfig)."""
    if check.code in CHECKS and CHECKS[check.code] != check:
        raise ValueError(f"audit check {check.code!r} is already registered differently")
    if check.default not in check.levels:
        raise ValueError(f"audit check {check.code!r}: default {check.default!r} not allowed")
    CHECKS[check.code] = check
    _ORDER.setdefault(check.code, len(_ORDER))
    return check


for _check in (
    # 1. soft 404 by redirect
    Check(
        "redirect_to_home",
        "URLCHECK_CHECK_REDIRECT_TO_HOME",
        "fail",
        "a redirect ends at the site root or home page",
    ),
    Check(
        "many_to_one",
        "URLCHECK_CHECK_MANY_TO_ONE",
        "warn",
        "many redirected rows land on one URL (computed over all rows, once they are written)",
        levels=("warn", "off"),
    ),
    # 2. chain quality
    Check(
        "redirect_chain",
        "URLCHECK_CHECK_REDIRECT_CHAIN",
        "warn",
        "more than one redirect before the final page",
    ),
    Check(
        "temporary_redirect_in_chain",
        "URLCHECK_CHECK_TEMPORARY_REDIRECT_IN_CHAIN",
        "warn",
        "a 302, 303 or 307 after the first hop",
    ),
    Check("https_downgrade", "URLCHECK_CHECK_HTTPS_DOWNGRADE", "fail", "a hop from https to http"),
    Check(
        "host_round_trip",
        "URLCHECK_CHECK_HOST_ROUND_TRIP",
        "warn",
        "the chain leaves a host and comes back to it",
    ),
    # 3. the final page's indexability
    Check("noindex", "URLCHECK_CHECK_NOINDEX", "fail", "the final page asks not to be indexed"),
    Check(
        "canonical_mismatch",
        "URLCHECK_CHECK_CANONICAL_MISMATCH",
        "fail",
        "the final page's canonical URL is another URL",
    ),
    Check(
        "nofollow",
        "URLCHECK_CHECK_NOFOLLOW",
        "warn",
        "the final page asks that its links not be followed",
    ),
    # certificates (urlcheck.check.tls: a hop's tls_self_signed, tls_expired, ...)
    Check(
        "tls_certificate_invalid",
        "URLCHECK_CHECK_TLS_CERTIFICATE_INVALID",
        "fail",
        "an https hop's certificate is one a browser refuses",
    ),
):
    register(_check)


@dataclass(frozen=True, slots=True)
class AuditRules:
    """The level of every check (each its ``Check.setting``) and the many-to-one
    thresholds (``URLCHECK_MANY_TO_ONE_ROWS``, ``URLCHECK_MANY_TO_ONE_SHARE``)."""

    levels: Mapping[str, Level] = field(default_factory=lambda: MappingProxyType({}))
    many_to_one_rows: int = 10
    many_to_one_share: float = 50.0  # percent of a host's redirected rows

    def __post_init__(self) -> None:
        for code, level in self.levels.items():
            check = CHECKS.get(code)
            if check is None:
                raise ValueError(f"no audit check is named {code!r}")
            if level not in check.levels:
                raise ValueError(
                    f"{check.setting} must be one of {', '.join(check.levels)}, not {level!r}"
                )
        object.__setattr__(self, "levels", MappingProxyType(dict(self.levels)))

    def level(self, code: str) -> Level:
        found = self.levels.get(code)
        if found is not None:
            return found
        check = CHECKS.get(code)
        return "warn" if check is None else check.default

    def on(self, code: str) -> bool:
        return self.level(code) != "off"

    def place(
        self, findings: Iterable[str], *, judged: bool, reasons: list[str], warnings: list[str]
    ) -> None:
        """Put each finding in ``reasons`` or ``warnings`` (in place) by its level; ``judged``:
        the row has an expected target (a verdict to fail)."""
        for code in sorted(findings, key=_order):
            level = self.level(code)
            if level == "off":
                continue
            target = reasons if level == "fail" and judged else warnings
            if code not in target:
                target.append(code)

    def setting_values(self) -> dict[str, str]:
        """Every check's setting and the level this run uses (meta.json's ``settings``)."""
        return {check.setting: self.level(code) for code, check in CHECKS.items()}


def _order(code: str) -> int:
    return _ORDER.get(code, len(_ORDER))


def level_of(value: str) -> Level:
    if value not in LEVELS:
        raise ValueError(f"expected one of {', '.join(LEVELS)}, got {value!r}")
    return value


# --- 1. soft 404 by redirect ----------------------------------------------------------------------

# Paths a site serves its home page under besides "/" (compared lower-case, query ignored).
_HOME_PATHS = frozenset(
    f"/{name}.{ext}"
    for name in ("index", "default", "home")
    for ext in ("html", "htm", "php", "asp", "aspx", "jsp", "shtml")
) | {"/", "", "/home", "/index"}


_PATH = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*([^?#]*)")


def is_home(url: str) -> bool:
    """Whether ``url`` is its host's root or home page (``/``, ``/index.html``, ``/home``, ...;
    query and fragment ignored)."""
    m = _PATH.match(url)
    return m is not None and m[1].lower() in _HOME_PATHS


def redirect_to_home(requested_url: str | None, final_url: str, expected: str | None) -> bool:
    """A redirect that ends at the final host's home page, from a page that was not a home page,
    where no home page was expected: what search engines treat as a soft 404."""
    if requested_url is None or is_home(requested_url) or not is_home(final_url):
        return False
    if not expected:
        return True
    expected = expected.strip()
    if "://" not in expected:
        expected = "https://" + expected.lstrip("/")
    return not is_home(expected)


# --- 2. chain quality -----------------------------------------------------------------------------


def chain_findings(
    chain: list[Hop], *, judged: bool, expected: str | None, requested_url: str | None
) -> list[str]:
    """The chain-quality and redirect-to-home findings of a chain that ended at a response."""
    hops = len(chain) - 1
    if hops < 1:
        return []
    found: list[str] = []
    final_url = chain[-1]["url"]
    if redirect_to_home(requested_url, final_url, expected):
        found.append("redirect_to_home")
    if hops > 1:
        found.append("redirect_chain")
    # A row with an expected target has its first hop judged by temporary_redirect already.
    start = 1 if judged else 0
    if any(entry["status"] in TEMPORARY for entry in chain[start:-1]):
        found.append("temporary_redirect_in_chain")
    if any(
        entry["url"][:6].lower() == "https:" and (entry["location"] or "")[:5].lower() == "http:"
        for entry in chain[:-1]
    ):
        found.append("https_downgrade")
    if _round_trip(chain):
        found.append("host_round_trip")
    return found


def _round_trip(chain: list[Hop]) -> bool:
    seen: list[str] = []
    for entry in chain:
        try:
            host = host_key(entry["url"])
        except InvalidURL:  # pragma: no cover - chain URLs were requested
            continue
        if seen and seen[-1] == host:
            continue
        if host in seen:
            return True
        seen.append(host)
    return False
