"""The chain rules without Scrapy: answers in, follow or finish out."""

from __future__ import annotations

import pytest

from urlcheck.check.chain import Answer, ChainRules, Finish, Follow
from urlcheck.check.hops import Hop, RowTask


def task() -> RowTask:
    return RowTask(1, "http://a.test/", "http://a.test/", None, {})


def test_a_redirect_is_followed_and_recorded_with_its_kind() -> None:
    chain: list[Hop] = []
    step = ChainRules().on_answer(
        task(), chain, Answer("http://a.test/old", 301, location=b"/new", ms=12)
    )
    assert step == Follow("http://a.test/new")
    assert chain == [
        {
            "url": "http://a.test/old",
            "status": 301,
            "location": "http://a.test/new",
            "ms": 12,
            "kind": "path",
            "location_raw": "/new",
        }
    ]


def test_a_final_answer_finishes_with_its_meta_refresh() -> None:
    chain: list[Hop] = []
    page = '<html><head><meta http-equiv="refresh" content="0; url=/next"></head></html>'
    step = ChainRules().on_answer(task(), chain, Answer("http://a.test/", 200, text=page))
    assert isinstance(step, Finish) and step.meta_refresh == "http://a.test/next"
    assert step.final_page is not None and step.final_page["robots"] == []
    assert [h["status"] for h in chain] == [200]


def test_meta_refresh_is_followed_only_when_asked_and_only_on_2xx() -> None:
    page = '<meta http-equiv="refresh" content="0; url=/next">'
    rules = ChainRules(follow_meta_refresh=True)
    assert rules.on_answer(task(), [], Answer("http://a.test/", 200, text=page)) == Follow(
        "http://a.test/next"
    )
    assert rules.on_answer(task(), [], Answer("http://a.test/", 404, text=page)) == Finish(
        meta_refresh="http://a.test/next"
    )


def test_head_refused_is_asked_again_with_get_without_a_hop() -> None:
    row = task()
    chain: list[Hop] = []
    step = ChainRules().on_answer(row, chain, Answer("http://a.test/", 405, method="HEAD"))
    assert step == Follow("http://a.test/", method="GET")
    assert chain == []
    assert row.notes == ["head_fallback_get"]
    ChainRules().on_answer(row, chain, Answer("http://a.test/b", 501, method="HEAD"))
    assert row.notes == ["head_fallback_get"]  # noted once per row


def test_a_get_answered_405_is_a_result() -> None:
    assert ChainRules().on_answer(task(), [], Answer("http://a.test/", 405)) == Finish()


def test_a_loop_finishes_the_row() -> None:
    chain: list[Hop] = []
    rules = ChainRules()
    assert rules.on_answer(task(), chain, Answer("http://a.test/1", 302, location=b"/2")) == Follow(
        "http://a.test/2"
    )
    step = rules.on_answer(task(), chain, Answer("http://a.test/2", 302, location=b"/1"))
    assert step == Finish(loop=True)
    assert chain[-1]["location"] == "http://a.test/1"


@pytest.mark.parametrize(("max_hops", "hops_allowed"), [(0, 0), (1, 1), (3, 3)])
def test_the_hop_limit(max_hops: int, hops_allowed: int) -> None:
    rules, row = ChainRules(max_hops=max_hops), task()
    chain: list[Hop] = []
    steps = [
        rules.on_answer(
            row, chain, Answer(f"http://a.test/{i}", 301, location=f"/{i + 1}".encode())
        )
        for i in range(hops_allowed + 1)
    ]
    assert all(isinstance(step, Follow) for step in steps[:-1])
    assert steps[-1] == Finish(
        error="too_many_hops", error_message=f"more than {max_hops} redirects (URLCHECK_MAX_HOPS)"
    )


def test_a_3xx_without_location_is_a_bad_location() -> None:
    assert ChainRules().on_answer(task(), [], Answer("http://a.test/", 304)) == Finish(
        error="bad_location", error_message="304 without a Location header"
    )
    step = ChainRules().on_answer(task(), [], Answer("http://a.test/", 301))
    assert isinstance(step, Finish)
    assert step.error == "bad_location"


def test_an_unfollowable_location_keeps_the_header_as_sent() -> None:
    chain: list[Hop] = []
    step = ChainRules().on_answer(
        task(), chain, Answer("http://a.test/", 301, location=b"ftp://files.test/x")
    )
    assert isinstance(step, Finish)
    assert step.error == "unsupported_scheme"
    assert chain[0]["location"] == "ftp://files.test/x"


def test_a_hop_blocked_on_every_proxy_ends_the_row_with_the_vendor() -> None:
    chain: list[Hop] = []
    step = ChainRules().on_answer(
        task(),
        chain,
        Answer("http://a.test/", 403, blocked="captcha:cloudflare-challenge", proxied=True),
    )
    assert step == Finish(
        error="blocked",
        error_message="captcha:cloudflare-challenge (status 403): a captcha page by cloudflare "
        "on every proxy tried",
    )
    assert chain[0].get("block") == "captcha:cloudflare-challenge"
    assert chain[0].get("vendor") == "cloudflare"


