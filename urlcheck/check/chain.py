"""A row's redirect chain as plain rules: given what a hop answered, follow the next URL or
finish the row. No Scrapy here; the spider turns each response into an :class:`Answer`, and
each :class:`Follow` into a request in the next host's own download slot.

The rules, in order: a HEAD answered 405/501 is asked again with GET (the hop is not
recorded); a hop a bot wall answered (a captcha or block page, with or without proxies) ends
the row (``blocked``, the hop naming the vendor); a redirect status, or
any 3xx with a Location, is followed unless the Location is bad (``bad_location``,
``unsupported_scheme``), revisits a URL of the chain (``loop``) or would exceed ``max_hops``
(``too_many_hops``) or is longer than ``max_url_length`` (``url_too_long``, the Location kept;
one too long for the response head to hold keeps its first ``max_url_length`` characters);
a 3xx without Location is ``bad_location``; so is an answer with two different Locations (of any
status, as Chromium refuses it, so a site cannot show urlcheck another target than its users);
a meta refresh on a 2xx page
is followed only when ``follow_meta_refresh`` is on (it is always reported).

Locations and meta refresh targets are resolved as browsers resolve them (urlcheck.check.urls); the
hop keeps the Location as sent (``location_raw``) when it differs from the resolved one, and the
warnings about a target a person would not expect.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

from parsel import Selector

from urlcheck.check.detection import vendor_of
from urlcheck.check.finalpage import FinalPage, read_final_page
from urlcheck.check.hops import Hop, hop
from urlcheck.check.urls import InvalidURL, hop_kind, refresh_target, resolve_location

if TYPE_CHECKING:
    from urlcheck.check.hops import RowTask

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
HEAD_REFUSED = frozenset({405, 501})
GENERIC_WALL = "generic"  # the vendor of a wall no vendor's signature recognised
WALL_WARNING = (
    "bot_wall"  # a hop's warning for a wall taken as the answer (URLCHECK_BOT_WALLS=warn)
)
_META_REFRESH_SCAN = 65536  # characters of the page searched for <meta http-equiv="refresh">
# Only a page that may declare a refresh is parsed as HTML.
_REFRESH_HINT = re.compile(r"http-equiv\s*=\s*[\"']?\s*refresh", re.IGNORECASE)
_REFRESH_XPATH = (
    "//meta[translate(@http-equiv, 'REFSH', 'refsh') = 'refresh']"
    "[not(ancestor::noscript) and not(ancestor::script)][1]/@content"
)


@dataclass(frozen=True, slots=True)
class Answer:
    """What one hop's response said."""

    url: str
    status: int
    method: str = "GET"
    location: bytes | None = None  # the Location header as sent
    extra_locations: tuple[bytes, ...] = ()  # the Location headers after the first, as sent
    text: str | None = None  # the (capped) body as text, when it is text
    ms: int | None = None  # latency
    blocked: str | None = None  # "captcha:<signature>" when a bot wall answered (detection)
    proxied: bool = False  # the hop went through a proxy (and every proxy tried met the wall)
    tls_warnings: tuple[str, ...] = ()  # what the certificate check found (urlcheck.check.tls)
    cert_expires: str | None = None  # an https hop's certificate expiry
    content_type: str | None = None  # the Content-Type header
    robots_headers: tuple[str, ...] = ()  # X-Robots-Tag headers
    link_headers: tuple[str, ...] = ()  # Link headers (a canonical may be given there)

    def final_page(self) -> FinalPage | None:
        """What the page says of its indexing, when it is a 2xx (urlcheck.check.finalpage)."""
        if not 200 <= self.status < 300:
            return None
        return read_final_page(
            self.url,
            content_type=self.content_type,
            robots_headers=self.robots_headers,
            link_headers=self.link_headers,
            text=self.text,
        )


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
    final_page: FinalPage | None = None
    findings: tuple[str, ...] = ()  # audit check codes found on the way (urlcheck.check.audit)


