"""The chain rules record Locations as sent and as resolved, with warnings, and read meta
refreshes as browsers do (no Scrapy: answers in, steps out)."""

from __future__ import annotations

import pytest

from urlcheck.check.chain import Answer, ChainRules, Finish, Follow
from urlcheck.check.hops import Hop, RowTask
from urlcheck.check.result import build_result
from urlcheck.check.verdict import VerdictRules

PAGE = "http://127.0.0.2:8000/a/b"


def task() -> RowTask:
    return RowTask(1, PAGE, PAGE, None, {})


def test_a_surprising_location_is_followed_where_a_browser_goes_and_named() -> None:
    chain: list[Hop] = []
    step = ChainRules().on_answer(
        task(), chain, Answer(PAGE, 301, location=b"/\\127.0.0.3:8000/ok")
    )
    assert step == Follow("http://127.0.0.3:8000/ok")
    assert chain == [
        {
            "url": PAGE,
            "status": 301,
            "location": "http://127.0.0.3:8000/ok",
            "ms": None,
            "kind": "cross_host",
            "location_raw": "/\\127.0.0.3:8000/ok",
            "warnings": ["location_backslash"],
        }
    ]


def test_an_absolute_location_as_resolved_has_no_raw_copy() -> None:
    chain: list[Hop] = []
    ChainRules().on_answer(task(), chain, Answer(PAGE, 301, location=b"http://127.0.0.3:8000/"))
    assert "location_raw" not in chain[0] and "warnings" not in chain[0]


def test_a_latin1_location_is_kept_as_sent() -> None:
    chain: list[Hop] = []
    step = ChainRules().on_answer(task(), chain, Answer(PAGE, 301, location=b"/caf\xe9"))
    assert step == Follow("http://127.0.0.2:8000/caf%E9")
    assert chain[0]["location_raw"] == "/café"


@pytest.mark.parametrize("location", [b"", b"  \t "])
def test_an_empty_location_is_bad_and_says_what_a_browser_does(location: bytes) -> None:
    chain: list[Hop] = []
    step = ChainRules().on_answer(task(), chain, Answer(PAGE, 302, location=location))
    assert isinstance(step, Finish) and step.error == "bad_location"
    assert f"a browser would request {PAGE} again" in (step.error_message or "")
    assert chain[0]["warnings"] == ["location_empty"]


def test_hop_warnings_are_listed_once_in_the_row_warnings() -> None:
    rules = ChainRules()
    chain: list[Hop] = []
    row = task()
    rules.on_answer(row, chain, Answer(PAGE, 301, location=b"http://0x7f.0.0.3:8000/x%"))
    rules.on_answer(
        row, chain, Answer("http://127.0.0.3:8000/x%", 301, location=b"http://127.1:8000/")
    )
    rules.on_answer(row, chain, Answer("http://127.0.0.1:8000/", 200))
    result = build_result(
        row, chain, rules=VerdictRules(temporary_redirect="warn"), error=None, loop=False
    )
    # The audit's findings (docs/urls-and-verdicts.md section 9), then the hops'.
    assert result.warnings == [
        "redirect_to_home",
        "redirect_chain",
        "location_ipv4_numeric",
        "location_percent",
    ]
    assert [h.get("warnings") for h in result.chain] == [
        ["location_ipv4_numeric", "location_percent"],
        ["location_ipv4_numeric"],
        None,
    ]


def refresh_page(content: str, head: str = "") -> str:
    return (
        f'<html><head>{head}<meta http-equiv="Refresh" content="{content}"></head>'
        "<body>moved</body></html>"
    )


@pytest.mark.parametrize(
    ("page", "target"),
    [
        (refresh_page("0; url=/next"), "http://127.0.0.2:8000/next"),
        (refresh_page("0,/next"), "http://127.0.0.2:8000/next"),  # no "url=": browsers go
        (refresh_page("3 next"), "http://127.0.0.2:8000/a/next"),
        (refresh_page("0;URL='/a b'"), "http://127.0.0.2:8000/a%20b"),
        # resolved against <base href>, as browsers do
        (
            refresh_page("0;url=next", '<base href="http://127.0.0.3:8000/dir/">'),
            "http://127.0.0.3:8000/dir/next",
        ),
        (refresh_page("0;url=next", '<base href="http://[bad/">'), "http://127.0.0.2:8000/a/next"),
        # a refresh inside <noscript> is not the page's
        (
            "<noscript><meta http-equiv=refresh content='0;url=/js-off'></noscript>"
            + refresh_page("0;url=/next"),
            "http://127.0.0.2:8000/next",
        ),
    ],
)
def test_meta_refresh_is_read_and_resolved_as_browsers_do(page: str, target: str) -> None:
    rules = ChainRules(follow_meta_refresh=True)
    assert rules.on_answer(task(), [], Answer(PAGE, 200, text=page)) == Follow(target)
    step = ChainRules().on_answer(task(), [], Answer(PAGE, 200, text=page))
    assert isinstance(step, Finish) and step.meta_refresh == target and step.error is None


def test_a_followed_meta_refresh_records_its_url_as_written_and_warnings() -> None:
    chain: list[Hop] = []
    page = refresh_page("0;url=/\\127.0.0.3:8000/ok")
    step = ChainRules(follow_meta_refresh=True).on_answer(
        task(), chain, Answer(PAGE, 200, text=page)
    )
    assert step == Follow("http://127.0.0.3:8000/ok")
    assert chain[0]["location_raw"] == "/\\127.0.0.3:8000/ok"
    assert chain[0]["warnings"] == ["location_backslash"]


@pytest.mark.parametrize(
    "page",
    [
        refresh_page("5"),  # refreshes the page itself
        refresh_page("soon; url=/x"),
        "<p>http-equiv=refresh is only text here</p>",
        "<html><body>plain</body></html>",
    ],
)
def test_pages_without_a_refresh_elsewhere_finish(page: str) -> None:
    rules = ChainRules(follow_meta_refresh=True)
    step = rules.on_answer(task(), [], Answer(PAGE, 200, text=page))
    assert isinstance(step, Finish) and (step.meta_refresh, step.error) == (None, None)
