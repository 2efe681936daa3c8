"""Headers, cookies and basic auth per host: the middleware on hand-built requests, then real
crawls against the demo site's /require endpoints, a redirect to another host among them. The
credentials reach no log, result, report, meta.json or hosts.json."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
from urllib.parse import quote

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from tests.conftest import FAST, crawl, write_csv
from urlcheck.middlewares.siteaccess import SiteAccessMiddleware
from urlcheck.reports.run import run_report

PASSWORD = "Pa55-w0rd-secret"
TOKEN = "tok-7c1d-secret"
SESSION = "sess-91af-secret"
SECRETS = [PASSWORD, TOKEN, SESSION, base64.b64encode(f"ann:{PASSWORD}".encode()).decode()]


def _middleware(**settings: object) -> SiteAccessMiddleware:
    crawler = get_crawler(Spider, settings)
    return build_from_crawler(SiteAccessMiddleware, crawler)


def test_off_without_settings() -> None:
    with pytest.raises(NotConfigured):
        _middleware()


def test_a_request_gets_its_hosts_extras_once_even_when_retried() -> None:
    middleware = _middleware(
        URLCHECK_HEADERS={"a.test": {"X-Token": TOKEN}},
        URLCHECK_COOKIES={"a.test": {"sid": SESSION}},
        URLCHECK_AUTH={"a.test:8080": f"ann:{PASSWORD}"},
    )
    request = Request("http://a.test:8080/x", headers={"Cookie": "jar=1"})
    middleware.process_request(request)
    middleware.process_request(request.copy())  # a retry of the same request
    again = request.copy()
    middleware.process_request(again)
    assert again.headers[b"X-Token"] == TOKEN.encode()
    assert again.headers[b"Cookie"] == f"jar=1; sid={SESSION}".encode()
    assert again.headers[b"Authorization"] == b"Basic " + base64.b64encode(
        f"ann:{PASSWORD}".encode()
    )
    other = Request("http://b.test:8080/x")
    middleware.process_request(other)
    assert not {b"X-Token", b"Cookie", b"Authorization"} & set(other.headers)
    default_port = Request("http://a.test/x")
    middleware.process_request(default_port)
    assert b"Authorization" not in default_port.headers  # the key names port 8080
    mine = Request("http://a.test:8080/x", headers={"Authorization": "Bearer own"})
    middleware.process_request(mine)
    assert mine.headers[b"Authorization"] == b"Bearer own"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.crawl
@deferred_f_from_coro_f
async def test_sites_that_ask_get_it_and_a_redirect_to_another_host_does_not(
    site, tmp_path, caplog
):
    a, b = "127.0.0.4", "127.0.0.5"
    # The site is told what to expect as a hash: no secret in a URL, so none in the results.
    auth = f"/require/auth?sha256={_sha(f'ann:{PASSWORD}')}"
    rows = [
        site.url(a, auth),  # 1
        site.url(a, f"/require/cookie?name=sid&sha256={_sha(SESSION)}"),  # 2
        site.url(a, f"/require/header?name=X-Token&sha256={_sha(TOKEN)}"),  # 3
        site.url(a, "/redirect/301?to=" + quote(auth, safe="")),  # 4: same host, asked again
        site.url(a, f"/301-redirect-to-host?host={b}&path=" + quote(auth, safe="")),  # 5
        site.url(b, auth),  # 6
    ]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
    job = tmp_path / "job"
    with caplog.at_level(logging.DEBUG):
        results, _ = await crawl(
            csv,
            job / "results.jsonl",
            **FAST,
            LOG_LEVEL="DEBUG",
            JOBDIR=str(job),
            URLCHECK_AUTH={a: f"ann:{PASSWORD}"},
            URLCHECK_COOKIES={a: {"sid": SESSION}},
            URLCHECK_HEADERS=json.dumps({a: {"X-Token": TOKEN}}),  # as -s gives it
        )
    final = {r["row"]: r["final_status"] for r in results}
    # Row 5 went to b with a's request on its way: b saw no Authorization (401).
    assert final == {1: 200, 2: 200, 3: 200, 4: 200, 5: 401, 6: 401}
    five = next(r for r in results if r["row"] == 5)
    assert [hop["url"].split("/")[2].split(":")[0] for hop in five["chain"]] == [a, b]

    meta = json.loads((job / "meta.json").read_text())
    assert meta["settings"]["URLCHECK_AUTH"] == [a]
    assert meta["settings"]["URLCHECK_COOKIES"] == {a: ["sid"]}
    assert meta["settings"]["URLCHECK_HEADERS"] == {a: ["X-Token"]}
    out = io.StringIO()
    assert run_report(job, None, out=out, err=out) == 0
    written = {
        "log": caplog.text,
        **{p.name: p.read_bytes().decode("latin-1") for p in job.iterdir()},
    }
    assert {"results.jsonl", "meta.json", "report.html"} <= written.keys()
    assert [(name, s) for name, text in written.items() for s in SECRETS if s in text] == []
