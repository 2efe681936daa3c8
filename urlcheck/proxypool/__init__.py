"""A proxy pool with health, blame, quarantine and sticky sessions. Knows nothing of Scrapy.

The surface: ``ProxyPool`` (``acquire``, ``release``, ``add``, ``remove``, ``due_probes``,
``report_probe``, ``snapshot``), ``Proxy``, ``Outcome`` and ``ErrorKind``, ``PoolConfig``. See
docs/proxypool.md.
This package MUST NOT import Scrapy, Twisted, or the adapters (``crawl``, ``spiders``,
``middlewares``, ``extensions``, ``commands``, ``config.crawlconfig``).
"""

from urlcheck.proxypool.clock import Clock, ManualClock, system_clock
from urlcheck.proxypool.config import ConfigError, PoolConfig
from urlcheck.proxypool.pool import (
    Lease,
    LeaseCapReached,
    NoProxyAvailableError,
    ProxyPool,
    SessionLost,
)
from urlcheck.proxypool.proxy import Credentials, Proxy, ProxySpecError, parse_proxies
from urlcheck.proxypool.rules.health import State
from urlcheck.proxypool.rules.outcome import ErrorKind, Outcome
from urlcheck.proxypool.rules.probes import ProbeTask
from urlcheck.proxypool.snapshot import PoolSnapshot
from urlcheck.proxypool.store import (
    MemoryStore,
    PoolStore,
    StoreError,
    StoreUnavailable,
    store_from_uri,
)

__all__ = [
    "Clock",
    "ConfigError",
    "Credentials",
    "ErrorKind",
    "Lease",
    "LeaseCapReached",
    "ManualClock",
    "MemoryStore",
    "NoProxyAvailableError",
    "Outcome",
    "PoolConfig",
    "PoolSnapshot",
    "PoolStore",
    "ProbeTask",
    "Proxy",
    "ProxyPool",
    "ProxySpecError",
    "SessionLost",
    "State",
    "StoreError",
    "StoreUnavailable",
    "parse_proxies",
    "store_from_uri",
    "system_clock",
]
