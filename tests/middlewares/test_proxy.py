"""ProxyPoolMiddleware on a real crawler (``get_crawler``, ``build_from_crawler``) with hand-built
requests and responses, over a real pool in memory: each request gets a lease and that proxy's
own credentials, each response or error releases the lease with its outcome, and a captcha or a
block is retried through another proxy except inside a sticky session."""

from __future__ import annotations

import base64
from ipaddress import ip_address

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from twisted.internet.error import TCPTimedOutError

from urlcheck.check.addressguard import BlockedAddressError
from urlcheck.crawl import meta as m
from urlcheck.crawl.failures import ProxySessionLostError, classify_exception
from urlcheck.middlewares.proxy import ProxyPoolMiddleware
from urlcheck.proxypool import Lease

PROXIES = ["http://alice:s3cret@127.0.0.11:3128", "http://127.0.0.12:3128"]
URL = "http://127.0.0.2/page"
CHALLENGE = b"<html><head><title>Just a moment...</title></head><body></body></html>"


class _Spider(Spider):
    name = "proxied"


def build(**settings: object) -> ProxyPoolMiddleware:
    crawler = get_crawler(_Spider, {"URLCHECK_PROXIES": PROXIES, **settings})
    crawler.spider = crawler._create_spider()
    return build_from_crawler(ProxyPoolMiddleware, crawler)


def stats(mw: ProxyPoolMiddleware) -> dict[str, object]:
    assert mw.crawler.stats is not None
    return {k: v for k, v in mw.crawler.stats.get_stats().items() if k.startswith("urlcheck/")}


def states(mw: ProxyPoolMiddleware) -> dict[str, str]:
    return {p["id"]: p["state"] for p in mw.pool.snapshot()["proxies"]}


def response(request: Request, status: int = 200, body: bytes = b"<html>ok</html>") -> Response:
    return HtmlResponse(request.url, status=status, body=body, request=request)


def test_without_proxies_the_middleware_is_off() -> None:
    crawler = get_crawler(_Spider)
    with pytest.raises(NotConfigured):
        build_from_crawler(ProxyPoolMiddleware, crawler)


@deferred_f_from_coro_f
async def test_a_request_goes_through_a_leased_proxy_with_its_own_credentials() -> None:
    mw = build(URLCHECK_PROXY_STICKY="none", URLCHECK_PROXY_STRATEGY="round-robin")
    routed = []
    for _ in range(2):
        request = Request(URL)
        await mw.process_request(request)
        lease = request.meta[m.LEASE]
        assert isinstance(lease, Lease)
        assert request.meta["proxy"] == lease.proxy.url
        assert request.meta[m.PROXY] == lease.proxy.display
        routed.append((lease.proxy.display, request.headers.get(b"Proxy-Authorization")))
    basic = b"Basic " + base64.b64encode(b"alice:s3cret")
    assert sorted(routed) == [("127.0.0.11:3128", basic), ("127.0.0.12:3128", None)]
    assert stats(mw)["urlcheck/proxy/assigned"] == 2


@deferred_f_from_coro_f
async def test_a_retry_through_another_proxy_never_carries_the_first_ones_credentials() -> None:
    mw = build(URLCHECK_PROXY_STICKY="none")
    [with_credentials] = [p.id for p in mw.pool.proxies if p.auth_header is not None]
    mw.pool.remove(with_credentials)  # only the proxy without credentials is left
    request = Request(URL, headers={"Proxy-Authorization": "Basic b2xkOm9sZA=="})
    request.meta["_auth_proxy"] = "http://127.0.0.11:3128"
    await mw.process_request(request)
    assert request.meta["proxy"] == "http://127.0.0.12:3128"
    assert b"Proxy-Authorization" not in request.headers
    assert "_auth_proxy" not in request.meta


