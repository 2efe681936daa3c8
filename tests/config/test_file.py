"""urlcheck.toml: every URLCHECK_* setting in lower case without its prefix, the Scrapy ones a run
is tuned with under [scrapy], checked like -s with the file and the key in the error; -s wins."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from scrapy.settings import Settings

from tests import processes
from tests.config.test_settings_doc import names_in_code
from tests.conftest import project_settings
from urlcheck.config.file import SCRAPY_SETTINGS, SETTING_KEYS, ConfigFile, find_config
from urlcheck.config.reader import ConfigError
from urlcheck.crawl.configfile import FILE_PRIORITY, read_config
from urlcheck.proxypool import PoolConfig

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

ROOT = Path(__file__).resolve().parents[2]


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "urlcheck.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_setting_has_its_key() -> None:
    pool = {f"URLCHECK_PROXY_{f.name.upper()}" for f in dataclasses.fields(PoolConfig)}
    keys = {f"URLCHECK_{key.upper()}" for key in SETTING_KEYS}
    assert sorted(names_in_code() - keys - pool) == []  # add them to SETTING_KEYS
    assert sorted(keys - names_in_code()) == []  # a key for a setting the code no longer reads
    doc = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert [name for name in SCRAPY_SETTINGS if f"`{name}`" not in doc] == []


def test_the_file_becomes_settings_between_the_project_and_the_command_line(tmp_path) -> None:
    path = _file(
        tmp_path,
        """
        max_hops = 4
        method = "head"
        backoff_http_codes = [429]
        proxy_quarantine_cap = 0.25

        [headers."staging.example"]
        X-Token = "t"

        [auth]
        "staging.example" = { user = "ann", password = "p" }

        [scrapy]
        download_timeout = 12.5
        log_level = "warning"
        robotstxt_obey = true
        """.replace("\n        ", "\n"),
    )
    settings = Settings()
    settings.setmodule("urlcheck.settings", priority="project")
    settings.set("URLCHECK_METHOD", "GET", priority="cmdline")  # as -s URLCHECK_METHOD=GET
    assert read_config(settings, None, cwd=tmp_path) == path.resolve()
    assert settings.getint("URLCHECK_MAX_HOPS") == 4
    assert settings.getpriority("URLCHECK_MAX_HOPS") == FILE_PRIORITY
    assert settings.get("URLCHECK_METHOD") == "GET"  # -s wins
    assert settings.getlist("URLCHECK_BACKOFF_HTTP_CODES") == [429]
    assert settings.getfloat("DOWNLOAD_TIMEOUT") == 12.5
    assert settings.get("LOG_LEVEL") == "WARNING" and settings.getbool("ROBOTSTXT_OBEY")
    assert settings.get("URLCHECK_PROXY_QUARANTINE_CAP") == 0.25
    assert settings["URLCHECK_HEADERS"] == {"staging.example": {"X-Token": "t"}}
    assert read_config(Settings(), None, cwd=tmp_path / "nowhere") is None  # no file: nothing


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("max_hops = 'ten'", "urlcheck.toml: max_hops: expected a whole number, got 'ten'"),
        ("max_hop = 3", "urlcheck.toml: max_hop: unknown key (did you mean max_hops?)"),
        ("URLCHECK_MAX_HOPS = 3", "URLCHECK_MAX_HOPS: unknown key; write it as max_hops"),
        ("MAX_HOPS = 3", "urlcheck.toml: MAX_HOPS: unknown key; write it as max_hops"),
        ("method = 'PUT'", "urlcheck.toml: method: expected one of get, head, got 'put'"),
        ("proxies = ['http://127.0.0.20:1']\nproxy_quarantine_cap = 2", "proxy_quarantine_cap: "),
        ("[auth]\n'*' = 'a:b'", "urlcheck.toml: auth: '*' would send credentials"),
        ("[scrapy]\ndownload_timeout = -1", "download_timeout: expected seconds > 0, got -1"),
        ("[scrapy]\nconcurrent_requests = 0", "concurrent_requests: expected whole number >= 1"),
        ("[scrapy]\nlog_level = 'loud'", "scrapy.log_level: expected DEBUG, INFO, WARNING"),
        ("[scrapy]\ndownload_timeot = 3", "download_timeot: unknown key (did you mean download_ti"),
        ("scrapy = 3", "urlcheck.toml: [scrapy] must be a table"),
        ("max_hops = ", "urlcheck.toml: not valid TOML: "),
        ("serve_port = 70000", "urlcheck.toml: serve_port: expected 0-65535, got 70000"),
    ],
)  # fmt: skip
def test_a_bad_file_is_one_error_naming_the_file_and_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    _file(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        read_config(project_settings(), None, cwd=tmp_path)
    assert str(raised.value).startswith(str(tmp_path / "urlcheck.toml")), raised.value
    assert message in str(raised.value)


def test_a_bad_command_line_setting_is_not_blamed_on_the_file(tmp_path: Path) -> None:
    _file(tmp_path, "max_hops = 3\n")
    with pytest.raises(ConfigError) as raised:
        read_config(project_settings(URLCHECK_BODY_MAX_BYTES="big"), None, cwd=tmp_path)
    assert str(raised.value).startswith("setting URLCHECK_BODY_MAX_BYTES: ")


def test_an_explicit_file_must_exist_and_not_be_binary(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--config nope\.toml: no such file"):
        find_config("nope.toml", tmp_path)
    (tmp_path / "x.toml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match=r"x\.toml: not UTF-8 text"):
        ConfigFile.read(tmp_path / "x.toml")


def urlcheck(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return processes.run([sys.executable, "-m", "urlcheck", *args], cwd=cwd, env=os.environ)


def test_urlcheck_check_reads_urlcheck_toml_and_s_wins(site: SiteServer, tmp_path: Path) -> None:
    chain = site.url("127.0.0.6", "/chain/3?id=toml")
    (tmp_path / "urls.csv").write_text(f"url\n{chain}\n", encoding="utf-8")
    _file(tmp_path, "max_hops = 1\n[scrapy]\ndownload_delay = 0\nlog_level = 'WARNING'\n")
    done = urlcheck("check", "urls.csv", "--out", "a.jsonl", "--no-job", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"error": "too_many_hops"' in (tmp_path / "a.jsonl").read_text()
    again = urlcheck(
        "check", "urls.csv", "--out", "b.jsonl", "--no-job", "-s", "URLCHECK_MAX_HOPS=5",
        cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    assert '"final_status": 200' in (tmp_path / "b.jsonl").read_text()
    other = tmp_path / "other.toml"
    other.write_text("max_hops = 'ten'\n", encoding="utf-8")
    bad = urlcheck("check", "urls.csv", "--no-job", "--config", str(other), cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr == (f"urlcheck: {other}: max_hops: expected a whole number, got 'ten'\n"), (
        bad.stderr[-2000:]
    )
    status = urlcheck("job", "status", "nope", "--config", str(other), cwd=tmp_path)
    assert status.returncode == 2 and "max_hops: expected a whole number" in status.stderr


def test_job_run_hands_the_file_to_its_crawl(site: SiteServer, tmp_path: Path) -> None:
    chain = site.url("127.0.0.6", "/chain/3?id=toml-run")
    (tmp_path / "urls.csv").write_text(f"url\n{chain}\n", encoding="utf-8")
    settings = tmp_path / "conf" / "audit.toml"
    settings.parent.mkdir()
    settings.write_text("max_hops = 1\n[scrapy]\nlog_level = 'WARNING'\n", encoding="utf-8")
    done = urlcheck(
        "job", "run", "job", "--config", str(settings), "--", "-a", "csv=urls.csv",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"error": "too_many_hops"' in (tmp_path / "job" / "results.jsonl").read_text()
