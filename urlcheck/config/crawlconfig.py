"""urlcheck's settings (``URLCHECK_*``): every one is parsed and validated here, once.

:class:`UrlcheckConfig` gathers the typed record of each part (the check's rules, back-off,
jobs, proxies, output). ``scrapy crawl check`` builds it before the crawl starts, so a bad value
is one clear line naming the setting; during the crawl every component reads its part from
:func:`urlcheck.crawl.runtime.runtime`, never from the raw settings. Reference: docs/settings.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from cryptography import x509

from urlcheck.check.addressguard import AddressPolicy
from urlcheck.check.audit import CHECKS, AuditRules, Level, level_of
from urlcheck.check.tls import TLS_MODES, TLSConfig, TLSMode
from urlcheck.config.access import SiteAccess
from urlcheck.config.proxies import ProxySettings
from urlcheck.config.reader import ConfigError, SettingsReader
from urlcheck.jobs.recheck import Recheck
from urlcheck.jobs.status import STUCK_AFTER_SECONDS
from urlcheck.politeness.backoff import BackoffConfig

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = [
    "AddressPolicy",
    "BackoffConfig",
    "CheckConfig",
    "ConfigError",
    "JobControlConfig",
    "MetricsConfig",
    "SettingsReader",
    "UrlcheckConfig",
    "resolve_user_agent",
]

USER_AGENTS: dict[str, str] = {
    "urlcheck": "urlcheck/0.1 (bulk URL and redirect checker)",
    "chrome": (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
        "(KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36"
    ),
    "firefox": "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:145.0) Gecko/20100101 Firefox/145.0",
    "safari": (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7) AppleWebKit/605.1.15 "
        "(KHTML, like Gecko) Version/18.6 Safari/605.1.15"
    ),
    "googlebot": ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
    "googlebot-smartphone": (
        "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
        "(KHTML, like Gecko) Chrome/142.0.0.0 Mobile Safari/537.36 "
        "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
    ),
    "bingbot": ("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"),
}


def resolve_user_agent(value: str) -> str:
    """A preset name (any case) gives its string; anything else is used as given."""
    value = value.strip()
    if not value:
        raise ConfigError("setting URLCHECK_USER_AGENT: expected a preset name or a string, got ''")
    return USER_AGENTS.get(value.lower(), value)


@dataclass(frozen=True, slots=True)
class CheckConfig:
    """How the ``check`` spider follows and judges each row's chain."""

    max_hops: int = 10
    follow_meta_refresh: bool = False
    method: Literal["GET", "HEAD"] = "GET"
    ignore_trailing_slash: bool = True
    temporary_redirect: Literal["fail", "warn"] = "fail"
    max_chain_hops: int | None = None
    rows_ahead_per_host: int = 2
    rows_ahead: int = 200
    # Browsers follow far longer URLs than IE's 2,083 (Chrome 2 MB, Firefox and Safari 64K+);
    # a server that will not take one answers 414, which is a result.
    max_url_length: int = 65_536
    # Rows asking for the same URL share one chain (urlcheck/input/duplicates.py).
    same_url_once: bool = True
    # A bot wall's page: the row ends ``blocked`` (block), is the site's answer with a warning
    # (warn), or is not looked for (off) (docs/detection.md).
    bot_walls: Literal["block", "warn", "off"] = "block"
    # The most rows an input may have (None: any number): past it the run is refused before a
    # request, as `urlcheck serve` refuses an upload past its own cap (a sitemap index's rows
    # are only known once the crawl has fetched its sitemaps).
    max_rows: int | None = None
    audit: AuditRules = field(default_factory=AuditRules)  # the audit checks' levels

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> CheckConfig:
        read = SettingsReader(settings)
        method = read.choice("URLCHECK_METHOD", "get", ("get", "head")).upper()
        temporary = read.choice("URLCHECK_TEMPORARY_REDIRECT", "fail", ("fail", "warn"))
        walls = read.choice("URLCHECK_BOT_WALLS", "block", ("block", "warn", "off"))
        return cls(
            max_hops=read.integer("URLCHECK_MAX_HOPS", 10, minimum=0),
            follow_meta_refresh=read.boolean("URLCHECK_FOLLOW_META_REFRESH", False),
            method="HEAD" if method == "HEAD" else "GET",
            ignore_trailing_slash=read.boolean("URLCHECK_VERDICT_IGNORE_TRAILING_SLASH", True),
            temporary_redirect="warn" if temporary == "warn" else "fail",
            max_chain_hops=read.optional_integer("URLCHECK_MAX_CHAIN_HOPS", minimum=0),
            rows_ahead_per_host=read.integer("URLCHECK_ROWS_AHEAD_PER_HOST", 2, minimum=1),
            rows_ahead=read.integer("URLCHECK_ROWS_AHEAD", 200, minimum=1),
            max_url_length=read.integer("URLCHECK_MAX_URL_LENGTH", 65_536, minimum=16),
            same_url_once=read.boolean("URLCHECK_SAME_URL_ONCE", True),
            bot_walls="warn" if walls == "warn" else "off" if walls == "off" else "block",
            max_rows=read.optional_integer("URLCHECK_MAX_ROWS", minimum=1),
            audit=audit_rules(settings),
        )


