"""The crawl's proxy settings (``URLCHECK_PROXIES``, ``URLCHECK_PROXY_*``), parsed once.

Proxy lines are ``scheme://[user:pass@]host:port`` or the vendor form
``host:port:user:password``, with optional pool options (see docs/proxypool.md); ``${VAR}`` in a
line is taken from the environment, so credentials need not be written in the file. A malformed
line is reported with its file and line number, never its text, and skipped; when no line is
valid the run stops with one clear message.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from urlcheck.check.urls import redacted
from urlcheck.config.reader import ConfigError, SettingsReader
from urlcheck.proxypool import ConfigError as PoolConfigError
from urlcheck.proxypool import PoolConfig, PoolStore, Proxy, ProxySpecError, store_from_uri
from urlcheck.redis.client import OptionError, check_options

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from urlcheck.proxypool import StoreUnavailable

logger = logging.getLogger(__name__)

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_STRATEGY_NAMES = {"round-robin": "round_robin", "least-connections": "least_connections"}


def _expand(line: str, where: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ProxySpecError(f"{where}: environment variable {name} is not set")
        return os.environ[name]

    return _ENV.sub(value, line)


def read_proxy_lines(lines: list[tuple[str, str]]) -> list[Proxy]:
    """``(where, line)`` pairs to proxies; bad lines are logged (never with their text, which
    may hold a password) and skipped."""
    proxies: list[Proxy] = []
    for where, line in lines:
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            proxies.append(Proxy.parse(_expand(text, where)))
        except ProxySpecError as exc:  # its message holds no part of the line
            logger.warning("%s: skipped a malformed proxy line: %s", where, exc)
        except ValueError:  # a message of unknown content: none at all
            logger.warning("%s: skipped a malformed proxy line", where)
    return proxies


@dataclass(frozen=True, slots=True)
class ProxySettings:
    proxies: tuple[Proxy, ...]
    pool: PoolConfig
    sticky: Literal["host", "none", "column"]
    sticky_column: str | None
    block_retries: int
    probe_interval: float
    report_interval: float
    store_uri: str
    # The store is the job's Redis (URLCHECK_PROXY_STORE unset, or set to REDIS_URL itself):
    # then it takes REDIS_PARAMS (store_params), and `scrapy job clean` may remove the pool.
    in_job_redis: bool
    store_params: dict[str, Any]
    # None when URLCHECK_PROXY_POOL_NAME is not set: then the job's name in distributed mode,
    # on which every process of the job agrees, else `default` (pool_for).
    pool_name: str | None

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ProxySettings | None:
        """None when no proxies are configured (the crawl runs direct)."""
        lines: list[tuple[str, str]] = []
        inline = settings.get("URLCHECK_PROXIES") or []
        if isinstance(inline, str):
            inline = inline.replace(",", "\n").splitlines()
        lines += [(f"URLCHECK_PROXIES[{i}]", str(v)) for i, v in enumerate(inline)]
        path = settings.get("URLCHECK_PROXY_FILE")
        if path:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeError) as exc:
                raise ConfigError(
                    f"setting URLCHECK_PROXY_FILE: cannot read {path}: {exc}"
                ) from None
            lines += [(f"{path}:{n}", line) for n, line in enumerate(text.splitlines(), 1)]
        if not lines:
            return None
        proxies = read_proxy_lines(lines)
        if not proxies:
            raise ConfigError(
                "no valid proxy in URLCHECK_PROXIES / URLCHECK_PROXY_FILE (see the warnings above)"
            )
        read = SettingsReader(settings)
        job_redis = read.text("REDIS_URL", "").strip()
        store_uri = _store_uri(read.text("URLCHECK_PROXY_STORE", job_redis or "memory://"))
        _check_options(store_uri, "URLCHECK_PROXY_STORE" if store_uri != job_redis else "REDIS_URL")
        in_job_redis = bool(job_redis) and store_uri.strip() == job_redis
        if in_job_redis:  # distributed mode: its REDIS_PARAMS (only then its settings module)
            from urlcheck.cluster.config import redis_params

            store_params = redis_params(settings)
        else:
            store_params = {}
        sticky = read.text("URLCHECK_PROXY_STICKY", "host").strip()
        column = None
        if sticky.lower().startswith("column:"):
            column = sticky.split(":", 1)[1].strip()
            if not column:
                raise ConfigError("setting URLCHECK_PROXY_STICKY: column: needs a column name")
            mode: Literal["host", "none", "column"] = "column"
        elif sticky.lower() in ("host", "none"):
            mode = "host" if sticky.lower() == "host" else "none"
        else:
            raise ConfigError(
                f"setting URLCHECK_PROXY_STICKY: expected host, none or column:NAME, got {sticky!r}"
            )
        return cls(
            proxies=tuple(proxies),
            pool=pool_config(settings),
            sticky=mode,
            sticky_column=column,
            block_retries=read.integer("URLCHECK_PROXY_BLOCK_RETRIES", 2),
            probe_interval=read.number("URLCHECK_PROXY_PROBE_INTERVAL", 1.0, minimum=0.05),
            report_interval=read.number("URLCHECK_PROXY_REPORT_INTERVAL", 60.0, minimum=1.0),
            store_uri=store_uri,
            in_job_redis=in_job_redis,
            store_params=store_params,
            pool_name=(
                None
                if settings.get("URLCHECK_PROXY_POOL_NAME") is None
                else _pool_name(read.text("URLCHECK_PROXY_POOL_NAME", ""))
            ),
        )

    def pool_for(self, job: str | None) -> str:
        """The pool's name in its store: the one set, else the distributed job's, else
        ``default``."""
        return self.pool_name or job or "default"

    def store_for(self, job: str | None) -> PoolStore:
        """The pool's store (not opened yet), with REDIS_PARAMS when it is the job's Redis."""
        return store_from_uri(
            self.store_uri, self.pool_for(job), redis_params=self.store_params or None
        )

    def refused(self, exc: StoreUnavailable) -> str | None:
        """When the store's Redis refused this client (a wrong or missing password or user, or
        an ACL without the commands the pool needs): one line naming the setting to fix, with
        no password in it. None for any other failure."""
        from redis.exceptions import AuthenticationError, NoPermissionError

        cause = exc.__cause__
        if not isinstance(cause, AuthenticationError | NoPermissionError):
            return None
        userinfo, at, _ = self.store_uri.partition("://")[2].partition("@")
        if at:  # the URL's credentials win over REDIS_PARAMS (redis-py)
            setting = "REDIS_URL" if self.in_job_redis else "URLCHECK_PROXY_STORE"
        elif self.in_job_redis:
            setting = "REDIS_PARAMS"
        else:
            setting = "URLCHECK_PROXY_STORE"
        reason = str(cause)
        for secret in (userinfo.partition(":")[2], str(self.store_params.get("password") or "")):
            if secret:
                reason = reason.replace(secret, "***")
        what = "permissions" if isinstance(cause, NoPermissionError) else "password or username"
        return (
            f"setting {setting}: the proxy pool's Redis at {redacted(self.store_uri)} "
            f"refused this client ({reason.rstrip('.')}): check the {what} "
            f"({'in REDIS_PARAMS or ' if self.in_job_redis else ''}in the URL)"
        )


#: Seconds a proxy lease outlives DOWNLOAD_TIMEOUT when URLCHECK_PROXY_LEASE_TTL is not set.
LEASE_TTL_EXTRA = 15.0


def pool_config(settings: BaseSettings) -> PoolConfig:
    values: dict[str, Any] = {
        k: settings.get(k) for k in settings if k.startswith("URLCHECK_PROXY_")
    }
    strategy = values.get("URLCHECK_PROXY_STRATEGY")
    if isinstance(strategy, str):
        values["URLCHECK_PROXY_STRATEGY"] = _STRATEGY_NAMES.get(
            strategy.strip().lower(), strategy.strip().lower()
        )
    loss = values.get("URLCHECK_PROXY_SESSION_LOSS")
    if isinstance(loss, str):
        values["URLCHECK_PROXY_SESSION_LOSS"] = loss.strip().lower()
    if values.get("URLCHECK_PROXY_LEASE_TTL") is None:
        # a lease outlives its request by a little: a killed process frees its cap slots
        # soon after its requests would have timed out, not ten minutes later
        timeout = settings.getfloat("DOWNLOAD_TIMEOUT", 180.0)
        values["URLCHECK_PROXY_LEASE_TTL"] = timeout + LEASE_TTL_EXTRA
    probe_urls = values.pop("URLCHECK_PROXY_PROBE_URLS", None)
    if probe_urls:
        urls = probe_urls.replace(",", " ").split() if isinstance(probe_urls, str) else probe_urls
        values["URLCHECK_PROXY_CONTROL_URLS"] = tuple(str(u) for u in urls)
    try:
        return PoolConfig.from_settings(values)
    except PoolConfigError as exc:
        raise ConfigError(f"setting {exc}") from None


def _store_uri(uri: str) -> str:
    scheme = uri.partition("://")[0].lower()
    if scheme not in {"memory", "redis", "rediss", "unix"}:
        raise ConfigError(
            f"setting URLCHECK_PROXY_STORE: expected memory://, redis://host:port/db, "
            f"rediss://... or unix:///path/to/redis.sock, got a {scheme or 'schemeless'} URI"
        )
    return uri


def _check_options(uri: str, setting: str) -> None:
    """Timeouts in a Redis URL's query that the event loop cannot wait out."""
    try:
        check_options(uri)
    except OptionError as exc:
        raise ConfigError(f"setting {setting}: {exc}") from None


def _pool_name(name: str) -> str:
    name = name.strip()
    if not name or any(c in name for c in "{}\t\n "):
        raise ConfigError(
            f"setting URLCHECK_PROXY_POOL_NAME: {name!r} must be a non-empty word without "
            "braces or spaces"
        )
    return name
