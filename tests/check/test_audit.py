"""The audit checks of a row (urlcheck.check.audit): each rule, and where its level puts it."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from urlcheck.check.audit import CHECKS, AuditRules, Check, chain_findings, is_home, register
from urlcheck.check.hops import Hop, RowTask, hop
from urlcheck.check.result import build_result
from urlcheck.check.verdict import VerdictRules
from urlcheck.config.crawlconfig import CheckConfig, ConfigError
from urlcheck.config.file import SETTING_KEYS

ROOT_DOCS = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs"


def chain_of(*steps: tuple[str, int]) -> list[Hop]:
    """(url, status) pairs; each but the last redirects to the next."""
    chain = []
    for (url, status), nxt in zip(steps, [*steps[1:], None], strict=True):
        chain.append(hop(url, status=status, location=nxt[0] if nxt else None))
    return chain


def found(chain: list[Hop], expected: str | None = None) -> list[str]:
    return chain_findings(
        chain, judged=bool(expected), expected=expected, requested_url=chain[0]["url"]
    )


# --- where a finding goes ---------------------------------------------------------------------


def test_a_level_puts_a_finding_in_reasons_warnings_or_nowhere() -> None:
    rules = AuditRules({"redirect_chain": "fail", "nofollow": "off"})
    reasons: list[str] = []
    warnings: list[str] = []
    rules.place(
        ["nofollow", "redirect_chain", "host_round_trip"],
        judged=True,
        reasons=reasons,
        warnings=warnings,
    )
    assert (reasons, warnings) == (["redirect_chain"], ["host_round_trip"])
    # Without an expected target there is no verdict to fail: a warning.
    reasons, warnings = [], []
    rules.place(["redirect_chain"], judged=False, reasons=reasons, warnings=warnings)
    assert (reasons, warnings) == ([], ["redirect_chain"])


def test_reasons_follow_the_catalogue_order_whatever_order_they_are_found_in() -> None:
    reasons: list[str] = []
    AuditRules().place(
        ["canonical_mismatch", "https_downgrade", "noindex", "redirect_to_home"],
        judged=True,
        reasons=reasons,
        warnings=[],
    )
    assert reasons == ["redirect_to_home", "https_downgrade", "noindex", "canonical_mismatch"]


def test_another_part_of_the_crawl_registers_its_own_check() -> None:
    check = Check("test_only_check", "URLCHECK_CHECK_TEST_ONLY", "warn", "a test's")
    try:
        register(check)
        reasons: list[str] = []
        AuditRules({"test_only_check": "fail"}).place(
            ["test_only_check"], judged=True, reasons=reasons, warnings=[]
        )
        assert reasons == ["test_only_check"]
        with pytest.raises(ValueError, match="already registered"):
            register(Check("test_only_check", "URLCHECK_X", "fail", "another"))
    finally:
        CHECKS.pop("test_only_check")


def test_every_check_has_its_setting_its_key_and_its_docs() -> None:
    settings = (ROOT_DOCS / "settings.md").read_text("utf-8")
    verdicts = (ROOT_DOCS / "urls-and-verdicts.md").read_text("utf-8")
    for code, check in CHECKS.items():
        assert check.setting.removeprefix("URLCHECK_").lower() in SETTING_KEYS, code
        assert f"`{check.setting}`" in settings, code
        assert f"`{code}`" in verdicts, code


def test_the_settings_set_each_level_and_a_bad_one_is_named() -> None:
    config = CheckConfig.from_settings(
        Settings({"URLCHECK_CHECK_REDIRECT_CHAIN": "FAIL", "URLCHECK_MANY_TO_ONE_ROWS": 3})
    )
    assert config.audit.level("redirect_chain") == "fail"
    assert config.audit.level("https_downgrade") == "fail"  # the default
    assert config.audit.many_to_one_rows == 3
    with pytest.raises(ConfigError, match="URLCHECK_CHECK_NOINDEX"):
        CheckConfig.from_settings(Settings({"URLCHECK_CHECK_NOINDEX": "maybe"}))
    with pytest.raises(ConfigError, match="URLCHECK_CHECK_MANY_TO_ONE"):
        CheckConfig.from_settings(Settings({"URLCHECK_CHECK_MANY_TO_ONE": "fail"}))
    with pytest.raises(ConfigError, match="URLCHECK_MANY_TO_ONE_SHARE"):
        CheckConfig.from_settings(Settings({"URLCHECK_MANY_TO_ONE_SHARE": 0}))


# --- 1. soft 404 by redirect --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "home"),
    [
        ("http://a.test/", True),
        ("http://a.test", True),
        ("http://a.test/?utm_source=x", True),
        ("http://a.test/Index.HTML", True),
        ("http://a.test/home", True),
        ("http://a.test/#top", True),
        ("http://a.test/en/", False),
        ("http://a.test/shop", False),
        ("http://a.test/home/page", False),
    ],
)
def test_a_home_page_is_the_root_or_an_index_page(url: str, home: bool) -> None:
    assert is_home(url) is home


def test_a_redirect_to_the_home_page_is_a_soft_404_unless_home_was_asked_for() -> None:
    to_home = chain_of(("http://a.test/old-page", 301), ("https://b.test/", 200))
    assert found(to_home) == ["redirect_to_home"]
    assert found(to_home, "https://b.test/new-page") == ["redirect_to_home"]
    assert found(to_home, "https://b.test/") == []
    assert found(to_home, "b.test") == []  # a scheme-less home page
    # A home page moving to a home page is a host migration, not a soft 404.
    assert found(chain_of(("http://a.test/", 301), ("https://b.test/", 200))) == []
    assert found(chain_of(("http://a.test/x", 200))) == []


# --- 2. chain quality ---------------------------------------------------------------------------


def test_more_than_one_hop_is_a_chain() -> None:
    assert found(chain_of(("http://a.test/1", 301), ("http://a.test/2", 200))) == []
    three = chain_of(*[(f"http://a.test/{n}", 301) for n in (3, 2, 1)], ("http://a.test/0", 200))
    assert found(three) == ["redirect_chain"]


def test_a_temporary_status_anywhere_after_the_first_hop_is_found() -> None:
    mixed = chain_of(("http://a.test/1", 301), ("http://a.test/2", 302), ("http://a.test/3", 200))
    assert found(mixed, "http://a.test/3") == ["redirect_chain", "temporary_redirect_in_chain"]
    # The first hop of a row with a target is the verdict's (temporary_redirect) ...
    first = chain_of(("http://a.test/1", 307), ("http://a.test/2", 200))
    assert found(first, "http://a.test/2") == []
    # ... a row without one has no verdict: the audit tells of it.
    assert found(first) == ["temporary_redirect_in_chain"]


def test_an_https_to_http_step_is_a_downgrade() -> None:
    down = chain_of(("https://a.test/1", 301), ("http://a.test/2", 301), ("https://a.test/3", 200))
    assert "https_downgrade" in found(down)
    up = chain_of(("http://a.test/1", 301), ("https://a.test/2", 200))
    assert found(up) == []


def test_a_chain_that_leaves_a_host_and_comes_back_is_found() -> None:
    trip = chain_of(("http://a.test/1", 301), ("http://b.test/2", 301), ("http://a.test/3", 200))
    assert found(trip) == ["redirect_chain", "host_round_trip"]
    www = chain_of(("http://a.test/1", 301), ("http://www.a.test/1", 301), ("http://a.test/2", 200))
    assert "host_round_trip" in found(www)
    onward = chain_of(("http://a.test/1", 301), ("http://a.test/2", 301), ("http://b.test/", 200))
    assert "host_round_trip" not in found(onward)


# --- the result line ----------------------------------------------------------------------------


def task(expected: str | None) -> RowTask:
    return RowTask(1, "https://a.test/old", "https://a.test/old", expected, {})


def test_a_fail_check_fails_a_row_with_a_target_and_warns_on_a_row_without() -> None:
    chain = chain_of(("https://a.test/old", 301), ("http://a.test/new", 200))
    judged = build_result(task("http://a.test/new"), chain, rules=VerdictRules())
    assert (judged.verdict, judged.reasons) == ("fail", ["https_downgrade"])
    free = build_result(task(None), chain, rules=VerdictRules())
    assert (free.verdict, free.reasons, free.warnings) == (None, [], ["https_downgrade"])
    off = VerdictRules(audit=AuditRules({"https_downgrade": "off"}))
    assert build_result(task("http://a.test/new"), chain, rules=off).verdict == "pass"


def test_a_broken_chain_is_not_audited() -> None:
    chain = chain_of(("https://a.test/old", 301), ("http://a.test/", 200))
    result = build_result(task(None), chain, rules=VerdictRules(), loop=True)
    assert result.warnings == []


def test_a_check_of_another_part_of_the_crawl_is_placed_by_its_level() -> None:
    # What the crawl layer does for a TLS certificate (issue 24 point 5): it registers its
    # check, and hands the code over as a finding or as a hop's warning.
    check = Check("test_hop_check", "URLCHECK_CHECK_TEST_HOP", "fail", "a test's")
    register(check)
    try:
        chain = chain_of(("https://a.test/old", 301), ("https://a.test/new", 200))
        chain[0]["warnings"] = ["test_hop_check", "location_percent"]
        judged = build_result(task("https://a.test/new"), chain, rules=VerdictRules())
        assert (judged.reasons, judged.warnings) == (["test_hop_check"], ["location_percent"])
        warn = VerdictRules(audit=AuditRules({"test_hop_check": "warn"}))
        failed = [hop("https://a.test/old", error="tls")]
        handed = build_result(
            task("https://a.test/new"), failed, rules=warn, error="tls", findings=["test_hop_check"]
        )
        assert (handed.reasons, handed.warnings) == (["error_tls"], ["test_hop_check"])
    finally:
        CHECKS.pop("test_hop_check")


def test_a_query_or_fragment_is_not_the_path() -> None:
    assert is_home("http://a.test?next=/shop")
    assert is_home("http://a.test#/shop")
    assert not is_home("not a url/")
