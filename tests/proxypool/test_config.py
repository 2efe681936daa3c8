import dataclasses
from pathlib import Path

import pytest
from scrapy.settings import Settings

from urlcheck.proxypool import ConfigError, PoolConfig


def test_defaults_are_valid_and_documented() -> None:
    config = PoolConfig()
    docs = PoolConfig.field_docs()
    assert set(docs) == {f.name for f in dataclasses.fields(PoolConfig)}
    assert all(docs.values())
    assert config.quarantine_cap == 0.3
    assert config.min_in_service == 2
    assert config.session_ttl == 900.0
    assert config.window_size == 50


def test_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        PoolConfig().strategy = "round_robin"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("values", "name"),
    [
        ({"strategy": "random"}, "strategy"),
        ({"quarantine_cap": 1.5}, "quarantine_cap"),
        ({"window_size": 0}, "window_size"),
        ({"recent_failures": 6}, "recent_failures"),
        ({"degrade_below": 0.5}, "degrade_below"),
        ({"backoff_max": 10.0}, "backoff_max"),
        ({"control_urls": ("ftp://x",)}, "control_urls"),
        ({"min_in_service": -1}, "min_in_service"),
        ({"max_concurrent": 2.5}, "max_concurrent"),
        ({"fail_closed": "yes"}, "fail_closed"),
    ],
)
def test_bad_values_name_the_field(values: dict[str, object], name: str) -> None:
    with pytest.raises(ConfigError) as info:
        PoolConfig(**values)  # type: ignore[arg-type]
    assert info.value.name == name
    assert str(info.value).startswith(f"{name}: ")


def test_from_scrapy_settings() -> None:
    settings = Settings(
        {
            "URLCHECK_PROXY_STRATEGY": "least_connections",
            "URLCHECK_PROXY_QUARANTINE_CAP": "0.5",
            "URLCHECK_PROXY_MIN_IN_SERVICE": "3",
            "URLCHECK_PROXY_FAIL_CLOSED": "true",
            "URLCHECK_PROXY_CONTROL_URLS": "http://127.0.0.2/a, http://127.0.0.3/b",
            "URLCHECK_PROXY_SESSION_TTL": 60,
        }
    )
    config = PoolConfig.from_settings(settings)
    assert config.strategy == "least_connections"
    assert config.quarantine_cap == 0.5
    assert config.min_in_service == 3
    assert config.fail_closed is True
    assert config.control_urls == ("http://127.0.0.2/a", "http://127.0.0.3/b")
    assert config.session_ttl == 60.0
    assert isinstance(config.session_ttl, float)


def test_from_settings_names_the_setting() -> None:
    with pytest.raises(ConfigError) as info:
        PoolConfig.from_settings(Settings({"URLCHECK_PROXY_QUARANTINE_CAP": 2}))
    assert str(info.value).startswith("URLCHECK_PROXY_QUARANTINE_CAP: must be in [0, 1]")
    with pytest.raises(ConfigError) as info:
        PoolConfig.from_settings(Settings({"URLCHECK_PROXY_MIN_IN_SERVICE": "two"}))
    assert info.value.name == "URLCHECK_PROXY_MIN_IN_SERVICE"
    with pytest.raises(ConfigError) as info:
        PoolConfig.from_settings(Settings({"URLCHECK_PROXY_FAIL_CLOSED": "maybe"}))
    assert info.value.name == "URLCHECK_PROXY_FAIL_CLOSED"


def test_from_plain_mapping_with_prefix() -> None:
    config = PoolConfig.from_settings({"P_WINDOW_SIZE": 20, "P_MIN_OUTCOMES": 5}, prefix="P_")
    assert (config.window_size, config.min_outcomes) == (20, 5)


def test_every_field_is_in_the_docs() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "proxypool.md").read_text(encoding="utf-8")
    for f in dataclasses.fields(PoolConfig):
        row = f"| `{f.name}` | `URLCHECK_PROXY_{f.name.upper()}` |"
        assert row in docs, f.name
