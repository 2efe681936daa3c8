"""Every urlcheck setting is parsed in one place and documented in docs/settings.md."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from urlcheck.config.crawlconfig import ConfigError, UrlcheckConfig
from urlcheck.crawl.runtime import runtime
from urlcheck.proxypool import PoolConfig
from urlcheck.spiders.check import CheckSpider

ROOT = Path(__file__).resolve().parents[2]
_NAME = re.compile(r"URLCHECK_[A-Z0-9_]*[A-Z0-9]")


def names_in_code() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "urlcheck").rglob("*.py"):
        found.update(_NAME.findall(path.read_text(encoding="utf-8")))
    # The pool's fields are read as URLCHECK_PROXY_<FIELD>; documented in docs/proxypool.md.
    return {name for name in found if name != "URLCHECK_PROXY" and "_DEMO_" not in name}


def test_every_setting_in_the_code_is_in_docs_settings() -> None:
    documented = set(_NAME.findall((ROOT / "docs" / "settings.md").read_text(encoding="utf-8")))
    missing = sorted(names_in_code() - documented)
    assert not missing, f"add to docs/settings.md: {', '.join(missing)}"


def test_every_pool_threshold_is_in_docs_proxypool() -> None:
    text = (ROOT / "docs" / "proxypool.md").read_text(encoding="utf-8")
    missing = [f.name for f in dataclasses.fields(PoolConfig) if f.name not in text]
    assert not missing, f"add to docs/proxypool.md: {', '.join(missing)}"


def test_one_bad_setting_is_named_before_anything_runs() -> None:
    with pytest.raises(ConfigError, match="URLCHECK_BODY_MAX_BYTES"):
        UrlcheckConfig.from_settings(Settings({"URLCHECK_BODY_MAX_BYTES": "big"}))
    with pytest.raises(ConfigError, match="URLCHECK_RESULTS_ENABLED"):
        UrlcheckConfig.from_settings(Settings({"URLCHECK_RESULTS_ENABLED": "perhaps"}))


def test_a_crawl_parses_its_settings_once_and_shares_them() -> None:
    crawler = get_crawler(
        CheckSpider, {"URLCHECK_MAX_HOPS": "3", "URLCHECK_BODY_MAX_BYTES": "4096"}
    )
    first = runtime(crawler)
    assert runtime(crawler) is first
    assert first.config.check.max_hops == 3
    assert first.config.body_max_bytes == 4096
    assert first.config.proxies is None
    assert first.backoff.config is first.config.backoff
