"""Names under ``localhost`` are loopback (RFC 6761 6.3): resolved without asking the system.

The demo's hosts are such names (``old.localhost``...) on 127.0.0.1, the one loopback address
every platform has: distinct names are distinct hosts to the crawl, so they are checked in
parallel. Browsers resolve these names the same way, but not every system resolver does (macOS,
glibc without nss-myhostname), hence this resolver for the demo crawl.
"""

from __future__ import annotations

from collections.abc import Sequence

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer

LOOPBACK = "127.0.0.1"


def is_localhost(name: str) -> bool:
    name = name.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


class LocalhostResolver(CachingThreadedResolver):
    """Scrapy's resolver, except that ``localhost`` and ``*.localhost`` are 127.0.0.1."""

    def getHostByName(  # noqa: N802 - Twisted's IResolverSimple
        self, name: str, timeout: Sequence[int] = ()
    ) -> defer.Deferred[str]:
        if is_localhost(name):
            return defer.succeed(LOOPBACK)
        return super().getHostByName(name, timeout)