def audit_rules(settings: BaseSettings) -> AuditRules:
    """Each audit check's level (its ``Check.setting``) and the many-to-one thresholds."""
    read = SettingsReader(settings)
    levels: dict[str, Level] = {}
    for code, check in CHECKS.items():
        levels[code] = level_of(read.choice(check.setting, check.default, check.levels))
    share = read.number("URLCHECK_MANY_TO_ONE_SHARE", 50.0)
    if not 0 < share <= 100:
        raise ConfigError(
            f"setting URLCHECK_MANY_TO_ONE_SHARE: expected a percentage > 0 and <= 100, got {share}"
        )
    return AuditRules(
        levels,
        many_to_one_rows=read.integer("URLCHECK_MANY_TO_ONE_ROWS", 10, minimum=1),
        many_to_one_share=share,
    )


@dataclass(frozen=True, slots=True)
class JobControlConfig:
    """How often a job's files are read and written, and when a job reads as stuck
    (docs/jobs.md)."""

    poll_interval: float = 0.5
    status_interval: float = 2.0
    heartbeat_interval: float = 30.0
    stuck_after: float = STUCK_AFTER_SECONDS
    cancel_grace: float = 5.0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> JobControlConfig:
        read, defaults = SettingsReader(settings), cls()
        values = {}
        for name, attr in (
            ("URLCHECK_JOB_POLL_INTERVAL", "poll_interval"),
            ("URLCHECK_JOB_STATUS_INTERVAL", "status_interval"),
            ("URLCHECK_JOB_HEARTBEAT_INTERVAL", "heartbeat_interval"),
            ("URLCHECK_JOB_STUCK_AFTER", "stuck_after"),
            ("URLCHECK_JOB_CANCEL_GRACE", "cancel_grace"),
        ):
            value = read.number(name, getattr(defaults, attr), minimum=None)
            if not (value > 0 and math.isfinite(value)):
                raise ConfigError(f"setting {name}: expected a number of seconds > 0, got {value}")
            values[attr] = value
        if values["heartbeat_interval"] >= values["stuck_after"]:
            raise ConfigError(
                "setting URLCHECK_JOB_HEARTBEAT_INTERVAL: must be below URLCHECK_JOB_STUCK_AFTER "
                f"({values['stuck_after']:g} s), or a healthy job would read as stuck; "
                f"got {values['heartbeat_interval']:g}"
            )
        return cls(**values)


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """Prometheus metrics of a running crawl (docs/reports.md); off when neither port nor
    file is set."""

    port: int | None = None
    host: str = "127.0.0.1"
    file: Path | None = None
    interval: float = 5.0

    @property
    def enabled(self) -> bool:
        return self.port is not None or self.file is not None

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> MetricsConfig:
        read = SettingsReader(settings)
        port = read.optional_integer("URLCHECK_METRICS_PORT", minimum=0)
        if port is not None and port > 65535:
            raise ConfigError(f"setting URLCHECK_METRICS_PORT: expected 0-65535, got {port}")
        interval = read.number("URLCHECK_METRICS_INTERVAL", 5.0)
        if not (interval > 0 and math.isfinite(interval)):
            raise ConfigError(
                f"setting URLCHECK_METRICS_INTERVAL: expected seconds > 0, got {interval}"
            )
        file = read.text("URLCHECK_METRICS_FILE", "")
        return cls(
            port=port,
            host=read.text("URLCHECK_METRICS_HOST", "127.0.0.1"),
            file=Path(file) if file else None,
            interval=interval,
        )


