from __future__ import annotations

from typing import Any, Literal

import pytest

from urlcheck.check.verdict import Verdict, VerdictRules, judge

NEW = "https://example.com/new"
OLD = "https://example.com/old"

# A row whose old URL answers 301 and lands on the expected page with a 200.
GOOD: dict[str, Any] = {
    "expected": NEW,
    "first_status": 301,
    "final_url": NEW,
    "final_status": 200,
    "hops": 1,
    "loop": False,
    "error": None,
}
DEFAULT = VerdictRules()
WARN = VerdictRules(temporary_redirect="warn")
STRICT_SLASH = VerdictRules(ignore_trailing_slash=False)
MAX_2 = VerdictRules(max_chain_hops=2)


def case(
    name: str,
    changes: dict[str, Any],
    reasons: list[str],
    *,
    rules: VerdictRules = DEFAULT,
    warnings: tuple[str, ...] = (),
    no_verdict: bool = False,
) -> Any:
    expected: Literal["pass", "fail"] | None = None
    if not no_verdict:
        expected = "fail" if reasons else "pass"
    return pytest.param(
        {**GOOD, **changes}, rules, Verdict(expected, reasons, list(warnings)), id=name
    )


CASES = [
    # no expected target: no verdict at all
    case("no_expected", {"expected": None}, [], no_verdict=True),
    case("blank_expected", {"expected": "  \t"}, [], no_verdict=True),
    case(
        "no_expected_even_if_broken",
        {"expected": None, "loop": True, "final_url": None, "final_status": None},
        [],
        no_verdict=True,
    ),
    # passes
    case("301_then_200", {}, []),
    case("308_then_200", {"first_status": 308}, []),
    case("301_then_204", {"final_status": 204}, []),
    case("three_hops_first_permanent", {"hops": 3}, []),
    case("trailing_slash_ignored", {"final_url": NEW + "/"}, []),
    case("expected_with_slash", {"expected": NEW + "/"}, []),
    case("case_port_fragment_ignored", {"expected": "HTTPS://EXAMPLE.com:443/new#top"}, []),
    case("query_order_ignored", {"expected": NEW + "?b=2&a=1", "final_url": NEW + "?a=1&b=2"}, []),
    case(
        "percent_encoding_normalised",
        {"expected": "https://example.com/caf%c3%a9", "final_url": "https://example.com/café"},
        [],
    ),
    case(
        "idn_expected",
        {"expected": "https://bücher.de/neu", "final_url": "https://xn--bcher-kva.de/neu"},
        [],
    ),
    case("schemeless_expected_https", {"expected": "example.com/new"}, []),
    case(
        "schemeless_expected_http",
        {"expected": "example.com/new", "final_url": "http://example.com/new"},
        [],
    ),
    case("schemeless_expected_whitespace", {"expected": " example.com/new\u00a0"}, []),
    case(
        "protocol_relative_expected",
        {"expected": "//example.com/new", "final_url": "http://example.com/new"},
        [],
    ),
    # The expected URL is the requested URL itself and it answers directly.
    case(
        "no_redirect_expected_200",
        {"expected": OLD, "first_status": 200, "final_url": OLD, "hops": 0},
        [],
    ),
    case(
        "no_redirect_expected_204",
        {"expected": OLD, "first_status": 204, "final_url": OLD, "final_status": 204, "hops": 0},
        [],
    ),
    # temporary first hop
    case("302_first", {"first_status": 302}, ["temporary_redirect"]),
    case("303_first", {"first_status": 303}, ["temporary_redirect"]),
    case("307_first", {"first_status": 307}, ["temporary_redirect"]),
    case("302_warn", {"first_status": 302}, [], rules=WARN, warnings=("temporary_redirect",)),
    case(
        "307_warn_and_mismatch",
        {"first_status": 307, "final_url": OLD},
        ["final_url_mismatch"],
        rules=WARN,
        warnings=("temporary_redirect",),
    ),
    case("301_warn_rules_no_warning", {}, [], rules=WARN),
    # first response not a redirect
    case(
        "200_direct_elsewhere",
        {"first_status": 200, "final_url": OLD, "hops": 0},
        ["no_redirect", "final_url_mismatch"],
    ),
    case(
        "404_direct_elsewhere",
        {"first_status": 404, "final_url": OLD, "final_status": 404, "hops": 0},
        ["no_redirect", "final_status_404", "final_url_mismatch"],
    ),
    case(
        "404_direct_expected_itself",
        {"expected": OLD, "first_status": 404, "final_url": OLD, "final_status": 404, "hops": 0},
        ["final_status_404"],
    ),
    case("300_first", {"first_status": 300}, ["no_redirect"]),
    case(
        "304_first",
        {"first_status": 304, "final_status": 304, "final_url": OLD, "hops": 0},
        ["no_redirect", "final_status_304", "final_url_mismatch"],
    ),
    case(
        "expected_itself_but_redirected",
        {"expected": OLD, "first_status": 301},
        ["final_url_mismatch"],
    ),
    # final response
    case("301_then_404_at_expected", {"final_status": 404}, ["final_status_404"]),
    case(
        "301_then_410_elsewhere",
        {"final_status": 410, "final_url": OLD},
        ["final_status_410", "final_url_mismatch"],
    ),
    case("301_then_500", {"final_status": 500}, ["final_status_500"]),
    case("301_then_3xx_final", {"final_status": 304}, ["final_status_304"]),
    case("final_mismatch", {"final_url": "https://example.com/other"}, ["final_url_mismatch"]),
    case(
        "final_www_mismatch", {"final_url": "https://www.example.com/new"}, ["final_url_mismatch"]
    ),
    case("final_scheme_mismatch", {"final_url": "http://example.com/new"}, ["final_url_mismatch"]),
    case(
        "schemeless_expected_other_host",
        {"expected": "example.com/new", "final_url": "https://www.example.com/new"},
        ["final_url_mismatch"],
    ),
    case(
        "final_path_case_mismatch", {"final_url": "https://example.com/New"}, ["final_url_mismatch"]
    ),
    case(
        "final_duplicate_param_mismatch",
        {"final_url": NEW + "?a=1&a=1", "expected": NEW + "?a=1"},
        ["final_url_mismatch"],
    ),
    case(
        "trailing_slash_strict",
        {"final_url": NEW + "/"},
        ["final_url_mismatch"],
        rules=STRICT_SLASH,
    ),
    case(
        "root_slash_strict",
        {"expected": "https://example.com", "final_url": "https://example.com/"},
        [],
        rules=STRICT_SLASH,
    ),
    case("final_url_garbage", {"final_url": "http://exa mple.com/"}, ["final_url_mismatch"]),
    # broken chains
    case("loop", {"loop": True, "final_url": None, "final_status": None, "hops": 2}, ["loop"]),
    case(
        "too_many_hops",
        {"error": "too_many_hops", "final_url": None, "final_status": None, "hops": 10},
        ["too_many_hops"],
    ),
    case(
        "timeout_first_hop",
        {
            "error": "timeout",
            "first_status": None,
            "final_url": None,
            "final_status": None,
            "hops": 0,
        },
        ["error_timeout"],
    ),
    case(
        "dns",
        {"error": "dns", "first_status": None, "final_url": None, "final_status": None, "hops": 0},
        ["error_dns"],
    ),
    case(
        "connect_second_hop",
        {"error": "connect", "final_url": None, "final_status": None},
        ["error_connect"],
    ),
    case(
        "bad_location",
        {"error": "bad_location", "final_url": None, "final_status": None, "hops": 0},
        ["error_bad_location"],
    ),
    case(
        "unsupported_scheme",
        {"error": "unsupported_scheme", "final_url": None, "final_status": None, "hops": 0},
        ["error_unsupported_scheme"],
    ),
    case(
        "invalid_url_row",
        {
            "error": "invalid_url",
            "first_status": None,
            "final_url": None,
            "final_status": None,
            "hops": 0,
        },
        ["error_invalid_url"],
    ),
    case(
        "302_then_timeout",
        {"first_status": 302, "error": "timeout", "final_url": None, "final_status": None},
        ["temporary_redirect", "error_timeout"],
    ),
    # chain length threshold
    case("chain_at_threshold", {"hops": 2}, [], rules=MAX_2),
    case("chain_over_threshold", {"hops": 3}, ["chain_longer_than_2"], rules=MAX_2),
    case(
        "chain_threshold_zero",
        {"hops": 1},
        ["chain_longer_than_0"],
        rules=VerdictRules(max_chain_hops=0),
    ),
    case(
        "chain_threshold_zero_direct",
        {"expected": OLD, "first_status": 200, "final_url": OLD, "hops": 0},
        [],
        rules=VerdictRules(max_chain_hops=0),
    ),
    case("chain_threshold_off", {"hops": 9}, []),
    # expected value that is not a URL
    case("invalid_expected_mailto", {"expected": "mailto:x@example.com"}, ["invalid_expected"]),
    case("invalid_expected_space", {"expected": "http://exa mple.com/"}, ["invalid_expected"]),
    case(
        "invalid_expected_plus_chain_reasons",
        {"expected": "javascript:void(0)", "first_status": 302, "final_status": 404},
        ["invalid_expected", "temporary_redirect", "final_status_404"],
    ),
    case(
        "invalid_expected_and_loop",
        {"expected": "ftp://x", "loop": True, "final_url": None, "final_status": None},
        ["invalid_expected", "loop"],
    ),
    # several reasons, in their fixed order
    case(
        "everything_at_once",
        {"first_status": 307, "hops": 4, "final_status": 404, "final_url": OLD},
        ["temporary_redirect", "chain_longer_than_2", "final_status_404", "final_url_mismatch"],
        rules=MAX_2,
    ),
    case(
        "loop_and_chain_length",
        {"loop": True, "hops": 5, "final_url": None, "final_status": None, "first_status": 302},
        ["temporary_redirect", "loop", "chain_longer_than_2"],
        rules=MAX_2,
    ),
    # inconsistent input from a caller never passes
    case("no_response_reported", {"final_url": None, "final_status": None}, ["no_response"]),
    case("no_first_status_reported", {"first_status": None}, ["no_response"]),
]


@pytest.mark.parametrize(("row", "rules", "expected"), CASES)
def test_judge(row: dict[str, Any], rules: VerdictRules, expected: Verdict) -> None:
    verdict = judge(**row, rules=rules)
    assert verdict == expected
    assert (verdict.verdict == "pass") == (verdict.verdict is not None and not verdict.reasons)


@pytest.mark.parametrize(
    ("kwargs", "setting"),
    [
        ({"temporary_redirect": "maybe"}, "URLCHECK_TEMPORARY_REDIRECT"),
        ({"max_chain_hops": -1}, "URLCHECK_MAX_CHAIN_HOPS"),
        ({"max_chain_hops": True}, "URLCHECK_MAX_CHAIN_HOPS"),
        ({"max_chain_hops": "3"}, "URLCHECK_MAX_CHAIN_HOPS"),
    ],
)
def test_rules_name_the_bad_setting(kwargs: dict[str, Any], setting: str) -> None:
    with pytest.raises(ValueError, match=setting):
        VerdictRules(**kwargs)


def test_rules_defaults() -> None:
    assert VerdictRules() == VerdictRules(
        ignore_trailing_slash=True, temporary_redirect="fail", max_chain_hops=None
    )
