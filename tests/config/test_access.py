"""URLCHECK_HEADERS, URLCHECK_COOKIES and URLCHECK_AUTH: parsed, validated (errors name the
setting, host and name, never a value) and matched to a request's scheme, host and port."""

from __future__ import annotations

import base64
import json

import pytest
from scrapy.settings import Settings

from urlcheck.config.access import SiteAccess
from urlcheck.config.reader import ConfigError

SECRET = "s3cret-Value"


def access(**settings: object) -> SiteAccess:
    return SiteAccess.from_settings(Settings(settings))


def test_each_host_gets_its_own_and_nothing_else() -> None:
    found = access(
        URLCHECK_HEADERS={"*": {"X-Audit": "urlcheck"}, "a.example": {"X-Token": SECRET}},
        URLCHECK_COOKIES={"a.example:8443": {"consent": "yes"}},
        URLCHECK_AUTH={
            "https://B.Example": "ann:" + SECRET,
            "[::1]": {"user": "u", "password": "p"},
        },
    )
    a = found.for_request("https", "a.example", 443)
    assert a.headers == (("X-Audit", "urlcheck"), ("X-Token", SECRET))
    assert a.cookies == () and a.authorization is None
    assert found.for_request("https", "a.example", 8443).cookies == (("consent", "yes"),)
    assert found.for_request("https", "sub.a.example", 443).headers == (("X-Audit", "urlcheck"),)
    b = found.for_request("https", "b.example", 443)
    assert b.authorization == b"Basic " + base64.b64encode(f"ann:{SECRET}".encode())
    assert found.for_request("http", "b.example", 80).authorization is None  # pinned to https
    assert found.for_request("http", "::1", 8080).authorization is not None
    assert SECRET not in repr(found) and SECRET not in repr(a)
    assert found.described() == {
        "URLCHECK_HEADERS": {"*": ["X-Audit"], "a.example": ["X-Token"]},
        "URLCHECK_COOKIES": {"a.example:8443": ["consent"]},
        "URLCHECK_AUTH": ["https://B.Example", "[::1]"],
    }


def test_json_from_the_command_line_and_a_password_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("STAGING_PASSWORD", SECRET)
    found = access(
        URLCHECK_HEADERS=json.dumps({"a.example": {"X-Token": "t"}}),
        URLCHECK_AUTH={"a.example": {"user": "ann", "password_env": "STAGING_PASSWORD"}},
    )
    extras = found.for_request("http", "a.example", 80)
    assert extras.headers == (("X-Token", "t"),)
    assert base64.b64decode(extras.authorization[6:]) == f"ann:{SECRET}".encode()
    assert not access().enabled and access(URLCHECK_HEADERS="").described()["URLCHECK_AUTH"] == []


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"URLCHECK_HEADERS": "{not json"}, "setting URLCHECK_HEADERS: expected a mapping"),
        ({"URLCHECK_HEADERS": {"a.example": SECRET}}, "host 'a.example': expected a mapping"),
        ({"URLCHECK_HEADERS": {"a.example/path": {"X": "1"}}}, "'a.example/path' is not a host"),
        ({"URLCHECK_HEADERS": {"ftp://a.example": {"X": "1"}}}, "is not a host"),
        ({"URLCHECK_HEADERS": {"a.example:99999": {"X": "1"}}}, "is not a host"),
        ({"URLCHECK_HEADERS": {"a.example": {"Bad Name": SECRET}}}, "'Bad Name' is not a header"),
        ({"URLCHECK_HEADERS": {"a.example": {"Host": SECRET}}}, "'Host' is not a header"),
        ({"URLCHECK_HEADERS": {"a.example": {"X-A": SECRET + "\r\nX: 1"}}}, "line break"),
        ({"URLCHECK_HEADERS": {"*": {"Authorization": SECRET}}}, "would send a credential"),
        ({"URLCHECK_HEADERS": {"a.example": {"X-A": [SECRET]}}}, "header X-A must be text"),
        ({"URLCHECK_COOKIES": {"*": {"sid": SECRET}}}, "would send credentials to every host"),
        ({"URLCHECK_COOKIES": {"a.example": {"sid": SECRET + ";x"}}}, "cookie sid's value"),
        ({"URLCHECK_COOKIES": {"a.example": {"s d": SECRET}}}, "'s d' is not a cookie name"),
        ({"URLCHECK_AUTH": {"*": "u:" + SECRET}}, "would send credentials to every host"),
        ({"URLCHECK_AUTH": {"a.example": SECRET}}, "expected user:password"),
        ({"URLCHECK_AUTH": {"a.example": 3}}, "expected user:password or a table"),
        ({"URLCHECK_AUTH": {"a.example": {"user": "a:b", "password": SECRET}}}, "no ':'"),
        ({"URLCHECK_AUTH": {"a.example": {"user": "u", "password_env": "NO_SUCH"}}}, "NO_SUCH ("),
    ],
)  # fmt: skip
def test_a_bad_value_is_named_and_never_shown(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        access(**settings)
    assert message in str(raised.value)
    assert SECRET not in str(raised.value)
