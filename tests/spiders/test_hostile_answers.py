"""Real crawls of answers no well-behaved server sends, written byte for byte by a raw server
(tests/servers/rawhttp.py): each row must end as documented in docs/urls-and-verdicts.md, with
the server's answer named in words, and without a retry (it is an answer, not a lost
connection)."""

from __future__ import annotations

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv
from tests.servers.rawhttp import RawHTTPServer, answer

pytestmark = pytest.mark.crawl

LONG = b"/ok?" + b"a" * 20_000  # over Twisted's 16 KiB line, under the URL limit
TOO_LONG = b"/ok?" + b"a" * 70_000  # over URLCHECK_MAX_URL_LENGTH, within the head limit
HUGE = b"/ok?" + b"a" * 10_000_000  # over any head limit

ANSWERS = {
    "/ok": answer(b"HTTP/1.1 200 OK", body=b"ok"),
    "/location-20k": answer(b"HTTP/1.1 301 Moved Permanently", b"Location: " + LONG),
    "/location-70k": answer(b"HTTP/1.1 301 Moved Permanently", b"Location: " + TOO_LONG),
    "/location-10m": answer(b"HTTP/1.1 301 Moved Permanently", b"Location: " + HUGE),
    "/header-10m": answer(b"HTTP/1.1 200 OK", b"X-Junk: " + b"j" * 10_000_000),
    "/two-locations": answer(
        b"HTTP/1.1 301 Moved Permanently", b"Location: /for-users", b"location: /for-crawlers"
    ),
    "/same-location-twice": answer(
        b"HTTP/1.1 301 Moved Permanently", b"Location: /ok", b"Location: /ok"
    ),
    "/page-two-locations": answer(b"HTTP/1.1 200 OK", b"Location: /a", b"Location: /b", body=b"hi"),
    "/status-negative": answer(b"HTTP/1.1 -301 Moved", b"Location: /ok"),
    "/status-20-digits": answer(b"HTTP/1.1 30100000000000000000 Moved", b"Location: /ok"),
    "/status-999": answer(b"HTTP/1.1 999 Request denied"),
    "/http-0.9": b"<html><body>hello</body></html>\n",
    "/garbage": b"\x00\x01\x1b[31mSSH-2.0-OpenSSH_9.6\r\n\r\n",
    "/hello": b"hello",
    "/nothing": b"",
    "/cut-head": b"HTTP/1.1 200 OK\r\nContent-Type: text/ht",
    "/cut-body": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc",
}


@pytest.fixture(scope="module")
def server():
    with RawHTTPServer(ANSWERS, host="127.0.0.7") as srv:
        yield srv


async def check(server, tmp_path, *paths, **settings):
    csv = write_csv(tmp_path / "in.csv", "url\n" + "".join(f"{server.url(p)}\n" for p in paths))
    server.hits.clear()
    results, _ = await crawl(csv, tmp_path / "out.jsonl", **FAST, **settings)
    rows = {r["row"]: r for r in results}
    assert sorted(rows) == list(range(1, len(paths) + 1))
    for path in paths:
        assert server.hits[path] == 1, f"{path} was requested {server.hits[path]} times"
    return [rows[n] for n in range(1, len(paths) + 1)]


@deferred_f_from_coro_f
async def test_long_headers_get_their_documented_results(server, tmp_path):
    long, too_long, huge, junk = await check(
        server, tmp_path, "/location-20k", "/location-70k", "/location-10m", "/header-10m"
    )
    # over Twisted's 16 KiB line limit, under URLCHECK_MAX_URL_LENGTH: followed
    assert long["error"] is None and long["final_status"] == 200
    assert [h["status"] for h in long["chain"]] == [301, 200]
    assert long["chain"][1]["url"] == server.url(LONG.decode())
    # over URLCHECK_MAX_URL_LENGTH: url_too_long, not requested, the Location kept
    assert too_long["error"] == "url_too_long" and too_long["status"] == 301
    assert too_long["error_message"] == (
        "URL of 70,026 characters, over 65,536 (URLCHECK_MAX_URL_LENGTH): not requested"
    )
    assert too_long["chain"][0]["location"] == server.url(TOO_LONG.decode())
    assert len(too_long["chain"]) == 1
    assert set(server.hits) == {
        "/location-20k",
        "/location-70k",
        "/location-10m",
        "/header-10m",
        LONG.decode(),
    }
    # 10 MB: the same, with the Location's first 65,536 characters
    assert huge["error"] == "url_too_long" and huge["status"] == 301
    assert huge["error_message"].startswith("Location of at least ")
    assert huge["error_message"].endswith(
        " bytes, over 65,536 characters (URLCHECK_MAX_URL_LENGTH): not requested; "
        "its first 65,536 characters kept"
    )
    assert [h["status"] for h in huge["chain"]] == [301]
    assert huge["chain"][0]["location"] == HUGE[:65_536].decode()
    # a 10 MB header of another name: too_large
    assert junk["error"] == "too_large" and junk["status"] is None
    assert junk["error_message"] == (
        "the response headers are larger than 262,144 bytes: not read further "
        "(browsers refuse such an answer too)"
    )
    assert junk["chain"] == [
        {
            "url": server.url("/header-10m"),
            "status": None,
            "location": None,
            "ms": None,
            "kind": None,
            "error": "too_large",
        }
    ]


