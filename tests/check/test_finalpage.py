"""The final page's indexability (urlcheck.check.finalpage): robots directives, canonical, title."""

from __future__ import annotations

from typing import Any

import pytest

from urlcheck.check.finalpage import FinalPage, read_final_page
from urlcheck.check.finalpage import page_findings as findings
from urlcheck.check.hops import RowTask, hop
from urlcheck.check.result import build_result
from urlcheck.check.verdict import VerdictRules

URL = "https://a.test/new/page"


def page_of(head: str = "", **headers: Any) -> FinalPage:
    text = f"<!doctype html><html><head>{head}</head><body><p>x</p></body></html>"
    return read_final_page(URL, content_type="text/html; charset=utf-8", text=text, **headers)


def test_the_head_gives_title_canonical_and_robots_with_their_source() -> None:
    page = page_of(
        "<title>  New\n page </title>"
        '<meta name="ROBOTS" content="NoIndex,NOFOLLOW">'
        '<meta name="googlebot" content="noarchive, max-snippet : 20">'
        '<meta name="bingbot" content="noindex">'
        '<link rel="Canonical" href="../other">'
    )
    assert page == {
        "content_type": "text/html",
        "title": "New page",
        "canonical": "https://a.test/other",
        "canonical_source": "link",
        "robots": [
            {"source": "meta:robots", "directives": ["noindex", "nofollow"]},
            {"source": "meta:googlebot", "directives": ["noarchive", "max-snippet:20"]},
        ],
    }


@pytest.mark.parametrize(
    ("head", "headers", "expected"),
    [
        ('<meta name="robots" content="noindex">', (), ["noindex"]),
        ('<meta name="robots" content="NOINDEX, NOFOLLOW">', (), ["noindex", "nofollow"]),
        ('<meta name="robots" content="none">', (), ["noindex", "nofollow"]),
        ('<meta name="googlebot" content="noindex">', (), ["noindex"]),
        ('<meta name="bingbot" content="noindex">', (), []),
        ('<meta name="robots" content="index, follow">', (), []),
        ("", ("noindex",), ["noindex"]),
        ("", ("NoIndex,NoFollow",), ["noindex", "nofollow"]),
        ("", ("googlebot: noindex",), ["noindex"]),
        ("", ("otherbot: noindex",), []),
        ("", ("unavailable_after: 25 Jun 2030 15:00:00 PST",), []),
        ('<link rel="canonical" href="/new/page/">', (), []),  # the verdict's normalisation
        ('<link rel="canonical" href="https://a.test/new/page?">', (), []),
        ('<link rel="canonical" href="http://a.test/new/page">', (), ["canonical_mismatch"]),
        ('<link rel="canonical" href="/elsewhere">', (), ["canonical_mismatch"]),
        ('<link rel="canonical" href="javascript:x">', (), []),  # not a URL: no canonical
        ('<base href="/new/"><link rel="canonical" href="page">', (), []),
        ("<!-- <meta name=robots content=noindex> -->", (), []),
    ],
)
def test_each_form_is_read_as_indexers_read_it(
    head: str, headers: tuple[str, ...], expected: list[str]
) -> None:
    page = page_of(head, robots_headers=headers)
    assert findings(page, URL, ignore_trailing_slash=True) == expected


def test_a_canonical_link_header_counts_and_the_html_one_wins() -> None:
    header = ['<https://a.test/elsewhere>; rel="canonical"']
    page = page_of(link_headers=header)
    assert (page["canonical"], page["canonical_source"]) == ("https://a.test/elsewhere", "header")
    page = page_of('<link rel="canonical" href="/new/page">', link_headers=header)
    assert page["canonical"] == URL


def test_only_the_head_is_read_and_a_page_that_is_not_html_only_by_its_headers() -> None:
    body = '<html><head><title>t</title></head><body><meta name="robots" content="noindex">'
    page = read_final_page(URL, content_type="text/html", text=body)
    assert page["robots"] == []
    pdf = read_final_page(
        URL, content_type="application/pdf", robots_headers=["noindex"], text="<title>no</title>"
    )
    assert (pdf["title"], pdf["content_type"]) == (None, "application/pdf")
    assert findings(pdf, URL, ignore_trailing_slash=True) == ["noindex"]
    odd = read_final_page(URL, content_type=None, text='<?xml version="1.0" encoding="utf-8"?>')
    assert odd["title"] is None


def test_a_target_reached_but_not_indexable_fails() -> None:
    task = RowTask(1, "https://a.test/old", "https://a.test/old", URL, {})
    chain = [hop("https://a.test/old", status=301, location=URL), hop(URL, status=200)]
    page = page_of('<meta name="robots" content="noindex,nofollow">')
    result = build_result(task, chain, rules=VerdictRules(), final_page=page)
    assert (result.verdict, result.reasons, result.warnings) == ("fail", ["noindex"], ["nofollow"])
    assert result.final_page == page
    # A 404 page says noindex all the time: only a 2xx final page is judged.
    chain[-1]["status"] = 404
    result = build_result(task, chain, rules=VerdictRules(), final_page=page)
    assert result.reasons == ["final_status_404"]


def test_the_base_url_applies_wherever_the_base_element_is() -> None:
    page = page_of('<link rel="canonical" href="page"><base href="/new/">')
    assert page["canonical"] == URL
