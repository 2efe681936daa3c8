"""A chain's hops as results.jsonl holds them, and the row a chain belongs to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NotRequired, TypedDict


class Hop(TypedDict):
    """One request of a chain, as results.jsonl holds it."""

    url: str
    status: int | None
    location: str | None
    ms: int | None
    kind: str | None
    error: NotRequired[str]  # set on a hop that failed without a response
    # "captcha:<signature>" / "block:<signature>": a bot wall answered, not the site
    block: NotRequired[str]
    vendor: NotRequired[str]  # the wall's vendor ("cloudflare", "akamai", ...; "generic")
    location_raw: NotRequired[str]  # the Location as sent, when it differs from ``location``
    # "location_backslash", ... (urlcheck.check.urls), "tls_self_signed", ... (urlcheck.check.tls)
    warnings: NotRequired[list[str]]
    cert_expires: NotRequired[str]  # an https hop: its certificate's notAfter (ISO 8601 UTC)


def hop(
    url: str,
    *,
    status: int | None = None,
    location: str | None = None,
    ms: int | None = None,
    kind: str | None = None,
    error: str | None = None,
) -> Hop:
    entry = Hop(url=url, status=status, location=location, ms=ms, kind=kind)
    if error is not None:
        entry["error"] = error
    return entry


@dataclass(slots=True)
class RowTask:
    """What a row asks for; travels along its chain in request meta (``crawl.meta.TASK``)."""

    row: int
    url: str
    requested_url: str | None
    expected: str | None
    extra: dict[str, str]
    host_id: int = -1
    notes: list[str] = field(default_factory=list)
