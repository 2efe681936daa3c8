"""The shape of ``ProxyPool.snapshot()``: plain JSON types only (see docs/proxypool.md)."""

from __future__ import annotations

from typing import TypedDict

__all__ = [
    "CellStats",
    "ControlUrlInfo",
    "PoolSnapshot",
    "PoolTotals",
    "ProxyStats",
    "SiteStats",
    "TransitionInfo",
]


class TransitionInfo(TypedDict):
    at: float
    old: str
    new: str
    reason: str


class ProxyStats(TypedDict):
    id: str
    display: str
    tags: list[str]
    state: str
    weight: float  # dynamic weight used for selection now
    static_weight: float
    success_rate: float | None  # over the window, None before any outcome
    captcha_rate: float | None
    block_rate: float | None
    latency_p50: float | None
    latency_p95: float | None
    outcomes: int  # in the window
    active: int
    max_concurrent: int
    quarantines: int
    quarantine_seconds: float  # total time spent quarantined, including the current stretch
    quarantined_until: float | None
    failed_cycles: int
    last_transition: TransitionInfo | None


class CellStats(TypedDict):
    outcomes: int  # since the site was first seen
    success_rate: float
    recent_success: float  # moving average that steers routing
    benched_until: float | None


class SiteStats(TypedDict):
    outcomes: int
    success_rate: float  # over the site window
    at_fault: bool
    fault_reason: str | None


class ControlUrlInfo(TypedDict):
    url: str
    broken: bool
    ok: int
    failed: int


class PoolTotals(TypedDict):
    proxies: int
    states: dict[str, int]
    in_service: int
    min_in_service: int
    quarantine_cap: int
    quarantine_cap_fill: float  # (quarantined + dead) / cap; 1.0 means new candidates only degrade
    quarantines_total: int
    quarantines_last_hour: int
    leases_active: int
    sessions: int
    outcomes_total: int
    throughput: float  # released leases per second over the last minute
    success_rate: float | None  # over the last minute
    our_side_fault: str | None
    sites_at_fault: list[str]


class PoolSnapshot(TypedDict):
    time: float
    totals: PoolTotals
    proxies: list[ProxyStats]
    sites: dict[str, SiteStats]
    matrix: dict[str, dict[str, CellStats]]  # site -> proxy id -> cell
    control_urls: list[ControlUrlInfo]