Step = Follow | Finish


@dataclass(frozen=True, slots=True)
class ChainRules:
    max_hops: int = 10
    follow_meta_refresh: bool = False
    max_url_length: int = 65_536
    bot_walls: Literal["block", "warn", "off"] = "block"  # URLCHECK_BOT_WALLS

    def on_answer(self, task: RowTask, chain: list[Hop], answer: Answer) -> Step:
        """Record the answer in ``chain`` (in place) and say what comes next."""
        status = answer.status
        if answer.method == "HEAD" and status in HEAD_REFUSED:
            if "head_fallback_get" not in task.notes:
                task.notes.append("head_fallback_get")
            return Follow(answer.url, method="GET")
        entry = hop(answer.url, status=status, ms=answer.ms)
        if answer.cert_expires is not None:
            entry["cert_expires"] = answer.cert_expires
        if answer.tls_warnings:
            entry["warnings"] = list(answer.tls_warnings)
        chain.append(entry)
        if answer.blocked is not None and self.bot_walls != "off":
            if self.bot_walls == "block":
                return _wall(entry, answer)
            _mark_wall(entry, answer)  # warn: the page is taken as the site's answer
            entry.setdefault("warnings", []).append(WALL_WARNING)
        if answer.location is not None and any(
            other != answer.location for other in answer.extra_locations
        ):
            return Finish(error="bad_location", error_message=conflicting_locations(answer))
        if status in REDIRECT_STATUSES or (300 <= status < 400 and answer.location is not None):
            return self._follow(chain, entry, answer.location)
        if 300 <= status < 400:
            return Finish(error="bad_location", error_message=f"{status} without a Location header")
        refresh = meta_refresh(answer)
        if refresh is None:
            return Finish(final_page=answer.final_page())
        if self.follow_meta_refresh and 200 <= status < 300:
            return self._follow(chain, entry, refresh.target, base=refresh.base)
        return Finish(meta_refresh=refresh.resolved(), final_page=answer.final_page())

    def on_failure(
        self, chain: list[Hop], url: str, kind: str, message: str, warnings: tuple[str, ...] = ()
    ) -> Finish:
        """A hop ended without a response (``kind`` from urlcheck.crawl.failures); ``warnings``:
        why a certificate was refused (URLCHECK_TLS=strict)."""
        entry = hop(url, error=kind)
        if warnings:
            entry["warnings"] = list(warnings)
        chain.append(entry)
        return Finish(error=kind, error_message=message)

    def on_location_too_long(
        self, chain: list[Hop], url: str, status: int, location: bytes, size: int
    ) -> Finish:
        """A hop answered ``status`` with a Location of at least ``size`` bytes, too long to
        read whole; ``location`` holds its first bytes."""
        kept = _as_sent_prefix(location)[: self.max_url_length]
        chain.append(hop(url, status=status, location=kept))
        return Finish(
            error="url_too_long",
            error_message=(
                f"Location of at least {size:,} bytes, over {self.max_url_length:,} characters "
                f"(URLCHECK_MAX_URL_LENGTH): not requested; its first {len(kept):,} "
                "characters kept"
            ),
        )

    def _follow(
        self, chain: list[Hop], entry: Hop, location: bytes | str | None, *, base: str | None = None
    ) -> Step:
        raw = _as_sent(location)
        try:
            resolved = resolve_location(base or entry["url"], location)
        except InvalidURL as exc:
            entry["location"] = raw
            if exc.warnings:
                entry.setdefault("warnings", []).extend(exc.warnings)
            return Finish(error=exc.code, error_message=str(exc))
        target = resolved.url
        entry["location"] = target
        entry["kind"] = hop_kind(entry["url"], target)
        if raw is not None and raw != target:
            entry["location_raw"] = raw
        if resolved.warnings:
            entry.setdefault("warnings", []).extend(resolved.warnings)
        if any(earlier["url"] == target for earlier in chain):
            return Finish(loop=True)
        if len(chain) > self.max_hops:
            return Finish(
                error="too_many_hops",
                error_message=f"more than {self.max_hops} redirects (URLCHECK_MAX_HOPS)",
            )
        if len(target) > self.max_url_length:
            return Finish(error="url_too_long", error_message=too_long(target, self.max_url_length))
        return Follow(target)


