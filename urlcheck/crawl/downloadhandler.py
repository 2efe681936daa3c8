"""Scrapy's HTTP/1.1 download handler with the address guard (:mod:`urlcheck.check.addressguard`) on
the connection itself, and certificates verified as a browser does (:mod:`urlcheck.crawl.tlscheck`).

The guard cannot judge a URL by its name: a name can resolve to 169.254.169.254, and resolve
differently the next time (DNS rebinding). So this handler connects through its own endpoint,
which resolves the name with the reactor's resolver (Scrapy's DNS cache included), drops every
address the policy refuses, and connects only to what is left: the address judged is the
address connected to. Each chain context (answered from a public address yet, or not) and bind
address gets its own connection pool, so a connection opened for an input row to a private host
is never reused by a redirect from a public one.

Through a proxy the proxy resolves the name, so only a URL whose host is an address literal
(``http://169.254.169.254/``, ``http://[::ffff:a9fe:a9fe]/``, ``http://0xa9.0xfe.0xa9.0xfe/``)
can be refused here; the proxy's own egress rules must do the rest (docs/security.md).

Its connections read a response head with :mod:`urlcheck.crawl.responsehead`'s parser, and an
answer that parser refuses ends the download with that parser's error, never retried.

Scrapy has no public hook for the endpoint, so this subclasses its private ``_ScrapyAgent``;
every such access is in this module.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import TYPE_CHECKING, Any, cast

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler, _ScrapyAgent
from scrapy.exceptions import DownloadFailedError, ResponseDataLossError
from scrapy.utils._download_handlers import (
    get_dataloss_msg,
    normalize_bind_address,
    wrap_twisted_exceptions,
)
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import error as txerror
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.endpoints import TCP4ClientEndpoint, TCP6ClientEndpoint, wrapClientTLS
from twisted.internet.interfaces import IResolutionReceiver, IStreamClientEndpoint
from twisted.web.client import Agent, HTTPConnectionPool
from twisted.web.error import SchemeNotSupported
from twisted.web.iweb import IAgentEndpointFactory
from zope.interface import implementer  # type: ignore[import-untyped]

from urlcheck.check.addressguard import AddressPolicy, IPAddress, literal_address
from urlcheck.crawl import meta as m
from urlcheck.crawl.responsehead import AnswerError, client_factory
from urlcheck.crawl.runtime import runtime
from urlcheck.crawl.tlscheck import CertificateLedger, CheckingContextFactory

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.internet.interfaces import IAddress, IHostResolution
    from twisted.internet.protocol import Protocol
    from twisted.web.client import URI
    from twisted.web.iweb import IPolicyForHTTPS

logger = logging.getLogger(__name__)


@implementer(IResolutionReceiver)
class _Collect:
    def __init__(self) -> None:
        self.addresses: list[IAddress] = []
        self.done: Deferred[list[IAddress]] = Deferred()

    def resolutionBegan(self, resolution: IHostResolution) -> None:  # noqa: N802 (Twisted's interface)
        pass

    def addressResolved(self, address: IAddress) -> None:  # noqa: N802 (Twisted's interface)
        self.addresses.append(address)

    def resolutionComplete(self) -> None:  # noqa: N802 (Twisted's interface)
        self.done.callback(self.addresses)


@implementer(IStreamClientEndpoint)
class GuardedEndpoint:
    """Resolves ``host``, keeps the addresses ``policy`` allows, connects to the first that
    accepts; fails with :class:`~urlcheck.check.addressguard.BlockedAddressError` when every address
    is refused, without opening any connection."""

    def __init__(
        self,
        reactor: Any,
        host: str,
        port: int,
        *,
        policy: AddressPolicy,
        after_public: bool,
        timeout: float = 30,
        bind_address: tuple[str, int] | None = None,
        resolver: Any = None,
    ) -> None:
        self._reactor = reactor
        self._host = host
        self._port = port
        self._policy = policy
        self._after_public = after_public
        self._timeout = timeout
        self._bind_address = bind_address
        self._resolver = resolver

    def connect(self, protocolFactory: Any) -> Deferred[Protocol]:  # noqa: N803
        return Deferred.fromCoroutine(self._connect(protocolFactory))

    async def _addresses(self) -> list[IPAddress]:
        literal = literal_address(self._host)
        if literal is not None:
            return [literal]
        resolver: Any = self._resolver or self._reactor.nameResolver  # an IHostnameResolver
        receiver = _Collect()
        resolver.resolveHostName(receiver, self._host, portNumber=self._port)
        resolved = await receiver.done
        found: list[IPAddress] = []
        for address in resolved:
            host = getattr(address, "host", None)
            if host is not None:
                found.append(ipaddress.ip_address(host.split("%", 1)[0]))
        if not found:
            raise txerror.DNSLookupError(f"Couldn't find the hostname '{self._host}'")
        return found

    async def _connect(self, factory: Any) -> Protocol:
        addresses = await self._addresses()
        allowed = []
        for address in addresses:
            if self._policy.refusal(address, after_public=self._after_public) is None:
                allowed.append(address)
        if not allowed:
            self._policy.check(self._host, addresses[0], after_public=self._after_public)
        last: BaseException | None = None
        for address in allowed:
            tcp = TCP6ClientEndpoint if address.version == 6 else TCP4ClientEndpoint
            endpoint = tcp(
                self._reactor, str(address), self._port, self._timeout, self._bind_address
            )
            try:
                protocol: Protocol = await endpoint.connect(factory)
            except txerror.ConnectError as exc:  # refused, unreachable, timed out: try the next
                last = exc
            else:
                return protocol
        assert last is not None
        raise last


@implementer(IAgentEndpointFactory)
class _GuardedEndpointFactory:
    def __init__(
        self,
        reactor: Any,
        context_factory: Any,  # an IPolicyForHTTPS
        *,
        policy: AddressPolicy,
        after_public: bool,
        timeout: float,
        bind_address: tuple[str, int] | None,
    ) -> None:
        self._reactor = reactor
        self._context_factory = context_factory
        self._policy = policy
        self._after_public = after_public
        self._timeout = timeout
        self._bind_address = bind_address

    def endpointForURI(self, uri: URI) -> Any:  # noqa: N802 (Twisted's interface)
        endpoint = GuardedEndpoint(
            self._reactor,
            uri.host.decode("ascii"),
            uri.port,
            policy=self._policy,
            after_public=self._after_public,
            timeout=self._timeout,
            bind_address=self._bind_address,
        )
        if uri.scheme == b"http":
            return endpoint
        if uri.scheme == b"https":
            creator = self._context_factory.creatorForNetloc(uri.host, uri.port)
            return wrapClientTLS(creator, cast("Any", endpoint))
        raise SchemeNotSupported(f"Unsupported scheme: {uri.scheme!r}")


class _GuardedScrapyAgent(_ScrapyAgent):
    def __init__(self, *, handler: GuardedHTTPDownloadHandler, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._handler = handler

    def _get_agent(self, request: Request, timeout: float) -> Agent:
        from twisted.internet import reactor

        policy = self._handler.policy
        after_public = bool(request.meta.get(m.AFTER_PUBLIC))
        if request.meta.get("proxy"):
            # The proxy resolves names; an address literal is all that can be judged here.
            host = urlparse_cached(request).hostname or ""
            literal = literal_address(host)
            if literal is not None:
                policy.check(host, literal, after_public=after_public)
            return super()._get_agent(request, timeout)
        bind_address = normalize_bind_address(request.meta.get("bindaddress") or self._bindAddress)
        factory = _GuardedEndpointFactory(
            reactor,
            self._contextFactory,
            policy=policy,
            after_public=after_public,
            timeout=timeout,
            bind_address=bind_address,
        )
        pool = self._handler.pool_for(after_public, bind_address)
        return Agent.usingEndpointFactory(reactor, factory, pool=pool)  # type: ignore[no-untyped-call,no-any-return]


class GuardedHTTPDownloadHandler(HTTP11DownloadHandler):
    """``DOWNLOAD_HANDLERS`` for http and https; the plain Scrapy handler when the guard is off."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        rt = runtime(crawler)
        self.policy = rt.config.addresses
        self._pool._factory = client_factory(rt.config.check.max_url_length)
        # Certificates as a browser sees them (urlcheck.crawl.tlscheck), unless the project set
        # a context factory of its own.
        if crawler.settings["DOWNLOADER_CLIENTCONTEXTFACTORY"] == "SENTINEL":
            if rt.certificates is None:
                rt.certificates = CertificateLedger()
            checking = CheckingContextFactory(self._contextFactory, rt.config.tls, rt.certificates)
            self._contextFactory = cast("IPolicyForHTTPS", checking)
        self._pools: dict[tuple[bool, tuple[str, int] | None], HTTPConnectionPool] = {}

    def pool_for(
        self, after_public: bool, bind_address: tuple[str, int] | None
    ) -> HTTPConnectionPool:
        key = (after_public, bind_address)
        pool = self._pools.get(key)
        if pool is None:
            from twisted.internet import reactor

            pool = self._pools[key] = HTTPConnectionPool(reactor, persistent=True)  # type: ignore[no-untyped-call]
            pool.maxPersistentPerHost = self._pool.maxPersistentPerHost
            pool._factory = self._pool._factory
        return pool

    async def download_request(self, request: Request) -> Response:
        try:
            return await self._download(request)
        except DownloadFailedError as exc:
            refused = _answer_error(exc)
            if refused is None:
                raise
            raise refused from exc

    async def _download(self, request: Request) -> Response:
        if not self.policy.enabled:
            return await super().download_request(request)
        agent = _GuardedScrapyAgent(
            handler=self,
            contextFactory=self._contextFactory,
            bindAddress=self._bind_address,
            pool=self._pool,
            maxsize=self._default_maxsize,
            warnsize=self._default_warnsize,
            fail_on_dataloss=self._fail_on_dataloss,
            crawler=self._crawler,
            tls_verbose_logging=self._tls_verbose_logging,
        )
        try:
            with wrap_twisted_exceptions():
                return await maybe_deferred_to_future(agent.download_request(request))
        except ResponseDataLossError:
            if not self._fail_on_dataloss_warned:
                logger.warning(get_dataloss_msg(request.url))
                self._fail_on_dataloss_warned = True
            raise

    async def close(self) -> None:
        pools = list(self._pools.values())
        self._pools.clear()
        if pools:
            from twisted.internet import reactor

            closing = DeferredList([p.closeCachedConnections() for p in pools])  # type: ignore[no-untyped-call]
            # closeCachedConnections can hang on a stuck peer, as Scrapy's close notes.
            timer = cast("Any", reactor).callLater(self._disconnect_timeout, closing.cancel)
            await maybe_deferred_to_future(closing)
            if timer.active():
                timer.cancel()
        await super().close()


def _answer_error(exc: BaseException) -> AnswerError | None:
    """The :class:`AnswerError` a failed download ended with (Twisted wraps it in a
    ``ResponseFailed``, Scrapy that in a ``DownloadFailedError``), else None."""
    cause = exc.__cause__
    for reason in getattr(cause, "reasons", ()):
        if isinstance(reason.value, AnswerError):
            return reason.value
    return None
