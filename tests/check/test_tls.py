"""The certificate rules without Scrapy or OpenSSL: OpenSSL's verification errors as result
words, a hop's warnings and expiry at a given time, and the audit check they make
(``tls_certificate_invalid``, placed by its level)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.servers.tlsserver import make_ca
from urlcheck.check.audit import CHECKS, AuditRules
from urlcheck.check.hops import Hop, RowTask, hop
from urlcheck.check.result import build_result
from urlcheck.check.tls import (
    CERTIFICATE_INVALID,
    EXPIRING_SOON,
    TLS_FAILURES,
    CertificateCheck,
    TLSConfig,
    hop_tls,
    reason_for,
    tls_invalid,
)
from urlcheck.check.verdict import VerdictRules

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (18, "tls_self_signed"),
        (19, "tls_self_signed"),
        (10, "tls_expired"),
        (9, "tls_expired"),
        (20, "tls_unknown_ca"),
        (21, "tls_unknown_ca"),
        (2, "tls_unknown_ca"),
        (62, "tls_name_mismatch"),
        (7, "tls_invalid"),  # a bad signature: none of the above, still refused by a browser
    ],
)
def test_openssl_errors_read_as_browsers_word_them(error: int, reason: str) -> None:
    assert reason_for(error) == reason
    assert reason in TLS_FAILURES


def test_a_valid_certificate_gives_its_expiry_and_no_warning() -> None:
    check = CertificateCheck(not_after=NOW + timedelta(days=90))
    assert hop_tls(check, NOW) == ([], "2027-03-04T12:00:00Z")


def test_expiring_within_14_days_is_a_warning_and_not_a_failure() -> None:
    soon = CertificateCheck(not_after=NOW + EXPIRING_SOON - timedelta(seconds=1))
    later = CertificateCheck(not_after=NOW + EXPIRING_SOON)
    assert hop_tls(soon, NOW)[0] == ["tls_expiring_soon"]
    assert hop_tls(later, NOW)[0] == []
    assert not tls_invalid(["tls_expiring_soon"])


def test_an_invalid_certificate_is_not_also_expiring_soon() -> None:
    check = CertificateCheck(not_after=NOW - timedelta(days=1))
    check.add("tls_expired")
    check.add("tls_expired")
    check.add("tls_name_mismatch")
    assert hop_tls(check, NOW)[0] == ["tls_expired", "tls_name_mismatch"]
    assert hop_tls(CertificateCheck(), NOW) == ([], None)


def test_a_hop_the_browser_refuses_fails_the_verdict() -> None:
    task = RowTask(1, "https://a.test/", "https://a.test/", "https://a.test/", {})
    good = hop("https://a.test/", status=200)
    assert build_result(task, [good], rules=VerdictRules()).reasons == []
    bad = hop("https://a.test/", status=200)
    bad["warnings"] = ["tls_self_signed"]
    line = build_result(task, [bad], rules=VerdictRules())
    assert (line.verdict, line.reasons) == ("fail", ["tls_certificate_invalid"])
    assert line.warnings == ["tls_self_signed"]
    soon = hop("https://a.test/", status=200)
    soon["warnings"] = ["tls_expiring_soon"]
    line = build_result(task, [soon], rules=VerdictRules())
    assert (line.verdict, line.warnings) == ("pass", ["tls_expiring_soon"])


def test_the_certificate_finding_goes_where_its_audit_check_says() -> None:
    """tls_certificate_invalid is a check of the audit catalogue: its setting places it."""
    check = CHECKS[CERTIFICATE_INVALID]
    assert (check.setting, check.default) == ("URLCHECK_CHECK_TLS_CERTIFICATE_INVALID", "fail")
    task = RowTask(1, "https://a.test/", "https://a.test/", "https://a.test/", {})
    bad = hop("https://a.test/", status=200)
    bad["warnings"] = ["tls_expired"]

    def placed(
        level: str | None,
        row: RowTask = task,
        chain: list[Hop] | None = None,
        error: str | None = None,
    ) -> tuple[object, ...]:
        levels = {} if level is None else {CERTIFICATE_INVALID: level}
        rules = VerdictRules(audit=AuditRules(levels=levels))  # type: ignore[arg-type]
        line = build_result(row, chain or [bad], rules=rules, error=error, error_message=error)
        return line.verdict, line.reasons, line.warnings

    assert placed("warn") == ("pass", [], ["tls_certificate_invalid", "tls_expired"])
    assert placed("off") == ("pass", [], ["tls_expired"])  # the hop's warning stays
    unjudged = RowTask(2, "https://a.test/", "https://a.test/", None, {})
    assert placed(None, unjudged) == (None, [], ["tls_certificate_invalid", "tls_expired"])
    # A chain that broke on the certificate (URLCHECK_TLS=strict) is judged on it too.
    cut = hop("https://a.test/", error="tls")
    cut["warnings"] = ["tls_expired"]
    refused = placed(None, chain=[cut], error="tls")
    assert refused == ("fail", ["error_tls", "tls_certificate_invalid"], ["tls_expired"])


def test_the_check_level_is_a_setting() -> None:
    from scrapy.settings import Settings

    from urlcheck.config.crawlconfig import ConfigError, UrlcheckConfig

    def level(value: str) -> str:
        settings = Settings({"URLCHECK_CHECK_TLS_CERTIFICATE_INVALID": value})
        return UrlcheckConfig.from_settings(settings).check.audit.level(CERTIFICATE_INVALID)

    assert level("warn") == "warn"
    assert level("off") == "off"
    with pytest.raises(ConfigError, match="URLCHECK_CHECK_TLS_CERTIFICATE_INVALID"):
        level("strict")


def test_the_settings_are_checked_when_read(tmp_path) -> None:
    from scrapy.settings import Settings

    from urlcheck.config.crawlconfig import ConfigError, UrlcheckConfig

    def tls(**settings: str) -> TLSConfig:
        return UrlcheckConfig.from_settings(Settings(settings)).tls

    assert (tls().mode, tls().ca_bundle) == ("check", None)
    assert tls(URLCHECK_TLS="Strict").mode == "strict"
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(make_ca().cert_pem())
    assert tls(URLCHECK_CA_BUNDLE=str(bundle)).ca_bundle == bundle
    junk = tmp_path / "junk.pem"
    junk.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n", encoding="ascii")
    with pytest.raises(ConfigError, match="holds no PEM certificate"):
        tls(URLCHECK_CA_BUNDLE=str(junk))
    with pytest.raises(ConfigError, match="URLCHECK_TLS"):
        tls(URLCHECK_TLS="warn")
    with pytest.raises(ConfigError, match="URLCHECK_CA_BUNDLE: cannot read"):
        tls(URLCHECK_CA_BUNDLE=str(tmp_path / "missing.pem"))
