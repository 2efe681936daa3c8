"""A row's redirect chain as plain rules: given what a hop answered, follow the next URL or
finish the row. No Scrapy here; the spider turns each response into an :class:`Answer`, and
each :class:`Follow` into a request in the next host's own download slot.

The rules, in order: a HEAD answered 405/501 is asked again with GET (the hop is not
recorded); a hop every proxy was blocked on ends the row (``blocked``); a redirect status, or
any 3xx with a Location, is followed unless the Location is bad (``bad_location``,
``unsupported_scheme``), revisits a URL of the chain (``loop``) or would exceed ``max_hops``
(``too_many_hops``); a 3xx without Location is ``bad_location``; a meta refresh on a 2xx page
is followed only when ``follow_meta_refresh`` is on (it is always reported).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from w3lib.html import get_meta_refresh

from urlcheck.results import Hop, hop
from urlcheck.urls import InvalidURL, hop_kind, resolve_location

if TYPE_CHECKING:
    from urlcheck.results import RowTask

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
HEAD_REFUSED = frozenset({405, 501})
_META_REFRESH_SCAN = 65536  # characters of the page searched for <meta http-equiv="refresh">


@dataclass(frozen=True, slots=True)
class Answer:
    """What one hop's response said."""

    url: str
    status: int
    method: str = "GET"
    location: bytes | None = None  # the Location header as sent
    text: str | None = None  # the (capped) body as text, when it is text
    ms: int | None = None  # latency
    blocked: str | None = None  # set when every proxy tried met a captcha or block


@dataclass(frozen=True, slots=True)
class Follow:
    """Request ``url`` next (``method`` None: the configured one)."""

    url: str
    method: str | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    """The row is done: build its result from the chain with these fields."""

    error: str | None = None
    error_message: str | None = None
    loop: bool = False
    meta_refresh: str | None = None


Step = Follow | Finish


@dataclass(frozen=True, slots=True)
class ChainRules:
    max_hops: int = 10
    follow_meta_refresh: bool = False

    def on_answer(self, task: RowTask, chain: list[Hop], answer: Answer) -> Step:
        """Record the answer in ``chain`` (in place) and say what comes next."""
        status = answer.status
        if answer.method == "HEAD" and status in HEAD_REFUSED:
            if "head_fallback_get" not in task.notes:
                task.notes.append("head_fallback_get")
            return Follow(answer.url, method="GET")
        entry = hop(answer.url, status=status, ms=answer.ms)
        chain.append(entry)
        if answer.blocked is not None:
            entry["block"] = answer.blocked
            return Finish(
                error="blocked",
                error_message=f"{answer.blocked} (status {status}) on every proxy tried",
            )
        if status in REDIRECT_STATUSES or (300 <= status < 400 and answer.location is not None):
            return self._follow(chain, entry, answer.location)
        if 300 <= status < 400:
            return Finish(error="bad_location", error_message=f"{status} without a Location header")
        refresh = meta_refresh(answer)
        if refresh is not None and self.follow_meta_refresh and 200 <= status < 300:
            return self._follow(chain, entry, refresh.encode())
        return Finish(meta_refresh=refresh)

    def on_failure(self, chain: list[Hop], url: str, kind: str, message: str) -> Finish:
        """A hop ended without a response (``kind`` from urlcheck.errors)."""
        chain.append(hop(url, error=kind))
        return Finish(error=kind, error_message=message)

    def _follow(self, chain: list[Hop], entry: Hop, location: bytes | None) -> Step:
        try:
            target = resolve_location(entry["url"], location)
        except InvalidURL as exc:
            entry["location"] = location.decode("latin-1") if location else None
            return Finish(error=exc.code, error_message=str(exc))
        entry["location"] = target
        entry["kind"] = hop_kind(entry["url"], target)
        if any(earlier["url"] == target for earlier in chain):
            return Finish(loop=True)
        if len(chain) > self.max_hops:
            return Finish(
                error="too_many_hops",
                error_message=f"more than {self.max_hops} redirects (URLCHECK_MAX_HOPS)",
            )
        return Follow(target)


def meta_refresh(answer: Answer) -> str | None:
    """The target of a ``<meta http-equiv="refresh">`` in the page, resolved, else None."""
    if not answer.text:
        return None
    _, url = get_meta_refresh(answer.text[:_META_REFRESH_SCAN], answer.url)
    return url
