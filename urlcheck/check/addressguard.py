"""Which addresses a check may connect to (server-side request forgery guard).

A CSV of someone else's URLs is untrusted input, and so is every Location a site sends: a public
page that redirects to ``http://169.254.169.254/latest/meta-data/`` (cloud metadata) or to
``http://127.0.0.1:22/`` must not make urlcheck, running on a shared server, request it. The
rules, applied to the address actually connected to (:mod:`urlcheck.crawl.downloadhandler` checks
every address the name resolves to, at connect time, so DNS rebinding cannot pass):

* link-local space (169.254.0.0/16, fe80::/10) is never connected to;
* once a chain has been answered from a public address, no later hop of it may reach loopback,
  private, unique-local or reserved space (``0.0.0.0`` included: on Linux it reaches this host);
* a row given in the CSV may reach those by default (users check their own staging hosts),
  unless ``URLCHECK_BLOCK_PRIVATE_INPUT`` is on;
* networks in ``URLCHECK_ALLOW_NETWORKS`` are always allowed, link-local ones included.

IPv4 embedded in IPv6 (``::ffff:169.254.169.254``, NAT64 ``64:ff9b::/96``, 6to4, the deprecated
IPv4-compatible form) is judged as the IPv4 address it reaches. This module knows nothing of
Scrapy; the settings are read by :meth:`AddressPolicy.from_settings`.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from urlcheck.config.reader import ConfigError, SettingsReader

if TYPE_CHECKING:
    from urlcheck.config.reader import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Scope = Literal["public", "link_local", "loopback", "private", "unique_local", "reserved"]

_PRIVATE_V4 = tuple(
    ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
)
_SHARED_V4 = ipaddress.IPv4Network("100.64.0.0/10")  # carrier-grade NAT: someone's inside
_THIS_NETWORK_V4 = ipaddress.IPv4Network("0.0.0.0/8")  # connecting to 0.0.0.0 reaches this host
_UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address reaches when it embeds one; else the address itself."""
    if isinstance(address, ipaddress.IPv4Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def scope_of(address: IPAddress) -> Scope:
    """Where an address lives, judged on the IPv4 address it embeds, if any."""
    address = embedded_ipv4(address)
    if address.is_link_local:
        return "link_local"
    if address.is_loopback or address.is_unspecified or address in _THIS_NETWORK_V4:
        return "loopback"
    if isinstance(address, ipaddress.IPv4Address):
        if any(address in network for network in _PRIVATE_V4) or address in _SHARED_V4:
            return "private"
    elif address in _UNIQUE_LOCAL:
        return "unique_local"
    elif address.is_site_local:  # fec0::/10, deprecated but still someone's inside
        return "private"
    if address.is_global and not address.is_multicast:
        return "public"
    return "reserved"


def literal_address(host: str) -> IPAddress | None:
    """The address a URL host names without DNS: ``[::1]``, ``127.0.0.1`` and the numeric IPv4
    forms the C resolver accepts (``2852039166``, ``0xa9.0xfe.0xa9.0xfe``, ``0251.0376...``)."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not host or not all(c in "0123456789abcdefxABCDEFX." for c in host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


class BlockedAddressError(Exception):
    """A request was not sent because its host resolves only to addresses the guard blocks."""

    def __init__(self, host: str, address: IPAddress, scope: Scope, reason: str) -> None:
        self.host = host
        self.address = address
        self.scope = scope
        self.reason = reason
        shown = f"{host} ({address})" if host.strip("[]") != str(address) else str(address)
        super().__init__(f"{shown} is {scope.replace('_', '-')} address space: {reason}")


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    enabled: bool = True
    allow: tuple[IPNetwork, ...] = ()
    block_private_input: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> AddressPolicy:
        read = SettingsReader(settings)
        allow: list[IPNetwork] = []
        for item in read.str_list("URLCHECK_ALLOW_NETWORKS"):
            try:
                allow.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ConfigError(
                    f"setting URLCHECK_ALLOW_NETWORKS: {item!r} is not a network "
                    "(expected e.g. 10.0.0.0/8 or fd00::/8)"
                ) from None
        return cls(
            enabled=read.boolean("URLCHECK_ADDRESS_GUARD_ENABLED", True),
            allow=tuple(allow),
            block_private_input=read.boolean("URLCHECK_BLOCK_PRIVATE_INPUT", False),
        )

    def allowed(self, address: IPAddress) -> bool:
        inner = embedded_ipv4(address)
        return any(a in network for network in self.allow for a in {address, inner})

    def refusal(self, address: IPAddress, *, after_public: bool) -> tuple[Scope, str] | None:
        """Why ``address`` must not be connected to, or None when it may be. ``after_public``:
        an earlier hop of this chain was answered from a public address."""
        if not self.enabled or self.allowed(address):
            return None
        scope = scope_of(address)
        if scope == "public":
            return None
        if scope == "link_local":
            return scope, "never connected to (cloud metadata lives there)"
        if after_public:
            return scope, "a redirect from a public address may not lead there"
        if self.block_private_input:
            return scope, "not public (URLCHECK_BLOCK_PRIVATE_INPUT is on)"
        return None

    def check(self, host: str, address: IPAddress, *, after_public: bool) -> None:
        """Raise :class:`BlockedAddressError` when ``address`` (``host`` resolved) is refused."""
        refused = self.refusal(address, after_public=after_public)
        if refused is not None:
            raise BlockedAddressError(host, address, *refused)


def is_public(address: IPAddress | None) -> bool:
    return address is not None and scope_of(address) == "public"
