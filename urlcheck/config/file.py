"""``urlcheck.toml``: settings kept in a file instead of repeated as ``-s`` on every run.

Top-level keys are urlcheck's settings in lower case without their ``URLCHECK_`` prefix
(``max_hops = 5`` is ``URLCHECK_MAX_HOPS=5``; the proxy pool's thresholds are ``proxy_<field>``);
the ``[scrapy]`` table holds the few Scrapy settings a run is tuned with (:data:`SCRAPY_SETTINGS`,
lower case). ``headers``, ``cookies`` and ``auth`` are tables of hosts
(:mod:`urlcheck.config.access`). Anything else is refused with the file and the key, as a
misspelt key silently ignored would be a setting silently not applied. The values' own checks
are the settings' (:mod:`urlcheck.config.crawlconfig`), run on the file's values with the file and
key in the error. Reference: docs/settings.md, "The settings file".
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urlcheck.config.reader import ConfigError

__all__ = ["CONFIG_NAME", "SCRAPY_SETTINGS", "SETTING_KEYS", "ConfigFile", "find_config"]

CONFIG_NAME = "urlcheck.toml"
_MAX_BYTES = 1 << 20  # a settings file, not a data file

# Every URLCHECK_* setting (docs/settings.md), lower case without the prefix; the proxy pool's
# thresholds are added from its config's fields (proxy_<field>) where the file is read.
SETTING_KEYS = frozenset({
    # what is checked and how
    "user_agent", "method", "max_hops", "follow_meta_refresh", "verdict_ignore_trailing_slash",
    "temporary_redirect", "max_chain_hops", "max_url_length", "body_max_bytes", "same_url_once",
    "bot_walls", "max_rows",
    # what a migration audit checks (urlcheck.check.audit.CHECKS: check_<code>)
    "check_redirect_to_home", "check_many_to_one", "many_to_one_rows", "many_to_one_share",
    "check_redirect_chain", "check_temporary_redirect_in_chain", "check_https_downgrade",
    "check_host_round_trip", "check_noindex", "check_canonical_mismatch", "check_nofollow",
    "check_tls_certificate_invalid",
    # certificates (docs/urls-and-verdicts.md)
    "tls", "ca_bundle",
    # what a site asks of its visitors
    "headers", "cookies", "auth",
    # output, the terminal
    "results_enabled", "excel_delimiter", "progress_interval",
    # politeness
    "backoff_base", "backoff_max", "backoff_retries", "backoff_http_codes", "backoff_log_interval",
    "host_down_after", "host_pace_enabled", "host_delay_max", "host_delay_ease_after",
    "rows_ahead_per_host", "rows_ahead",
    # addresses
    "address_guard_enabled", "allow_networks", "block_private_input",
    # jobs
    "job_poll_interval", "job_status_interval", "job_heartbeat_interval", "job_stuck_after",
    "job_cancel_grace", "recheck",
    # metrics
    "metrics_port", "metrics_host", "metrics_file", "metrics_interval",
    # proxies
    "proxies", "proxy_file", "proxy_strategy", "proxy_sticky", "proxy_block_retries",
    "proxy_probe_urls", "proxy_probe_interval", "proxy_report_interval", "proxy_store",
    "proxy_pool_name",
    # distributed mode
    "cluster_lease_extra", "cluster_renew_interval", "cluster_poll_interval",
    "cluster_collect_interval", "cluster_finished_ttl",
    # urlcheck serve
    "serve_host", "serve_port", "serve_jobs", "serve_token_file", "serve_allowed_hosts",
    "serve_max_upload_bytes", "serve_max_rows", "serve_max_running", "serve_recover_after",
    "serve_restart_delay",
})  # fmt: skip

# The Scrapy settings a file may hold, under [scrapy], and what each must be.
SCRAPY_SETTINGS: dict[str, str] = {
    "download_timeout": "seconds > 0",
    "download_delay": "seconds >= 0",
    "concurrent_requests": "whole number >= 1",
    "concurrent_requests_per_domain": "whole number >= 1",
    "retry_times": "whole number >= 0",
    "robotstxt_obey": "true/false",
    "cookies_enabled": "true/false",
    "user_agent": "text",
    "log_level": "DEBUG, INFO, WARNING, ERROR or CRITICAL",
    "log_file": "text",
    "feed_export_encoding": "text",
    "redis_url": "text",
}
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SCRAPY_TABLE = "scrapy"


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A settings file, read: each setting's name and value, and the key it was written as."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)  # setting name -> value
    keys: dict[str, str] = field(default_factory=dict)  # setting name -> key in the file

    @classmethod
    def read(cls, path: Path, extra: frozenset[str] = frozenset()) -> ConfigFile:
        """Read and check the keys (``extra``: more urlcheck keys, the pool's ``proxy_*``);
        ConfigError naming the file (and key) when it cannot be used."""
        try:
            with path.open("rb") as stream:
                data = stream.read(_MAX_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
        if len(data) > _MAX_BYTES:
            raise ConfigError(f"{path}: larger than a settings file may be (1 MiB)")
        try:
            table = tomllib.loads(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not UTF-8 text") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        known = SETTING_KEYS | extra
        found = cls(path)
        for key, value in table.items():
            if key == SCRAPY_TABLE:
                found._read_scrapy(value)
            elif key in known:
                found._add(f"URLCHECK_{key.upper()}", key, value)
            else:
                raise ConfigError(f"{path}: {_unknown(key, known)}")
        return found

    def _read_scrapy(self, table: object) -> None:
        if not isinstance(table, dict):
            raise ConfigError(f"{self.path}: [{SCRAPY_TABLE}] must be a table")
        for key, value in table.items():
            if key not in SCRAPY_SETTINGS:
                raise ConfigError(f"{self.path}: [{SCRAPY_TABLE}] {_unknown(key, SCRAPY_SETTINGS)}")
            shown = f"{SCRAPY_TABLE}.{key}"
            if not _valid(key, value):
                raise ConfigError(
                    f"{self.path}: {shown}: expected {SCRAPY_SETTINGS[key]}, got {value!r}"
                )
            self._add(key.upper(), shown, value.upper() if key == "log_level" else value)

    def _add(self, name: str, key: str, value: Any) -> None:
        self.values[name] = value
        self.keys[name] = key

    def explain(self, exc: ConfigError) -> ConfigError:
        """``exc`` (``setting NAME: problem``) as the file's error, ``FILE: key: problem``, when
        NAME is the file's; an error about another setting (a bad ``-s``) is left as it is."""
        text = str(exc)
        head, colon, problem = text.partition(": ")
        name = head.removeprefix("setting ").split(" ")[0]
        if colon and head.startswith("setting ") and name in self.keys:
            return ConfigError(f"{self.path}: {self.keys[name]}: {problem}")
        if any(name in text for name in self.keys):
            return ConfigError(f"{self.path}: {text}")
        return exc


def _valid(key: str, value: object) -> bool:
    kind = SCRAPY_SETTINGS[key]
    if kind == "true/false":
        return isinstance(value, bool)
    if kind == "text":
        return isinstance(value, str)
    if key == "log_level":
        return isinstance(value, str) and value.upper() in _LOG_LEVELS
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if kind.startswith("whole number"):
        return isinstance(value, int) and value >= int(kind[-1])
    return value > 0 if kind.endswith("> 0") else value >= 0


def _unknown(key: str, known: frozenset[str] | dict[str, str]) -> str:
    lower = key.lower().removeprefix("urlcheck_")
    if lower != key and lower in known:
        return f"{key}: unknown key; write it as {lower}"
    close = difflib.get_close_matches(lower, list(known), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{key}: unknown key{hint}; the keys are in docs/settings.md"


def find_config(explicit: str | None, cwd: Path) -> Path | None:
    """The settings file of a run: ``--config FILE`` (which must exist), else ``urlcheck.toml``
    in the working directory when there is one."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"--config {explicit}: no such file")
        return path
    default = cwd / CONFIG_NAME
    return default if default.is_file() else None
