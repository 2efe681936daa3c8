"""RowErrorsMiddleware on a real crawler (``get_crawler``, ``build_from_crawler``): a callback
that raises on a row's response gives the row its line, logs the traceback at ERROR and counts
it; any other response is left to Scrapy."""

from __future__ import annotations

import logging

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from urlcheck.crawl.runtime import runtime
from urlcheck.middlewares.rowerrors import RowErrorsMiddleware

ROW_URL = "http://127.0.0.2/row"
OTHER_URL = "http://127.0.0.2/robots.txt"


class _Spider(Spider):
    name = "rowerrors"


@pytest.fixture
def crawler():
    crawler = get_crawler(_Spider)
    crawler.spider = crawler._create_spider()
    return crawler


def response(url: str) -> HtmlResponse:
    return HtmlResponse(url, body=b"<html></html>", request=Request(url))


def test_a_rows_callback_error_becomes_its_line(crawler, caplog) -> None:
    built: list[tuple[str, BaseException]] = []

    def row_error(failed: HtmlResponse, exc: BaseException) -> object | None:
        built.append((failed.url, exc))
        # the row's line, then its copies' (rows asking for the same URL)
        return iter([{"row": 3, "error": "internal_error"}]) if failed.url == ROW_URL else None

    runtime(crawler).row_error = row_error  # type: ignore[assignment]
    mw = build_from_crawler(RowErrorsMiddleware, crawler)
    error = KeyError("chain")
    with caplog.at_level(logging.ERROR, "urlcheck.middlewares.rowerrors"):
        out = mw.process_spider_exception(response(ROW_URL), error)

    assert out is not None and list(out) == [{"row": 3, "error": "internal_error"}]
    assert built == [(ROW_URL, error)]
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert record.getMessage() == (
        f"Internal error while handling {ROW_URL}; the row is recorded with internal_error"
    )
    assert record.exc_info is not None and record.exc_info[1] is error
    assert crawler.stats.get_value("urlcheck/internal_errors") == 1


def test_a_response_that_is_no_rows_is_left_to_scrapy(crawler, caplog) -> None:
    runtime(crawler).row_error = lambda failed, exc: None
    mw = build_from_crawler(RowErrorsMiddleware, crawler)
    with caplog.at_level(logging.DEBUG, "urlcheck.middlewares.rowerrors"):
        assert mw.process_spider_exception(response(OTHER_URL), ValueError("x")) is None
    assert caplog.records == []
    assert crawler.stats.get_value("urlcheck/internal_errors") is None


def test_before_the_spider_has_a_row_nothing_is_made_up(crawler) -> None:
    assert runtime(crawler).row_error is None
    mw = build_from_crawler(RowErrorsMiddleware, crawler)
    assert mw.process_spider_exception(response(ROW_URL), ValueError("x")) is None
    assert crawler.stats.get_value("urlcheck/internal_errors") is None
