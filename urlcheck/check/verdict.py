"""The expected-target verdict of a checked row (rules in docs/urls-and-verdicts.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from urlcheck.check.urls import InvalidURL, comparable, normalise_input

__all__ = ["PERMANENT_REDIRECTS", "TEMPORARY_REDIRECTS", "Verdict", "VerdictRules", "judge"]

PERMANENT_REDIRECTS = frozenset({301, 308})
TEMPORARY_REDIRECTS = frozenset({302, 303, 307})

# Errors that have a reason of their own instead of error_<code>.
_ERROR_REASONS = {"too_many_hops": "too_many_hops"}


@dataclass(frozen=True, slots=True)
class VerdictRules:
    """Settings URLCHECK_VERDICT_IGNORE_TRAILING_SLASH, URLCHECK_TEMPORARY_REDIRECT and
    URLCHECK_MAX_CHAIN_HOPS, parsed."""

    ignore_trailing_slash: bool = True
    temporary_redirect: Literal["fail", "warn"] = "fail"
    max_chain_hops: int | None = None

    def __post_init__(self) -> None:
        if self.temporary_redirect not in {"fail", "warn"}:
            raise ValueError(
                "URLCHECK_TEMPORARY_REDIRECT must be 'fail' or 'warn', "
                f"not {self.temporary_redirect!r}"
            )
        if self.max_chain_hops is not None and (
            isinstance(self.max_chain_hops, bool)
            or not isinstance(self.max_chain_hops, int)
            or self.max_chain_hops < 0
        ):
            raise ValueError(
                "URLCHECK_MAX_CHAIN_HOPS must be a whole number >= 0 or unset, "
                f"not {self.max_chain_hops!r}"
            )


@dataclass(frozen=True, slots=True)
class Verdict:
    verdict: Literal["pass", "fail"] | None
    reasons: list[str]
    warnings: list[str]


def _expected_forms(expected: str, ignore_trailing_slash: bool) -> set[str] | None:
    """Comparable forms the final URL may take, or None when ``expected`` is not a URL."""
    try:
        target = normalise_input(expected)
        forms = {comparable(target.url, ignore_trailing_slash=ignore_trailing_slash)}
        if target.scheme_added:
            # A scheme-less expected value names the place, not the scheme: either matches.
            http = normalise_input(expected, default_scheme="http")
            forms.add(comparable(http.url, ignore_trailing_slash=ignore_trailing_slash))
    except InvalidURL:
        return None
    return forms


def _matches(final_url: str, forms: set[str], ignore_trailing_slash: bool) -> bool:
    try:
        return comparable(final_url, ignore_trailing_slash=ignore_trailing_slash) in forms
    except InvalidURL:
        return False


def judge(
    *,
    expected: str | None,
    first_status: int | None,
    final_url: str | None,
    final_status: int | None,
    hops: int,
    loop: bool,
    error: str | None,
    rules: VerdictRules,
    tls_invalid: bool = False,
) -> Verdict:
    """Judge one checked row against its expected target.

    ``expected`` None or blank: no verdict. Otherwise ``pass`` when nothing is wrong, else
    ``fail`` with the reasons, in the fixed order the docs list.
    """
    if expected is None or not expected.strip():
        return Verdict(None, [], [])
    reasons: list[str] = []
    warnings: list[str] = []

    forms = _expected_forms(expected, rules.ignore_trailing_slash)
    if forms is None:
        reasons.append("invalid_expected")
    final_matches = (
        forms is not None
        and final_url is not None
        and _matches(final_url, forms, rules.ignore_trailing_slash)
    )

    if first_status is not None:
        # The expected URL is the requested one itself: no redirect is wanted there, and
        # a direct 2xx passes (a direct 404 fails on its final status alone).
        redirect_wanted = not (hops == 0 and final_matches)
        if first_status in TEMPORARY_REDIRECTS:
            if rules.temporary_redirect == "warn":
                warnings.append("temporary_redirect")
            else:
                reasons.append("temporary_redirect")
        elif first_status not in PERMANENT_REDIRECTS and forms is not None and redirect_wanted:
            reasons.append("no_redirect")

    if loop:
        reasons.append("loop")
    if error is not None:
        reasons.append(_ERROR_REASONS.get(error, f"error_{error}"))
    if rules.max_chain_hops is not None and hops > rules.max_chain_hops:
        reasons.append(f"chain_longer_than_{rules.max_chain_hops}")
    if final_status is not None and not 200 <= final_status < 300:
        reasons.append(f"final_status_{final_status}")
    if forms is not None and final_url is not None and not final_matches:
        reasons.append("final_url_mismatch")
    if tls_invalid:  # a hop's certificate a browser refuses (urlcheck.check.tls)
        reasons.append("tls_certificate_invalid")

    if not reasons and (first_status is None or final_url is None or final_status is None):
        # The caller reported neither an error nor a complete response; never pass on that.
        reasons.append("no_response")
    return Verdict("fail" if reasons else "pass", reasons, warnings)
