"""Every request of the crawl through the proxy pool: a thin adapter, the policy lives in
:mod:`urlcheck.proxypool`.

Per request: a lease for the target host (sticky per host, per CSV column, or not at all),
``meta['proxy']`` and this proxy's own ``Proxy-Authorization``, set afresh every time: a retry
through another proxy must never carry the first one's credentials (Scrapy advisory
GHSA-9x8m-2xpf-crp3). Per response: captcha and block detection, then the lease is released
with the outcome. A captcha or block is retried through another proxy, except inside a sticky
session, which is never rotated: the hop is recorded as blocked and the session ends. A 407 is
no block: the proxy refused our credentials; it is set aside and the request goes to another.

Priority 580: ``process_request`` runs before Scrapy's HttpProxyMiddleware (750), which leaves
our header alone; ``process_response`` runs after the body has been inflated (595, 590) and
before the host back-off (560) and Scrapy's retry (550).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from functools import partial
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from urlcheck.check.detection import Detection, detect, header_map
from urlcheck.config.reader import ConfigError
from urlcheck.crawl import meta as m
from urlcheck.crawl.failures import ProxySessionLostError, classify_exception
from urlcheck.crawl.runtime import runtime
from urlcheck.proxypool import (
    ErrorKind,
    Lease,
    LeaseCapReached,
    NoProxyAvailableError,
    Outcome,
    ProxyPool,
    SessionLost,
    StoreUnavailable,
)
from urlcheck.proxypool.events import (
    Event,
    FallbackLease,
    OurSideFault,
    PairBenched,
    SiteFault,
    Transition,
)
from urlcheck.proxypool.outage import Outage
from urlcheck.signals import proxy_acquired, proxy_released

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

    from urlcheck.config.proxies import ProxySettings

logger = logging.getLogger(__name__)

_AUTH = b"Proxy-Authorization"
STORE_RETRY_INTERVAL = 1.0  # seconds between two tries of a request waiting for the store
CAP_RETRY_INTERVAL = 0.05  # ... and of one waiting for a lease under the proxies' caps
_ERROR_KINDS = {
    "timeout": ErrorKind.TIMEOUT,
    "tls": ErrorKind.TLS,
    "connection_lost": ErrorKind.CONNECTION_LOST,
    "connect": ErrorKind.PROXY_UNREACHABLE,  # we connect to the proxy, not to the site
    "dns": ErrorKind.PROXY_DNS,  # we resolve only the proxy host; the proxy resolves the site
}


class ProxyPoolMiddleware:
    def __init__(self, crawler: Crawler, settings: ProxySettings, pool: ProxyPool) -> None:
        self.crawler = crawler
        self.settings = settings
        self.pool = pool
        self.outage = Outage()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        rt = runtime(crawler)
        settings = rt.config.proxies
        if settings is None:
            raise NotConfigured  # no URLCHECK_PROXIES or URLCHECK_PROXY_FILE: the crawl runs direct
        # In distributed mode the job's processes agree on its name (the pool's default).
        job = rt.cluster_role.job if rt.cluster_role is not None else None
        try:
            pool = ProxyPool(settings.proxies, settings.pool, store=settings.store_for(job))
        except StoreUnavailable as exc:
            refused = settings.refused(exc)
            if refused is None:
                raise
            raise ConfigError(refused) from None  # the cause may quote the URL
        assert crawler.stats is not None
        pool.subscribe(partial(count_event, crawler.stats))
        logger.info(
            "Proxy pool: %d proxies, strategy %s, sticky %s",
            len(settings.proxies),
            settings.pool.strategy,
            settings.sticky if settings.sticky != "column" else f"column:{settings.sticky_column}",
        )
        rt.proxy_pool = pool  # for the probes extension
        middleware = cls(crawler, settings, pool)
        crawler.signals.connect(middleware._closed, signal=signals.spider_closed)
        return middleware

    # --- requests ------------------------------------------------------------------------------

    def _sticky_key(self, request: Request, site: str) -> str | None:
        if self.settings.sticky == "host":
            return site
        if self.settings.sticky == "column":
            task = request.meta.get(m.TASK)
            value = getattr(task, "extra", {}).get(self.settings.sticky_column or "")
            return str(value) if value else None
        return None

    async def process_request(self, request: Request) -> None:
        stats = self.crawler.stats
        assert stats is not None
        probe = request.meta.get(m.PROBE_PROXY)
        if probe is not None:
            proxy = self.pool.get(probe)
            if proxy is None:
                raise IgnoreRequest(f"probe proxy {probe} left the pool")
            self._route(request, proxy.url, proxy.auth_header, proxy.display)
            return
        site = request.meta.get("download_slot") or urlparse_cached(request).hostname or ""
        key = self._sticky_key(request, site)
        started = time.perf_counter()
        while True:
            try:
                lease = self.pool.acquire(site, key)
                break
            except LeaseCapReached:
                # Every proxy is at its (hard) cap: a lease comes free when a request ends.
                stats.inc_value("urlcheck/proxy/cap_waits")
                await asyncio.sleep(CAP_RETRY_INTERVAL)
            except SessionLost as exc:
                # URLCHECK_PROXY_SESSION_LOSS=end: never from another address, the row says so
                stats.inc_value("urlcheck/proxy/sessions_lost")
                raise ProxySessionLostError(f"proxy session lost: {exc}") from None
            except NoProxyAvailableError as exc:
                stats.inc_value("urlcheck/proxy/unavailable")
                raise IgnoreRequest(f"no proxy available: {exc}") from None
            except StoreUnavailable as exc:
                # Fail closed: without the shared store no cap or quarantine holds, so the
                # request waits for it rather than go out unmanaged.
                self.outage.failed(exc)
                await asyncio.sleep(STORE_RETRY_INTERVAL)
        self._store_up()
        self.crawler.signals.send_catch_log(proxy_acquired, seconds=time.perf_counter() - started)
        request.meta[m.LEASE] = lease
        self._route(request, lease.proxy.url, lease.proxy.auth_header, lease.proxy.display)
        stats.inc_value("urlcheck/proxy/assigned")
        if lease.session_lost:
            stats.inc_value("urlcheck/proxy/sessions_lost")

    def _release(self, lease: Lease, outcome: Outcome | None) -> None:
        """A release the store cannot take is dropped: the lease expires (lease_ttl)."""
        try:
            self.pool.release(lease, outcome)
        except StoreUnavailable as exc:
            self.outage.failed(exc)
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("urlcheck/proxy/store_lost_releases")
        else:
            self._store_up()

    def _store_up(self) -> None:
        seconds = self.outage.succeeded()
        if seconds is not None:
            self._count_outage(seconds)

    def _closed(self) -> None:
        # the last successes a shared store holds back, for the processes that go on
        with contextlib.suppress(StoreUnavailable):
            self.pool.flush()
        if self.outage.down:  # still down at the end: count it so far
            self._count_outage(self.outage.elapsed())

    def _count_outage(self, seconds: float) -> None:
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value("urlcheck/proxy/store_outages")
        total = stats.get_value("urlcheck/proxy/store_outage_s", 0.0) + seconds
        stats.set_value("urlcheck/proxy/store_outage_s", round(total, 1))

    @staticmethod
    def _route(request: Request, url: str, auth: str | None, display: str) -> None:
        # Whatever an earlier proxy of this request left goes first.
        request.headers.pop(_AUTH, None)
        request.meta.pop("_auth_proxy", None)
        request.meta["proxy"] = url
        request.meta[m.PROXY] = display
        if auth:
            request.headers[_AUTH] = auth
            request.meta["_auth_proxy"] = url  # tells HttpProxyMiddleware the header is ours

    # --- responses -----------------------------------------------------------------------------

    def process_response(self, request: Request, response: Response) -> Request | Response:
        lease: Lease | None = request.meta.pop(m.LEASE, None)
        if lease is None:
            return response
        stats = self.crawler.stats
        assert stats is not None
        if response.status == 407:
            return self._credentials_refused(request, lease)
        found = self._detect(response)
        latency = request.meta.get("download_latency")
        outcome = Outcome(
            status=response.status,
            latency=latency,
            captcha=found.vendor or True if found.kind == "captcha" else False,
            block=found.vendor or True if found.kind == "block" else False,
        )
        self._release(lease, outcome)
        kind = found.kind
        released = kind or ("ok" if outcome.ok else "soft")
        stats.inc_value(f"urlcheck/proxy/released/{released}")
        self.crawler.signals.send_catch_log(
            proxy_released, proxy=lease.proxy.display, outcome=released
        )
        if kind is None:
            return response
        signature = found.signature or kind
        stats.inc_value(f"urlcheck/proxy/{kind}/{signature}")
        label = f"{kind}:{signature}"
        if lease.key is not None and self.settings.sticky != "none":
            # A sticky session is one visitor: it is not rotated to another proxy.
            try:
                self.pool.end_session(lease.key)
            except StoreUnavailable as exc:  # the session ends with its TTL instead
                self.outage.failed(exc)
            request.meta[m.BLOCKED] = label
            return response
        spider = self.crawler.spider
        assert spider is not None
        retry = get_retry_request(
            request,
            spider=spider,
            reason=f"proxy_{kind}",
            max_retry_times=self.settings.block_retries,
            give_up_log_level=logging.INFO,
            stats_base_key="urlcheck/proxy/retry",
        )
        if retry is not None:
            return retry
        request.meta[m.BLOCKED] = label
        return response

    def _credentials_refused(self, request: Request, lease: Lease) -> Request:
        """A 407: the proxy refused *our* credentials, which says nothing of the site. The pool
        takes the proxy out (dead, flagged misconfigured: a WARNING names it) and the request
        goes to another proxy, inside a sticky session too (the session is ended, not lost:
        the site saw nothing of it through that proxy, so the key starts a new one). Each 407
        takes a proxy out, so the tries are bounded by the pool's size; when every proxy
        refused us the row ends ``ignored``, never ``blocked``."""
        self._release(lease, Outcome(status=407, error=ErrorKind.PROXY_AUTH))
        if lease.key is not None:
            # The proxy never forwarded the request: the site saw nothing of this session through
            # it, so the session starts afresh elsewhere rather than ending as lost.
            try:
                self.pool.end_session(lease.key)
            except StoreUnavailable as exc:  # the session ends with its TTL instead
                self.outage.failed(exc)
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value("urlcheck/proxy/released/proxy_auth")
        self.crawler.signals.send_catch_log(
            proxy_released, proxy=lease.proxy.display, outcome="proxy_auth"
        )
        spider = self.crawler.spider
        assert spider is not None
        retry = get_retry_request(
            request,
            spider=spider,
            reason="proxy_auth",
            max_retry_times=len(self.pool.proxies),
            give_up_log_level=logging.WARNING,
            stats_base_key="urlcheck/proxy/retry",
        )
        if retry is None:
            raise IgnoreRequest(
                "every proxy tried refused urlcheck's credentials (407 Proxy Authentication "
                "Required): check the proxies' user and password"
            )
        return retry

    def _detect(self, response: Response) -> Detection:
        return detect(
            response.status, header_map(response.headers.items()), response.body, response.url
        )

    def process_exception(self, request: Request, exception: Exception) -> None:
        lease: Lease | None = request.meta.pop(m.LEASE, None)
        if lease is None:
            return
        kind, _ = classify_exception(exception)
        if kind in _NOT_SENT:
            # Refused on our side before the proxy was contacted: nothing to judge it on.
            self._release(lease, None)
            released = "not_sent"
        else:
            self._release(lease, Outcome(error=error_kind(exception, kind)))
            released = f"error_{kind}"
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(f"urlcheck/proxy/released/{released}")
        self.crawler.signals.send_catch_log(
            proxy_released, proxy=lease.proxy.display, outcome=released
        )


# Scrapy's TunnelError: "Could not open CONNECT tunnel with proxy host:port [{'status': 403, ...}]"
_TUNNEL_STATUS = re.compile(r"CONNECT tunnel with proxy .*'status': (\d+)")
_GATEWAY_STATUSES = frozenset({502, 503, 504})  # the proxy could not reach the site
# Error kinds of requests refused before the proxy was contacted (the address guard judges a
# literal address before connecting to the proxy, urlcheck.crawl.downloadhandler).
_NOT_SENT = frozenset({"blocked_address"})


def error_kind(exception: BaseException, kind: str) -> ErrorKind:
    """What a download error says about the proxy. A CONNECT the proxy refused (403, 405, ...)
    is the proxy's own doing, and a 407 there is wrong credentials; a gateway error to CONNECT
    is the site out of reach, which blame judges like any connect failure."""
    found = _TUNNEL_STATUS.search(str(exception))
    if found is not None:
        status = int(found.group(1))
        if status == 407:
            return ErrorKind.PROXY_AUTH
        return ErrorKind.CONNECT if status in _GATEWAY_STATUSES else ErrorKind.PROXY_UNREACHABLE
    return _ERROR_KINDS.get(kind, ErrorKind.OTHER)


_STATE_STATS = {"quarantined": "quarantined", "dead": "dead", "degraded": "degraded"}


def count_event(stats: StatsCollector, event: Event) -> None:
    """The pool's events as stats: quarantined, recovered, dead, benched pairs, site faults."""
    if isinstance(event, Transition):
        new, old = event.new.value, event.old.value
        if new in _STATE_STATS:
            stats.inc_value(f"urlcheck/proxy/{_STATE_STATS[new]}")
        elif new == "healthy" and old in ("probing", "degraded", "quarantined"):
            stats.inc_value("urlcheck/proxy/recovered")
    elif isinstance(event, PairBenched):
        stats.inc_value("urlcheck/proxy/benched_pairs")
    elif isinstance(event, SiteFault) and event.at_fault:
        stats.inc_value("urlcheck/proxy/site_faults")
    elif isinstance(event, OurSideFault) and event.active:
        stats.inc_value("urlcheck/proxy/our_side_faults")
    elif isinstance(event, FallbackLease):
        stats.inc_value("urlcheck/proxy/fallback_leases")
