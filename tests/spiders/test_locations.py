"""Real crawls: the demo site sends Locations that browsers read differently from how they look
(``/location/<form>``), and each chain ends where a browser would, with the warning named."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv
from urlcheck.check.urls import without_userinfo

pytestmark = pytest.mark.crawl

FROM, TO = "127.0.0.2", "127.0.0.3"


def expectations(port: int) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """form -> (Location as sent, where a browser goes next, warnings)."""
    to_ok = f"http://{TO}:{port}/ok"
    here = f"http://{FROM}:{port}"
    return {
        "backslash": (f"/\\{TO}:{port}/ok", to_ok, ("location_backslash",)),
        "backslashes": (f"\\\\{TO}:{port}\\ok", to_ok, ("location_backslash",)),
        "http-one-slash": (
            f"http:/{TO}:{port}/ok",
            f"{here}/{TO}:{port}/ok",  # same scheme: a path on the same host
            ("location_scheme_no_slashes",),
        ),
        "http-no-slash": (
            f"http:{TO}:{port}/ok",
            f"{here}/location/{TO}:{port}/ok",
            ("location_scheme_no_slashes",),
        ),
        "https-one-slash": (
            f"https:/{TO}:{port}/ok",
            f"https://{TO}:{port}/ok",
            ("location_scheme_no_slashes",),
        ),
        "https-no-slash": (
            f"https:{TO}:{port}/ok",
            f"https://{TO}:{port}/ok",
            ("location_scheme_no_slashes",),
        ),
        "three-slashes": (f"///{TO}:{port}/ok", to_ok, ("location_extra_slashes",)),
        "ipv4-hex": (f"http://0x7f.0.0.3:{port}/ok", to_ok, ("location_ipv4_numeric",)),
        "ipv4-int": (f"http://2130706435:{port}/ok", to_ok, ("location_ipv4_numeric",)),
        "ipv4-short": (f"http://127.3:{port}/ok", to_ok, ("location_ipv4_numeric",)),
        "ipv4-octal": (f"http://0177.0.0.3:{port}/ok", to_ok, ("location_ipv4_numeric",)),
        "userinfo": (
            f"http://{FROM}:{port}@{TO}:{port}/ok",
            f"http://{FROM}:{port}@{TO}:{port}/ok",
            ("location_userinfo",),
        ),
        "percent": ("/ok?discount=100%", f"{here}/ok?discount=100%", ("location_percent",)),
    }


@deferred_f_from_coro_f
async def test_each_surprising_location_ends_where_a_browser_goes(site, tmp_path):
    port = site.port
    expected = expectations(port)
    forms = [*expected, "empty"]
    urls = [site.url(FROM, f"/location/{form}?host={TO}") for form in forms]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(urls) + "\n")
    results, _ = await crawl(csv, tmp_path / "out.jsonl", **FAST, RETRY_TIMES=0)
    rows = {forms[r["row"] - 1]: r for r in results}
    assert sorted(rows) == sorted(forms)

    for form, (raw, target, warnings) in expected.items():
        row = rows[form]
        first = row["chain"][0]
        assert (first["status"], first["location"], first.get("location_raw", target)) == (
            301,
            target,
            raw,
        )
        assert ("location_raw" in first) is (raw != target), form
        assert first["warnings"] == list(warnings), form
        assert set(warnings) <= set(row["warnings"]), form
        assert row["chain"][1]["url"] == without_userinfo(target), form
        assert "location_raw" not in row["chain"][1] and "warnings" not in row["chain"][1]

    for form in ("backslash", "backslashes", "three-slashes", "ipv4-hex", "ipv4-int"):
        assert rows[form]["chain"][0]["kind"] == "cross_host"
        assert (rows[form]["final_url"], rows[form]["final_status"]) == (
            f"http://{TO}:{port}/ok",
            200,
        )
    assert rows["http-one-slash"]["final_status"] == 404
    assert rows["http-one-slash"]["chain"][0]["kind"] == "path"
    # https to a plain-HTTP port: the TLS handshake fails, on the host a browser would use.
    assert rows["https-one-slash"]["error"] == "tls"
    assert rows["https-no-slash"]["chain"][-1]["error"] == "tls"
    # Credentials in a Location are not sent on, but the host they hide is where the hop goes.
    assert rows["userinfo"]["final_url"] == f"http://{TO}:{port}/ok"
    assert rows["percent"]["final_status"] == 200
    assert "/ok?discount=100%" in {e["path"] for e in site.log() if e["host"] == FROM}

    empty = rows["empty"]
    assert empty["error"] == "bad_location" and empty["final_url"] is None
    assert empty["chain"][0]["warnings"] == ["location_empty"]
    assert "location_empty" in empty["warnings"]
    assert f"a browser would request {urls[-1]} again" in empty["error_message"]


@deferred_f_from_coro_f
async def test_plain_locations_have_no_raw_copy_and_no_warnings(site, tmp_path):
    url = site.url(FROM, "/chain/2")
    csv = write_csv(tmp_path / "in.csv", f"url\n{url}\n")
    [row], _ = await crawl(csv, tmp_path / "out.jsonl", **FAST)
    assert [h["status"] for h in row["chain"]] == [301, 301, 200]
    for entry in row["chain"]:
        assert "location_raw" not in entry and "warnings" not in entry
    assert row["warnings"] == ["redirect_chain"]  # the audit's, no Location's


@deferred_f_from_coro_f
async def test_input_url_in_numeric_ipv4_form_is_requested_as_a_browser_would(site, tmp_path):
    csv = write_csv(
        tmp_path / "in.csv", f"url\nhttp://2130706435:{site.port}/ok?id=numeric-input\n"
    )
    [row], _ = await crawl(csv, tmp_path / "out.jsonl", **FAST)
    assert row["requested_url"] == f"http://{TO}:{site.port}/ok?id=numeric-input"
    assert row["final_status"] == 200 and "url_ipv4_numeric" in row["notes"]


@deferred_f_from_coro_f
async def test_meta_refresh_target_is_resolved_as_a_browser_would(site, tmp_path):
    raw = f"/\\{TO}:{site.port}/ok"
    url = site.url(FROM, f"/meta-refresh?to={quote(raw)}&id=meta-backslash")
    csv = write_csv(tmp_path / "in.csv", f"url\n{url}\n")
    [row], _ = await crawl(csv, tmp_path / "out.jsonl", **FAST, URLCHECK_FOLLOW_META_REFRESH=True)
    first = row["chain"][0]
    assert (first["status"], first["location"], first["location_raw"]) == (
        200,
        f"http://{TO}:{site.port}/ok",
        raw,
    )
    assert first["warnings"] == ["location_backslash"] and "location_backslash" in row["warnings"]
    assert (row["final_url"], row["final_status"]) == (f"http://{TO}:{site.port}/ok", 200)