@pytest.mark.parametrize(
    ("blocked", "vendor", "says"),
    [
        ("block:akamai", "akamai", "block:akamai (status 200): a block page by akamai "),
        (
            "block:datadome-banned",
            "datadome",
            "block:datadome-banned (status 200): a block page by datadome ",
        ),
        ("captcha:human-check", "generic", "captcha:human-check (status 200): a captcha page "),
        ("block:block-page", "generic", "block:block-page (status 200): a block page "),
    ],
)
def test_a_wall_met_without_proxies_ends_the_row_and_says_the_site_was_not_seen(
    blocked: str, vendor: str, says: str
) -> None:
    chain: list[Hop] = []
    step = ChainRules().on_answer(
        task(), chain, Answer("http://a.test/", 200, location=b"/next", blocked=blocked)
    )
    assert isinstance(step, Finish) and step.error == "blocked"
    assert step.error_message is not None and step.error_message.startswith(says)
    assert step.error_message.endswith("answered, not the site")
    assert chain == [
        {
            "url": "http://a.test/",
            "status": 200,
            "location": None,
            "ms": None,
            "kind": None,
            "block": blocked,
            "vendor": vendor,
        }
    ]


def test_a_wall_taken_as_the_answer_warns_or_is_not_looked_at() -> None:
    """URLCHECK_BOT_WALLS=warn: the wall's page is the site's answer (a 403 ends the chain, a
    redirect is followed), its hop names the wall and warns; off: nothing is said of it."""
    wall = Answer("http://a.test/", 403, blocked="captcha:cloudflare-challenge")
    chain: list[Hop] = []
    step = ChainRules(bot_walls="warn").on_answer(task(), chain, wall)
    assert isinstance(step, Finish) and step.error is None
    assert chain[0].get("status") == 403 and chain[0].get("vendor") == "cloudflare"
    assert chain[0].get("block") == "captcha:cloudflare-challenge"
    assert chain[0].get("warnings") == ["bot_wall"]
    redirect = Answer("http://a.test/", 301, location=b"/next", blocked="block:akamai")
    assert isinstance(ChainRules(bot_walls="warn").on_answer(task(), [], redirect), Follow)
    quiet: list[Hop] = []
    step = ChainRules(bot_walls="off").on_answer(task(), quiet, wall)
    assert isinstance(step, Finish) and step.error is None
    assert "block" not in quiet[0] and "warnings" not in quiet[0]


def test_a_failure_adds_an_error_hop() -> None:
    chain: list[Hop] = []
    end = ChainRules().on_failure(chain, "http://a.test/", "timeout", "took too long")
    assert end == Finish(error="timeout", error_message="took too long")
    assert chain == [
        {
            "url": "http://a.test/",
            "status": None,
            "location": None,
            "ms": None,
            "kind": None,
            "error": "timeout",
        }
    ]


def test_a_location_too_long_to_read_keeps_its_status_and_first_characters() -> None:
    chain: list[Hop] = []
    rules = ChainRules(max_url_length=16)
    # the bytes kept end inside a character (é is 2 bytes): the partial character is dropped
    kept = b"/caf\xc3\xa9" * 8 + b"\xc3"
    end = rules.on_location_too_long(chain, "http://a.test/", 301, kept, 9999)
    assert end.error == "url_too_long"
    assert end.error_message == (
        "Location of at least 9,999 bytes, over 16 characters (URLCHECK_MAX_URL_LENGTH): "
        "not requested; its first 16 characters kept"
    )
    assert chain == [
        {
            "url": "http://a.test/",
            "status": 301,
            "location": "/café/café/café/",
            "ms": None,
            "kind": None,
        }
    ]
    # bytes that are not UTF-8 are kept byte for byte, as any Location
    chain = []
    rules.on_location_too_long(chain, "http://a.test/", 302, b"/caf\xe9/x", 9999)
    assert chain[0]["location"] == "/caf\xe9/x"


def test_two_different_locations_are_a_bad_location_naming_both() -> None:
    chain: list[Hop] = []
    answer = Answer("http://a.test/", 301, location=b"/users", extra_locations=(b"/crawlers",))
    step = ChainRules().on_answer(task(), chain, answer)
    assert step == Finish(
        error="bad_location",
        error_message=(
            "2 different Location headers, '/users' and '/crawlers': not followed (a browser "
            "refuses such an answer: Chromium's ERR_RESPONSE_HEADERS_MULTIPLE_LOCATION)"
        ),
    )
    assert chain == [
        {"url": "http://a.test/", "status": 301, "location": None, "ms": None, "kind": None}
    ]


def test_conflicting_locations_are_refused_on_any_status_and_shown_short() -> None:
    long = b"/" + b"x" * 300
    answer = Answer(
        "http://a.test/", 200, location=b"/a", extra_locations=(b"/a", long, b"/caf\xc3\xa9")
    )
    step = ChainRules().on_answer(task(), [], answer)
    assert isinstance(step, Finish) and step.error == "bad_location"
    assert step.error_message.startswith(
        f"3 different Location headers, '/a', '/{'x' * 199}... (301 characters)' and '/café': "
    )


def test_the_same_location_twice_is_followed() -> None:
    answer = Answer("http://a.test/", 301, location=b"/new", extra_locations=(b"/new",))
    assert ChainRules().on_answer(task(), [], answer) == Follow("http://a.test/new")