@deferred_f_from_coro_f
async def test_a_probe_goes_through_the_proxy_it_probes_without_a_lease() -> None:
    mw = build()
    probed = mw.pool.proxies[0]
    request = Request(URL, meta={m.PROBE_PROXY: probed.id})
    await mw.process_request(request)
    assert request.meta["proxy"] == probed.url
    assert m.LEASE not in request.meta
    gone = Request(URL, meta={m.PROBE_PROXY: "127.0.0.99:1"})
    with pytest.raises(IgnoreRequest, match=r"probe proxy 127\.0\.0\.99:1 left the pool"):
        await mw.process_request(gone)


@deferred_f_from_coro_f
async def test_with_nothing_eligible_and_fail_closed_the_request_is_dropped() -> None:
    mw = build(URLCHECK_PROXY_FAIL_CLOSED=True)
    for proxy_id in list(states(mw)):
        mw.pool.remove(proxy_id)
    with pytest.raises(IgnoreRequest, match="no proxy available"):
        await mw.process_request(Request(URL))
    assert stats(mw)["urlcheck/proxy/unavailable"] == 1


@deferred_f_from_coro_f
async def test_a_good_answer_releases_the_lease_as_ok() -> None:
    mw = build()
    request = Request(URL)
    await mw.process_request(request)
    answer = response(request)
    assert mw.process_response(request, answer) is answer
    assert m.LEASE not in request.meta
    assert stats(mw)["urlcheck/proxy/released/ok"] == 1
    assert mw.pool.snapshot()["totals"]["leases_active"] == 0


def test_a_response_without_a_lease_is_none_of_its_business() -> None:
    mw = build()
    request = Request(URL)
    answer = response(request, 403, CHALLENGE)
    assert mw.process_response(request, answer) is answer
    assert stats(mw) == {}


@deferred_f_from_coro_f
async def test_a_challenge_is_retried_through_another_proxy_then_recorded() -> None:
    mw = build(URLCHECK_PROXY_STICKY="none", URLCHECK_PROXY_BLOCK_RETRIES=1)
    request = Request(URL)
    await mw.process_request(request)
    retry = mw.process_response(request, response(request, 403, CHALLENGE))
    assert isinstance(retry, Request) and retry is not request
    assert retry.meta["retry_times"] == 1
    assert retry.dont_filter
    await mw.process_request(retry)
    last = mw.process_response(retry, response(retry, 403, CHALLENGE))
    assert isinstance(last, Response)
    assert retry.meta[m.BLOCKED] == "captcha:cloudflare-challenge"
    found = stats(mw)
    assert found["urlcheck/proxy/released/captcha"] == 2
    assert found["urlcheck/proxy/captcha/cloudflare-challenge"] == 2
    assert found["urlcheck/proxy/retry/count"] == 1
    assert found["urlcheck/proxy/retry/max_reached"] == 1


@deferred_f_from_coro_f
async def test_a_sticky_session_is_not_rotated_on_a_challenge() -> None:
    mw = build(URLCHECK_PROXY_STICKY="host")
    request = Request(URL)
    await mw.process_request(request)
    assert request.meta[m.LEASE].key == "127.0.0.2"
    assert mw.pool.snapshot()["totals"]["sessions"] == 1
    answer = response(request, 403, CHALLENGE)
    assert mw.process_response(request, answer) is answer  # not retried: one visitor
    assert request.meta[m.BLOCKED] == "captcha:cloudflare-challenge"
    assert "urlcheck/proxy/retry/count" not in stats(mw)
    assert mw.pool.snapshot()["totals"]["sessions"] == 0  # the session ended with it


