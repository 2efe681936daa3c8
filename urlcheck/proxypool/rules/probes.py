"""Active probes: the core decides who is due and what a result means; the caller sends them.

A probe is a request for a control URL through one proxy. A control URL that fails through every
proxy is itself broken, so its failures count against no proxy; a failure counts only when the
same URL worked through another proxy since it last failed through one.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from urlcheck.proxypool.proxy import Proxy

__all__ = ["ControlUrlStats", "ProbeTask"]

_RESULTS_KEPT = 20


@dataclass(frozen=True, slots=True)
class ProbeTask:
    """Send ``method`` for ``control_url`` through ``proxy``, then call ``ProxyPool.report_probe``.

    GET: a configured control URL; it passes with a 2xx answer. HEAD: one of the crawl's own
    URLs (``ProxyPool.add_probe_target``); it passes with any answer of the site, i.e. any status
    but a 407 or a gateway error of the proxy (502, 504).
    """

    proxy: Proxy
    control_url: str
    method: str = "GET"

    @property
    def proxy_id(self) -> str:
        return self.proxy.id


class ControlUrlStats:
    """Recent probe results of one control URL, across proxies."""

    __slots__ = (
        "broken",
        "checking_until",
        "failed",
        "last_ok_at",
        "method",
        "ok",
        "results",
        "url",
    )

    def __init__(self, url: str, method: str = "GET") -> None:
        self.url = url
        self.method = method
        self.last_ok_at = -math.inf
        self.checking_until = -math.inf  # a check through a working proxy is in flight
        self.results: deque[tuple[str, bool]] = deque(maxlen=_RESULTS_KEPT)
        self.broken = False
        self.ok = 0
        self.failed = 0

    def worked_through_other(self, proxy_id: str) -> bool:
        """Did the URL work through another proxy since it last failed through another one? A
        URL that failed through two proxies in a row is in doubt until it works again: its
        failures blame nobody before it is judged broken (with one control URL, its breaking
        used to bench idle proxies first)."""
        for who, ok in reversed(self.results):
            if who != proxy_id:
                return ok
        return False

    def push(self, proxy_id: str, ok: bool, broken_after: int, now: float) -> str | None:
        """Record a result; returns a reason when the URL just broke, "" when it just recovered."""
        self.results.append((proxy_id, ok))
        if ok:
            self.ok += 1
            self.last_ok_at = now
            if self.broken:
                self.broken = False
                return ""
            return None
        self.failed += 1
        if self.broken:
            return None
        failing: set[str] = set()  # the proxies it failed through since it last worked
        for who, good in reversed(self.results):
            if good:
                break
            failing.add(who)
        if len(failing) >= broken_after:
            self.broken = True
            return f"failed through {len(failing)} proxies and worked through none"
        return None