def conflicting_locations(answer: Answer) -> str:
    assert answer.location is not None
    distinct = list(dict.fromkeys((answer.location, *answer.extra_locations)))
    shown = [f"'{_shortened(_as_sent(value) or '')}'" for value in distinct]
    listed = ", ".join(shown[:-1]) + " and " + shown[-1]
    return (
        f"{len(distinct)} different Location headers, {listed}: not followed (a browser refuses "
        "such an answer: Chromium's ERR_RESPONSE_HEADERS_MULTIPLE_LOCATION)"
    )


def _shortened(text: str, keep: int = 200) -> str:
    if len(text) <= keep:
        return text
    return f"{text[:keep]}... ({len(text):,} characters)"


def _mark_wall(entry: Hop, answer: Answer) -> str:
    """The hop names the wall (``block``) and its vendor; the vendor."""
    assert answer.blocked is not None
    _, _, signature = answer.blocked.partition(":")
    vendor = vendor_of(signature) or GENERIC_WALL
    entry["block"] = answer.blocked
    entry["vendor"] = vendor
    return vendor


def _wall(entry: Hop, answer: Answer) -> Finish:
    """A bot wall's page is not the site's answer: the row ends ``blocked``, with the vendor."""
    assert answer.blocked is not None
    kind = answer.blocked.partition(":")[0]
    vendor = _mark_wall(entry, answer)
    by = "" if vendor == GENERIC_WALL else f" by {vendor}"
    where = "on every proxy tried" if answer.proxied else "answered, not the site"
    return Finish(
        error="blocked",
        error_message=f"{answer.blocked} (status {answer.status}): a {kind} page{by} {where}",
    )


def too_long(url: str, limit: int) -> str:
    return (
        f"URL of {len(url):,} characters, over {limit:,} (URLCHECK_MAX_URL_LENGTH): not requested"
    )


def _as_sent(location: bytes | str | None) -> str | None:
    """A Location for the results, as sent: UTF-8, else byte for byte (latin-1)."""
    if location is None or isinstance(location, str):
        return location
    try:
        return location.decode("utf-8")
    except UnicodeDecodeError:
        return location.decode("latin-1")


def _as_sent_prefix(location: bytes) -> str:
    """:func:`_as_sent` for the first bytes of a Location, which may end inside a character."""
    try:
        return location.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data":
            return location.decode("latin-1")
        return location[: exc.start].decode("utf-8")


class Refresh(NamedTuple):
    """A page's meta refresh: the URL string as written and the document's base URL."""

    target: str
    base: str

    def resolved(self) -> str:
        """Where it leads (the URL string itself when it cannot be resolved)."""
        try:
            return resolve_location(self.base, self.target).url
        except InvalidURL:
            return self.target


def meta_refresh(answer: Answer) -> Refresh | None:
    """The ``<meta http-equiv="refresh">`` of the page, read as browsers read it, else None.

    Browsers resolve its URL against the document's base URL: ``<base href>`` when the page has
    one that resolves, else the page's own URL.
    """
    text = answer.text
    if not text or not _REFRESH_HINT.search(text, 0, _META_REFRESH_SCAN):
        return None
    page = Selector(text=text[:_META_REFRESH_SCAN])
    content = page.xpath(_REFRESH_XPATH).get()
    target = None if content is None else refresh_target(content)
    if target is None:
        return None
    base = answer.url
    href = page.xpath("//base[@href][1]/@href").get()
    if href is not None:
        with contextlib.suppress(InvalidURL):
            base = resolve_location(answer.url, href).url
    return Refresh(target, base)
