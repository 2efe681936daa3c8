"""The check spider's callbacks on a real crawler (``get_crawler``) with hand-built requests,
responses and failures: every way a hop ends gives its row a line."""

from __future__ import annotations

from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from urlcheck import settings as project_settings
from urlcheck.check.hops import RowTask
from urlcheck.check.result import Result
from urlcheck.spiders.check import CheckSpider


def _spider(tmp_path):
    settings = {k: v for k, v in vars(project_settings).items() if k.isupper()}
    crawler = get_crawler(CheckSpider, settings)
    return CheckSpider.from_crawler(crawler, csv=str(tmp_path / "in.csv"))


class UnprintableError(Exception):
    """An exception whose text can't be read: the classifier fails on it."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_a_failure_the_classifier_cannot_read_still_gives_the_row_its_line(tmp_path):
    spider = _spider(tmp_path)
    task = RowTask(7, "http://127.0.0.2/a", "http://127.0.0.2/a", None, {})
    request = spider.requests.request(task, "http://127.0.0.2/a", [])
    failure = Failure(UnprintableError())
    failure.request = request  # type: ignore[attr-defined]

    result = spider.hop_failed(failure)

    assert isinstance(result, Result)
    assert result.row == 7
    assert result.error == "internal_error"
    assert result.error_message is not None
    assert "RuntimeError" in result.error_message
    assert not spider.ledger.has_open()


def test_remote_control_is_not_even_loaded_while_it_is_off() -> None:
    remote = "scrapy.extensions.remote_control.RemoteControl"
    off = get_crawler(CheckSpider, {"REMOTE_CONTROL_ENABLED": False})
    assert remote not in off.settings.getdict("EXTENSIONS_BASE")
    on = get_crawler(CheckSpider, {"REMOTE_CONTROL_ENABLED": True})
    assert remote in on.settings.getdict("EXTENSIONS_BASE")
