"""The servers as the tests use them: the demo site in a subprocess on 127.0.0.x addresses and its
request log, and the test forward proxies.

`SiteServer` runs ``python -m urlcheck.demo.site``; `host_stats` turns its log into per-host
politeness figures. Both live in the package (the demo command and bench/ use them too). The
proxies (`ProxyServer`) live in tests/servers/, used by the tests and bench/ only.
"""

from tests.servers.proxylauncher import ProxyServer, running_proxies, unused_port
from urlcheck.demo import DEFAULT_HOSTS
from urlcheck.demo.launcher import SiteServer
from urlcheck.demo.serverlog import HostStats, host_stats, read_log

__all__ = [
    "DEFAULT_HOSTS",
    "HostStats",
    "ProxyServer",
    "SiteServer",
    "host_stats",
    "read_log",
    "running_proxies",
    "unused_port",
]