def progress_interval(settings: BaseSettings) -> float:
    """``URLCHECK_PROGRESS_INTERVAL``: seconds between progress lines, 0 for none."""
    value = SettingsReader(settings).number("URLCHECK_PROGRESS_INTERVAL", 30.0)
    if not math.isfinite(value):
        raise ConfigError(f"setting URLCHECK_PROGRESS_INTERVAL: expected seconds, got {value}")
    return value


_DELIMITER_NAMES = {"tab": "\t", "comma": ",", "semicolon": ";", "pipe": "|", "space": " "}


def excel_delimiter(settings: BaseSettings) -> str:
    """``URLCHECK_EXCEL_DELIMITER``: the delimiter of ``-o FILE.csv:excel``: one character, or
    ``tab``, ``comma``, ``semicolon``, ``pipe``, ``space``."""
    raw = SettingsReader(settings).text("URLCHECK_EXCEL_DELIMITER", ";")
    value = _DELIMITER_NAMES.get(raw.strip().lower(), raw)
    if len(value) != 1 or value in "\"\r\n'" or value.isalnum():
        raise ConfigError(
            f"setting URLCHECK_EXCEL_DELIMITER: expected one character that is not a letter, "
            f"digit, quote or line break (or {', '.join(_DELIMITER_NAMES)}), got {raw!r}"
        )
    return value


@dataclass(frozen=True, slots=True)
class UrlcheckConfig:
    """Every urlcheck setting of one run, parsed."""

    user_agent: str
    check: CheckConfig
    backoff: BackoffConfig
    jobs: JobControlConfig
    proxies: ProxySettings | None  # None: no proxies configured, the crawl runs direct
    addresses: AddressPolicy
    metrics: MetricsConfig = MetricsConfig()
    progress_interval: float = 30.0  # 0: no progress line
    body_max_bytes: int = 256 * 1024
    results_enabled: bool = True
    excel_delimiter: str = ";"  # -o FILE.csv:excel
    recheck: Recheck | None = None  # -a recheck=...: rows of the job to check again
    access: SiteAccess = field(default_factory=SiteAccess)  # headers, cookies, auth per host
    tls: TLSConfig = field(default_factory=TLSConfig)  # URLCHECK_TLS, URLCHECK_CA_BUNDLE

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> UrlcheckConfig:
        """Parse them all; raises ConfigError naming the first bad one."""
        read = SettingsReader(settings)
        return cls(
            user_agent=resolve_user_agent(read.text("URLCHECK_USER_AGENT", "urlcheck")),
            check=CheckConfig.from_settings(settings),
            backoff=BackoffConfig.from_settings(settings),
            jobs=JobControlConfig.from_settings(settings),
            proxies=ProxySettings.from_settings(settings),
            addresses=AddressPolicy.from_settings(settings),
            metrics=MetricsConfig.from_settings(settings),
            progress_interval=progress_interval(settings),
            body_max_bytes=read.integer("URLCHECK_BODY_MAX_BYTES", 256 * 1024, minimum=1024),
            results_enabled=read.boolean("URLCHECK_RESULTS_ENABLED", True),
            excel_delimiter=excel_delimiter(settings),
            recheck=_recheck(read.text("URLCHECK_RECHECK", "")),
            access=SiteAccess.from_settings(settings),
            tls=tls_config(read),
        )


def tls_config(read: SettingsReader) -> TLSConfig:
    mode = cast("TLSMode", read.choice("URLCHECK_TLS", "check", TLS_MODES))
    bundle = read.text("URLCHECK_CA_BUNDLE", "").strip()
    if not bundle:
        return TLSConfig(mode)
    path = Path(bundle).expanduser()
    try:
        certificates = x509.load_pem_x509_certificates(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"setting URLCHECK_CA_BUNDLE: cannot read {bundle!r} ({exc})") from None
    except ValueError:
        certificates = []
    if not certificates:
        raise ConfigError(
            f"setting URLCHECK_CA_BUNDLE: {bundle!r} holds no PEM certificate"
        ) from None
    return TLSConfig(mode, path)


def _recheck(text: str) -> Recheck | None:
    if not text.strip():
        return None
    try:
        return Recheck.parse(text)
    except ValueError as exc:
        raise ConfigError(f"setting URLCHECK_RECHECK (-a recheck): {exc}") from None
