"""A download's failure as the row reads it (urlcheck.crawl.failures): a kind, and a message in
words, never the Python reprs Twisted's failures print as."""

from __future__ import annotations

import pytest
from scrapy.exceptions import DownloadFailedError, ResponseDataLossError
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.python.failure import Failure
from twisted.web._newclient import RequestTransmissionFailed
from twisted.web.client import ResponseFailed, ResponseNeverReceived

from urlcheck.crawl.failures import classify_exception
from urlcheck.crawl.responsehead import BadResponseError


def scrapy_failed(wrapper: Exception) -> DownloadFailedError:
    """What Scrapy's handler raises for a Twisted ``ResponseFailed`` (and kin)."""
    exc = DownloadFailedError(str(wrapper))
    exc.__cause__ = wrapper
    return exc


@pytest.mark.parametrize(
    ("wrapper", "message"),
    [
        (
            ResponseNeverReceived([Failure(ConnectionDone())]),
            "the server closed the connection before answering",
        ),
        (
            ResponseFailed([Failure(ConnectionDone())]),
            "the server closed the connection in the middle of its answer",
        ),
        (
            ResponseNeverReceived([Failure(ConnectionLost())]),
            "the connection was cut before answering (reset, not closed)",
        ),
        (
            RequestTransmissionFailed([Failure(ConnectionLost())]),
            "the connection was cut while the request was being sent (reset, not closed)",
        ),
        (
            ResponseFailed([Failure(ValueError("odd"))]),
            "the connection failed in the middle of its answer: ValueError: odd",
        ),
    ],
)
def test_a_broken_connection_is_told_in_words(wrapper: Exception, message: str) -> None:
    exc = scrapy_failed(wrapper)
    assert "Failure" in str(exc)  # what the row used to say
    assert classify_exception(exc) == ("connection_lost", message)


def test_a_body_cut_short_is_told_in_words() -> None:
    exc = ResponseDataLossError()
    exc.__cause__ = ResponseFailed([Failure(ConnectionDone())])
    assert classify_exception(exc) == (
        "connection_lost",
        "the server closed the connection before the end of the body it announced",
    )


def test_an_answer_refused_keeps_its_kind_and_words() -> None:
    refused = BadResponseError("the server's status line 'HTTP/1.1' has no status code")
    assert classify_exception(refused) == ("bad_response", str(refused))
