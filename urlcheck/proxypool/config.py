"""Every threshold of the pool, in one frozen and validated object.

Field names are plain snake_case so that a framework can map its own settings onto them; the
Scrapy side reads ``URLCHECK_PROXY_<FIELD_UPPER>`` through ``PoolConfig.from_settings``.
"""

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["STRATEGIES", "ConfigError", "PoolConfig"]

STRATEGIES = ("weighted", "round_robin", "least_connections")
SESSION_LOSS = ("move", "end")
SETTINGS_PREFIX = "URLCHECK_PROXY_"


class ConfigError(ValueError):
    """A bad value; the message starts with the field's (or setting's) name."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


def _f(default: Any, doc: str) -> Any:
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolConfig:
    """Policy settings of a ``ProxyPool``. See docs/proxypool.md for the full reference."""

    # Selection
    strategy: str = _f("weighted", "How a proxy is chosen for an acquire without a key.")
    max_concurrent: int = _f(8, "Default cap on a proxy's concurrent leases (0: no cap).")
    lease_ttl: float = _f(600.0, "Seconds after which an unreleased lease is reclaimed.")
    session_ttl: float = _f(900.0, "Seconds a sticky session lives; renewed on every use.")
    session_loss: str = _f(
        "end",
        "When a sticky key's proxy leaves service (or is benched for the site): end the session "
        "and raise SessionLost (end), or move the key to another proxy (move).",
    )
    fail_closed: bool = _f(False, "With nothing eligible: raise instead of the least bad proxy.")
    hard_lease_cap: bool = _f(
        True, "Never lend a proxy past its max_concurrent, not even as the least bad one."
    )
    window_size: int = _f(50, "Outcomes kept per proxy (success rate, captcha rate, latency).")
    pair_window_size: int = _f(20, "Outcomes kept per (proxy, site) pair.")
    site_window_size: int = _f(50, "Outcomes kept per site, across proxies (blame).")
    global_window_size: int = _f(200, "Outcomes kept across the pool (our-side detection).")
    weight_exponent: float = _f(3.0, "Dynamic weight uses success_rate ** weight_exponent.")
    min_weight: float = _f(0.05, "Floor of the dynamic weight factor: degraded, never zero.")
    degraded_weight: float = _f(0.5, "Extra weight factor while a proxy is degraded.")
    latency_weight_floor: float = _f(0.25, "Floor of the latency factor of the weight.")
    # Health
    min_outcomes: int = _f(10, "Outcomes needed before a rate-based rule may fire.")
    recent_window: int = _f(5, "Length of the 'recent outcomes' window.")
    recent_failures: int = _f(3, "Failures within the recent window that trip a proxy.")
    trip_false_alarm: float = _f(
        1e-6, "Largest chance that a typical proxy trips by bad luck; raises the bar in noise."
    )
    quarantine_below: float = _f(0.70, "Success rate under which a proxy trips.")
    degrade_below: float = _f(0.90, "Success rate under which a proxy is degraded.")
    recover_above: float = _f(0.95, "Success rate a degraded proxy needs to be healthy again.")
    captcha_quarantine_rate: float = _f(0.20, "Captcha rate that trips (stricter than failures).")
    captcha_degrade_rate: float = _f(0.05, "Captcha rate that degrades.")
    soft_failure_weight: float = _f(0.25, "How much of a failure a 429/503 is, for the pair.")
    latency_spike_factor: float = _f(3.0, "Recent latency over own baseline that is a spike.")
    latency_recover_factor: float = _f(1.5, "Recent latency over baseline that ends a spike.")
    # Quarantine
    backoff_base: float = _f(60.0, "First quarantine back-off, seconds; doubles each time.")
    backoff_max: float = _f(3600.0, "Cap of the quarantine back-off, seconds.")
    backoff_jitter: float = _f(0.2, "Back-off moves up or down by up to this fraction, at random.")
    backoff_reset_after: float = _f(1800.0, "Seconds of stable work that reset the back-off.")
    probes_to_return: int = _f(5, "Consecutive passed probes that end a quarantine.")
    probe_retry_interval: float = _f(10.0, "Seconds between probes of a quarantined proxy.")
    ramp_start: float = _f(0.1, "Share of its weight a returning (probing) proxy starts with.")
    ramp_requests: int = _f(20, "Successful requests a probing proxy needs for full weight.")
    dead_after_cycles: int = _f(
        10, "Failed quarantine cycles in a row that make a proxy dead (about 5 h of failing)."
    )
    dead_probe_interval: float = _f(3600.0, "Seconds between probes of a dead proxy (+-25%).")
    # Protecting the pool from itself
    quarantine_cap: float = _f(0.30, "Largest share of proxies out of service at once.")
    pair_bench_cap: float = _f(0.50, "Largest share of proxies benched on one site at once.")
    min_in_service: int = _f(2, "Proxies kept in service whatever happens (all, when fewer).")
    # Blame
    blame_peer_outcomes: int = _f(10, "Recent outcomes of other proxies compared on a site.")
    blame_lookback: float = _f(30.0, "Seconds around a failure in which peers are compared.")
    blame_min_peer_outcomes: int = _f(3, "Fewest peer outcomes that allow a verdict.")
    blame_margin: float = _f(0.25, "How much better peers must do for a proxy to be blamed.")
    site_fault_below: float = _f(0.5, "Site success rate under which the site may be at fault.")
    site_fault_share: float = _f(0.5, "Share of the site's proxies failing: site at fault.")
    site_recover_above: float = _f(0.8, "Site success rate that clears a site fault.")
    site_idle_ttl: float = _f(3600.0, "Seconds after which an idle site's records are dropped.")
    our_side_below: float = _f(0.5, "Pool success rate under which the fault may be ours.")
    our_side_share: float = _f(0.8, "Share of proxies and of sites failing: our side at fault.")
    our_side_recover_above: float = _f(0.7, "Pool success rate that clears our-side fault.")
    outlier_factor: float = _f(1.9, "Envoy rule: degraded below mean - factor * stdev.")
    outlier_min_gap: float = _f(0.1, "Least gap under the mean that makes an outlier.")
    outlier_min_hosts: int = _f(5, "Proxies with enough outcomes needed for the outlier rule.")
    outlier_min_outcomes: int = _f(20, "Outcomes a proxy needs to take part in the outlier rule.")
    outlier_interval: float = _f(10.0, "Seconds between two runs of the outlier rule.")
    # Probes
    control_urls: tuple[str, ...] = _f((), "URLs that answer 2xx through any working proxy.")
    probe_targets: int = _f(
        3, "Without control_urls: how many of the crawl's own URLs become probe targets (HEAD)."
    )
    probe_idle_min: float = _f(30.0, "Idle seconds before a working proxy is probed (low end).")
    probe_idle_max: float = _f(60.0, "Idle seconds before a working proxy is probed (high end).")
    probe_timeout: float = _f(30.0, "Seconds after which an unreported probe may be re-issued.")
    probe_batch: int = _f(5, "Most probes handed out by one due_probes call.")
    control_url_broken_after: int = _f(3, "Distinct proxies failing a control URL: broken.")
    snapshot_sites: int = _f(50, "Most recently active sites shown in the snapshot matrix.")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            expected = _TYPES[f.name]
            if expected is float and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, f.name, float(value))
            elif expected is tuple:
                if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
                    raise ConfigError(f.name, f"expected a tuple of strings, got {value!r}")
            elif not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise ConfigError(f.name, f"expected {expected.__name__}, got {value!r}")
        for name, check, problem in _RULES:
            if not check(self):
                raise ConfigError(name, f"{problem}, got {getattr(self, name)!r}")

    @classmethod
    def from_settings(
        cls, settings: Mapping[str, Any], prefix: str = SETTINGS_PREFIX
    ) -> "PoolConfig":
        """Build from ``<prefix><FIELD_UPPER>`` keys; strings are converted to the field's type.

        Errors name the setting, e.g. ``URLCHECK_PROXY_QUARANTINE_CAP: must be in [0, 1]``.
        """
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            key = prefix + f.name.upper()
            if key in settings and settings[key] is not None:
                try:
                    values[f.name] = _coerce(settings[key], _TYPES[f.name])
                except (TypeError, ValueError):
                    raise ConfigError(key, f"cannot read {settings[key]!r} as {f.type}") from None
        try:
            return cls(**values)
        except ConfigError as exc:
            raise ConfigError(prefix + exc.name.upper(), exc.problem) from None

    @classmethod
    def field_docs(cls) -> dict[str, str]:
        return {f.name: f.metadata["doc"] for f in dataclasses.fields(cls)}


_TYPES: dict[str, type] = {
    f.name: tuple if str(f.type).startswith("tuple") else f.type  # type: ignore[misc]
    for f in dataclasses.fields(PoolConfig)
}


def _coerce(value: Any, kind: type) -> Any:
    if kind is bool:
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in {"1", "true", "yes", "on"}:
                return True
            if lowered in {"0", "false", "no", "off", ""}:
                return False
            raise ValueError(value)
        if isinstance(value, int | float):
            return bool(value)
        raise TypeError(value)
    if kind is int:
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        return int(value)
    if kind is float:
        return float(value)
    if kind is tuple:
        if isinstance(value, str):
            return tuple(part for part in value.replace(",", " ").split() if part)
        return tuple(str(v) for v in value)
    return str(value)


def _unit(name: str) -> tuple[str, Callable[[PoolConfig], bool], str]:
    return name, lambda c: 0.0 <= getattr(c, name) <= 1.0, "must be in [0, 1]"


def _positive(name: str) -> tuple[str, Callable[[PoolConfig], bool], str]:
    return (
        name,
        lambda c: getattr(c, name) > 0 and math.isfinite(getattr(c, name)),
        "must be > 0",
    )


_UNIT_FIELDS = (
    "min_weight",
    "degraded_weight",
    "latency_weight_floor",
    "quarantine_below",
    "degrade_below",
    "recover_above",
    "captcha_quarantine_rate",
    "captcha_degrade_rate",
    "soft_failure_weight",
    "backoff_jitter",
    "ramp_start",
    "quarantine_cap",
    "pair_bench_cap",
    "blame_margin",
    "site_fault_below",
    "site_fault_share",
    "site_recover_above",
    "our_side_below",
    "our_side_share",
    "our_side_recover_above",
    "outlier_min_gap",
    "trip_false_alarm",
)
_POSITIVE_FIELDS = (
    "lease_ttl",
    "session_ttl",
    "window_size",
    "pair_window_size",
    "site_window_size",
    "global_window_size",
    "weight_exponent",
    "min_outcomes",
    "recent_window",
    "recent_failures",
    "latency_spike_factor",
    "latency_recover_factor",
    "backoff_base",
    "backoff_max",
    "backoff_reset_after",
    "probes_to_return",
    "probe_retry_interval",
    "ramp_requests",
    "dead_after_cycles",
    "dead_probe_interval",
    "blame_peer_outcomes",
    "blame_min_peer_outcomes",
    "blame_lookback",
    "site_idle_ttl",
    "outlier_factor",
    "outlier_min_hosts",
    "outlier_min_outcomes",
    "outlier_interval",
    "probe_idle_min",
    "probe_idle_max",
    "probe_timeout",
    "probe_batch",
    "control_url_broken_after",
    "snapshot_sites",
)
_RULES: tuple[tuple[str, Callable[[PoolConfig], bool], str], ...] = (
    ("strategy", lambda c: c.strategy in STRATEGIES, f"must be one of {', '.join(STRATEGIES)}"),
    ("session_loss", lambda c: c.session_loss in SESSION_LOSS, "must be move or end"),
    ("max_concurrent", lambda c: c.max_concurrent >= 0, "must be >= 0"),
    ("min_in_service", lambda c: c.min_in_service >= 0, "must be >= 0"),
    ("probe_targets", lambda c: c.probe_targets >= 0, "must be >= 0"),
    *(_unit(name) for name in _UNIT_FIELDS),
    *(_positive(name) for name in _POSITIVE_FIELDS),
    ("recent_window", lambda c: c.recent_window <= 64, "must be <= 64"),
    ("recent_failures", lambda c: c.recent_failures <= c.recent_window, "must be <= recent_window"),
    ("min_outcomes", lambda c: c.min_outcomes <= c.window_size, "must be <= window_size"),
    (
        "degrade_below",
        lambda c: c.degrade_below >= c.quarantine_below,
        "must be >= quarantine_below",
    ),
    ("recover_above", lambda c: c.recover_above >= c.degrade_below, "must be >= degrade_below"),
    (
        "captcha_degrade_rate",
        lambda c: c.captcha_degrade_rate <= c.captcha_quarantine_rate,
        "must be <= captcha_quarantine_rate",
    ),
    (
        "latency_recover_factor",
        lambda c: c.latency_recover_factor <= c.latency_spike_factor,
        "must be <= latency_spike_factor",
    ),
    ("backoff_max", lambda c: c.backoff_max >= c.backoff_base, "must be >= backoff_base"),
    ("backoff_jitter", lambda c: c.backoff_jitter < 1.0, "must be < 1"),
    ("ramp_start", lambda c: c.ramp_start > 0.0, "must be > 0"),
    ("probe_idle_max", lambda c: c.probe_idle_max >= c.probe_idle_min, "must be >= probe_idle_min"),
    (
        "site_recover_above",
        lambda c: c.site_recover_above >= c.site_fault_below,
        "must be >= site_fault_below",
    ),
    (
        "our_side_recover_above",
        lambda c: c.our_side_recover_above >= c.our_side_below,
        "must be >= our_side_below",
    ),
    (
        "blame_min_peer_outcomes",
        lambda c: c.blame_min_peer_outcomes <= c.blame_peer_outcomes,
        "must be <= blame_peer_outcomes",
    ),
    (
        "control_urls",
        lambda c: all(u.startswith(("http://", "https://")) for u in c.control_urls),
        "must be http(s) URLs",
    ),
)
