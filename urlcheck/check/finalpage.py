"""The final page of a chain as an indexer reads it: its canonical URL, its robots directives and
where they came from, its content type and title (the result's ``final_page``), and the
indexability findings drawn from them (docs/urls-and-verdicts.md section 9.3).

Read only from what the crawl already has: the response headers and the capped body. Only the
document's ``<head>`` is parsed (lxml), where indexers honour
``<meta name="robots">`` and ``<link rel="canonical">``, at most :data:`HEAD_SCAN` characters.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import Any, NotRequired, TypedDict

from lxml import etree

from urlcheck.check.urls import InvalidURL, comparable, resolve_location

__all__ = ["FinalPage", "RobotsEntry", "page_findings", "read_final_page"]

HEAD_SCAN = 65536  # characters of the page searched for its head
TITLE_MAX = 300  # characters of the title kept
URL_MAX = 8192  # characters of a canonical URL kept (and compared)
VALUE_MAX = 500  # characters of a robots value kept

# The user agents whose directives apply: every crawler's, and Google's (what an SEO audit means).
_AGENTS = frozenset({"robots", "googlebot"})
# X-Robots-Tag directives that take a value after a colon (not a user agent prefix).
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
_AGENT_PREFIX = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*:\s*(.*)", re.DOTALL)
_HEAD_END = re.compile(r"</head\s*>|<body[\s>]", re.IGNORECASE)
_HTML_HINT = re.compile(r"<(?:title|meta|link)[\s>]", re.IGNORECASE)
# lxml's own HTML parser: plain elements (lxml.html's element classes cost a lookup each).
_PARSER = etree.HTMLParser(no_network=True, remove_comments=True, remove_pis=True)
_LINK_CANONICAL = re.compile(
    r"<\s*([^>]{1,8192})\s*>\s*;[^,]*?\brel\s*=\s*\"?[^\",]*\bcanonical\b", re.IGNORECASE
)


class RobotsEntry(TypedDict):
    source: str  # "meta:robots", "meta:googlebot", "x-robots-tag", "x-robots-tag:googlebot"
    directives: list[str]  # lower case, as written: "noindex", "nofollow", "max-snippet:20", ...


class FinalPage(TypedDict):
    """The result's ``final_page``."""

    content_type: str | None
    title: str | None
    canonical: str | None  # resolved as browsers resolve a link
    robots: list[RobotsEntry]
    canonical_source: NotRequired[str]  # "link" (the HTML) or "header" (HTTP Link)


def directives(value: str) -> list[str]:
    """``"NOINDEX, NoFollow"`` -> ``["noindex", "nofollow"]`` (commas, or spaces between words)."""
    found = []
    for raw in value[:VALUE_MAX].lower().replace(";", ",").split(","):
        part = raw.strip()
        if not part:
            continue
        if ":" in part:
            found.append(re.sub(r"\s*:\s*", ":", part))
        else:
            found.extend(part.split())
    return found


def header_entries(values: Iterable[str]) -> list[RobotsEntry]:
    """X-Robots-Tag values, each maybe for one user agent (``googlebot: noindex``); those for
    agents other than every crawler and Google are left out."""
    entries: list[RobotsEntry] = []
    for value in values:
        source, text = "x-robots-tag", value
        prefix = _AGENT_PREFIX.match(value)
        if prefix is not None and prefix[1].lower() not in _VALUED:
            agent = prefix[1].lower()
            if agent not in _AGENTS:
                continue
            source, text = f"x-robots-tag:{agent}", prefix[2]
        found = directives(text)
        if found:
            entries.append(RobotsEntry(source=source, directives=found))
    return entries


def read_final_page(
    url: str,
    *,
    content_type: str | None,
    robots_headers: Iterable[str] = (),
    link_headers: Iterable[str] = (),
    text: str | None = None,
) -> FinalPage:
    page = FinalPage(
        content_type=_media_type(content_type),
        title=None,
        canonical=None,
        robots=header_entries(robots_headers),
    )
    for value in link_headers:
        match = _LINK_CANONICAL.search(value)
        if match is not None:
            with contextlib.suppress(InvalidURL):
                page["canonical"] = resolve_location(url, match[1].strip()).url
                page["canonical_source"] = "header"
                break
    if text and _is_html(page["content_type"]):
        _read_head(page, url, text)
    return page


def _media_type(value: str | None) -> str | None:
    if not value:
        return None
    return value.split(";", 1)[0].strip().lower()[:100] or None


def _is_html(media_type: str | None) -> bool:
    return media_type is None or media_type in {"text/html", "application/xhtml+xml"}


def _read_head(page: FinalPage, url: str, text: str) -> None:
    end = _HEAD_END.search(text, 0, HEAD_SCAN)
    head = text[: end.start() if end else HEAD_SCAN]
    if not _HTML_HINT.search(head):
        return
    try:
        root = etree.fromstring(head, _PARSER)
    except (ValueError, etree.LxmlError):  # an XML declaration with an encoding, say
        return
    if root is None:
        return
    picked = [e for e in root.iter("title", "base", "meta", "link") if _wanted(e)]
    base = url  # the document's base URL, wherever its <base> is
    for element in picked:
        if element.tag == "base":
            with contextlib.suppress(InvalidURL):
                base = resolve_location(url, element.get("href")).url
            break
    for element in picked:
        tag = element.tag
        if tag == "title":
            if element.text:
                page["title"] = " ".join(element.text.split())[:TITLE_MAX] or None
        elif tag == "meta":
            name = (element.get("name") or "").strip().lower()
            found = directives(element.get("content") or "")
            if found:
                page["robots"].append(RobotsEntry(source=f"meta:{name}", directives=found))
        elif tag == "link" and (
            page["canonical"] is None or page.get("canonical_source") == "header"
        ):
            href = element.get("href")
            if href is not None and href.strip():
                with contextlib.suppress(InvalidURL):
                    page["canonical"] = resolve_location(base, href.strip()).url
                    page["canonical_source"] = "link"
    if page["canonical"] is not None and len(page["canonical"]) > URL_MAX:
        page["canonical"] = page["canonical"][:URL_MAX]


def _wanted(element: Any) -> bool:
    """The elements read: the title, a base with its href, robots metas, canonical links."""
    tag = element.tag
    if tag == "meta":
        return (element.get("name") or "").strip().lower() in _AGENTS
    if tag == "link":
        return "canonical" in (element.get("rel") or "").lower().split()
    if tag == "base":
        return element.get("href") is not None
    return True


def noindex(page: FinalPage) -> bool:
    return any(d in {"noindex", "none"} for e in page["robots"] for d in e["directives"])


def nofollow(page: FinalPage) -> bool:
    return any(d in {"nofollow", "none"} for e in page["robots"] for d in e["directives"])


def page_findings(
    page: FinalPage | None, final_url: str | None, *, ignore_trailing_slash: bool
) -> list[str]:
    """``noindex``, ``canonical_mismatch`` and ``nofollow`` of a final page that answered 2xx."""
    if page is None or final_url is None:
        return []
    found = []
    if noindex(page):
        found.append("noindex")
    canonical = page["canonical"]
    if canonical is not None and not _same(canonical, final_url, ignore_trailing_slash):
        found.append("canonical_mismatch")
    if nofollow(page):
        found.append("nofollow")
    return found


def _same(a: str, b: str, ignore_trailing_slash: bool) -> bool:
    try:
        return comparable(a, ignore_trailing_slash=ignore_trailing_slash) == comparable(
            b, ignore_trailing_slash=ignore_trailing_slash
        )
    except InvalidURL:
        return False
