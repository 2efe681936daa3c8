"""BotWallMiddleware on a real crawler (``get_crawler``, ``build_from_crawler``) with hand-built
requests and responses: a row's hop that a captcha or block page answered is marked ``blocked``
with the signature, whether or not proxies are configured; the site's own 403 is not; a hop the
proxy middleware judged, and requests that are not a row's, are left alone."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from urlcheck.check.hops import RowTask
from urlcheck.crawl import meta as m
from urlcheck.demo.pages import PAGES
from urlcheck.middlewares.walls import BotWallMiddleware

URL = "http://127.0.0.2/page"


class _Spider(Spider):
    name = "walls"


@pytest.fixture
def mw() -> BotWallMiddleware:
    crawler = get_crawler(_Spider)
    crawler.spider = crawler._create_spider()
    return build_from_crawler(BotWallMiddleware, crawler)


def row_request(**meta: object) -> Request:
    task = RowTask(1, URL, URL, None, {})
    return Request(URL, meta={m.TASK: task, m.CHAIN: [], **meta})


def answer(request: Request, name: str) -> Response:
    page = PAGES[name]
    return HtmlResponse(
        URL, status=page.status, headers=list(page.headers), body=page.body, request=request
    )


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_vendors_page_marks_the_hop_blocked_with_its_signature(
    mw: BotWallMiddleware, name: str
) -> None:
    request = row_request()
    response = answer(request, name)
    assert mw.process_response(request, response) is response
    page = PAGES[name]
    assert request.meta[m.BLOCKED] == f"{page.kind}:{page.signature}"
    assert mw.stats.get_value(f"urlcheck/wall/{page.kind}/{page.signature}") == 1


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (403, b"<html><head><title>403 Forbidden</title></head><body>nginx</body></html>"),
        (200, b"<html><body>Welcome. Log in: <div class='g-recaptcha'></div></body></html>"),
        (301, b""),
        (404, b"<html><body>Not found</body></html>"),
    ],
)
def test_the_sites_own_answers_are_not_walls(
    mw: BotWallMiddleware, status: int, body: bytes
) -> None:
    request = row_request()
    mw.process_response(request, HtmlResponse(URL, status=status, body=body, request=request))
    assert m.BLOCKED not in request.meta


def test_a_hop_through_a_proxy_is_left_to_the_proxy_middleware(mw: BotWallMiddleware) -> None:
    # The proxy middleware judged it and tried other proxies; it marks the hop itself.
    request = row_request(**{m.PROXY: "127.0.0.11:3128"})
    mw.process_response(request, answer(request, "cloudflare"))
    assert m.BLOCKED not in request.meta


def test_a_mark_already_set_is_kept(mw: BotWallMiddleware) -> None:
    request = row_request(**{m.BLOCKED: "block:akamai"})
    mw.process_response(request, answer(request, "cloudflare"))
    assert request.meta[m.BLOCKED] == "block:akamai"


def test_a_request_that_is_not_a_rows_hop_is_not_judged(mw: BotWallMiddleware) -> None:
    request = Request(URL)  # robots.txt, a proxy probe
    mw.process_response(request, answer(request, "cloudflare"))
    assert m.BLOCKED not in request.meta