@deferred_f_from_coro_f
async def test_conflicting_locations_are_refused_as_a_browser_refuses_them(server, tmp_path):
    two, same, page = await check(
        server, tmp_path, "/two-locations", "/same-location-twice", "/page-two-locations"
    )
    assert two["error"] == "bad_location" and two["status"] == 301
    assert two["error_message"] == (
        "2 different Location headers, '/for-users' and '/for-crawlers': not followed "
        "(a browser refuses such an answer: Chromium's ERR_RESPONSE_HEADERS_MULTIPLE_LOCATION)"
    )
    assert two["chain"] == [
        {
            "url": server.url("/two-locations"),
            "status": 301,
            "location": None,
            "ms": two["chain"][0]["ms"],
            "kind": None,
        }
    ]
    assert "/for-users" not in server.hits and "/for-crawlers" not in server.hits
    # the same value twice is no conflict (as in Chromium)
    assert same["error"] is None and [h["status"] for h in same["chain"]] == [301, 200]
    # on any status
    assert page["error"] == "bad_location" and page["status"] == 200
    assert page["error_message"].startswith("2 different Location headers, '/a' and '/b': ")


@deferred_f_from_coro_f
async def test_answers_that_are_not_http_are_named_in_words(server, tmp_path):
    rows = await check(
        server,
        tmp_path,
        "/status-negative",
        "/status-20-digits",
        "/http-0.9",
        "/garbage",
        "/hello",
        "/status-999",
    )
    negative, digits, http09, garbage, hello, linkedin = rows
    for row in rows[:5]:
        assert row["error"] == "bad_response" and row["status"] is None
        assert row["chain"][0]["error"] == "bad_response" and row["final_status"] is None
    assert negative["error_message"] == (
        "the server answered status '-301', which is no HTTP status (three digits, from 100)"
    )
    assert digits["error_message"] == (
        "the server answered status '30100000000000000000', which is no HTTP status "
        "(three digits, from 100)"
    )
    assert http09["error_message"] == (
        "the server's answer does not begin with an HTTP status line: it begins "
        "'<html><body>hello</body></html>' (an HTTP/0.9 answer, or not HTTP at all)"
    )
    assert garbage["error_message"] == (
        "the server's answer does not begin with an HTTP status line: it begins "
        "'\\x00\\x01\\x1b[31mSSH-2.0-OpenSSH_9.6' (an HTTP/0.9 answer, or not HTTP at all)"
    )
    assert hello["error_message"].startswith(
        "the server's answer does not begin with an HTTP status line: it begins 'hello' "
    )
    # three digits past 599 are a status browsers show (LinkedIn's 999)
    assert linkedin["error"] is None and linkedin["status"] == 999


@deferred_f_from_coro_f
async def test_a_lost_connection_is_told_in_words(server, tmp_path):
    nothing, head, body = await check(
        server,
        tmp_path,
        "/nothing",
        "/cut-head",
        "/cut-body",
        RETRY_TIMES=0,
        URLCHECK_HOST_DOWN_AFTER=0,
    )
    assert [r["error"] for r in (nothing, head, body)] == ["connection_lost"] * 3
    assert nothing["error_message"] == "the server closed the connection before answering"
    assert head["error_message"] == "the server closed the connection in the middle of its answer"
    assert body["error_message"] == (
        "the server closed the connection before the end of the body it announced"
    )