@pytest.mark.parametrize("sticky", ["none", "host"])
@deferred_f_from_coro_f
async def test_a_407_kills_the_proxy_and_is_retried_through_another(sticky: str) -> None:
    # Our credentials were refused: no block, and a sticky session moves to another proxy.
    mw = build(URLCHECK_PROXY_STICKY=sticky)
    request = Request(URL)
    await mw.process_request(request)
    dead = request.meta[m.LEASE].proxy.id
    retry = mw.process_response(request, response(request, 407, b""))
    assert isinstance(retry, Request)
    assert m.BLOCKED not in retry.meta and m.BLOCKED not in request.meta
    assert states(mw)[dead] == "dead"
    assert stats(mw)["urlcheck/proxy/released/proxy_auth"] == 1
    assert stats(mw)["urlcheck/proxy/dead"] == 1
    assert not any(k.startswith("urlcheck/proxy/block/") for k in stats(mw))
    await mw.process_request(retry)
    assert retry.meta[m.LEASE].proxy.id != dead


@deferred_f_from_coro_f
async def test_when_every_proxy_refuses_our_credentials_the_row_is_not_blocked() -> None:
    mw = build(URLCHECK_PROXY_STICKY="host")
    request = Request(URL)
    for _ in PROXIES:
        await mw.process_request(request)
        answer = mw.process_response(request, response(request, 407, b""))
        assert isinstance(answer, Request)
        request = answer
    await mw.process_request(request)  # a fallback lease: every proxy is out
    with pytest.raises(IgnoreRequest, match="refused urlcheck's credentials"):
        mw.process_response(request, response(request, 407, b""))
    assert m.BLOCKED not in request.meta


@deferred_f_from_coro_f
async def test_a_download_error_is_the_proxys_outcome() -> None:
    mw = build()
    request = Request(URL)
    await mw.process_request(request)
    mw.process_exception(request, TCPTimedOutError())
    assert m.LEASE not in request.meta
    assert stats(mw)["urlcheck/proxy/released/error_timeout"] == 1
    [proxy] = [p for p in mw.pool.snapshot()["proxies"] if p["outcomes"]]
    assert proxy["success_rate"] == 0.0


@deferred_f_from_coro_f
async def test_a_request_refused_before_it_left_is_not_held_against_the_proxy() -> None:
    mw = build()
    request = Request(URL)
    await mw.process_request(request)
    refused = BlockedAddressError("10.1.2.3", ip_address("10.1.2.3"), "private", "private address")
    mw.process_exception(request, refused)
    assert stats(mw)["urlcheck/proxy/released/not_sent"] == 1
    assert all(not p["outcomes"] for p in mw.pool.snapshot()["proxies"])
    assert mw.pool.snapshot()["totals"]["leases_active"] == 0


@deferred_f_from_coro_f
async def test_a_session_whose_proxy_left_ends_with_the_rows_session_lost_error() -> None:
    """URLCHECK_PROXY_SESSION_LOSS=end (the default): a request of a sticky session whose
    proxy left is not sent from another address; the row records why."""
    mw = build()
    first = Request(URL)
    await mw.process_request(first)  # sticky per host: the host's session starts
    lease = first.meta[m.LEASE]
    mw.process_response(first, response(first))
    mw.pool.remove(lease.proxy.id)
    later = Request(URL)
    with pytest.raises(ProxySessionLostError, match="proxy session lost") as caught:
        await mw.process_request(later)
    assert classify_exception(caught.value)[0] == "session_lost"
    assert "proxy" not in later.meta
    assert stats(mw)["urlcheck/proxy/sessions_lost"] == 1
    again = Request(URL)  # the host's next request starts a new session
    await mw.process_request(again)
    assert again.meta["proxy"] != lease.proxy.url


@deferred_f_from_coro_f
async def test_with_session_loss_move_the_session_goes_on_elsewhere_and_says_so() -> None:
    mw = build(URLCHECK_PROXY_SESSION_LOSS="move")
    first = Request(URL)
    await mw.process_request(first)
    lease = first.meta[m.LEASE]
    mw.process_response(first, response(first))
    mw.pool.remove(lease.proxy.id)
    later = Request(URL)
    await mw.process_request(later)
    assert later.meta[m.LEASE].session_lost
    assert stats(mw)["urlcheck/proxy/sessions_lost"] == 1
