"""URLCHECK_PROXY_FILE and URLCHECK_PROXIES as users write them (urlcheck.config.proxies): the
vendor form ``host:port:user:password`` is read, and no message ever holds a line's text (it may
hold a password): a bad line is named by its file and line number."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest
from scrapy.settings import Settings

from urlcheck.config.crawlconfig import ConfigError
from urlcheck.config.proxies import ProxySettings

if TYPE_CHECKING:
    from pathlib import Path

PASSWORDS = ("Vend0r-Secret", "pass word:with colons", "hunter2", "top secret", "s3cr3t")


def settings_of(path: Path) -> ProxySettings | None:
    return ProxySettings.from_settings(Settings({"URLCHECK_PROXY_FILE": str(path)}))


def test_the_vendor_form_is_read_as_vendors_ship_it(tmp_path: Path) -> None:
    path = tmp_path / "proxies.txt"
    path.write_text(
        "# as the vendor's dashboard exports it\n"
        "gate.vendor.example:7000:cust-us-1:Vend0r-Secret\n"
        "10.0.0.9:3128:user:pass word:with colons\n"
        "[2001:db8::7]:8080:u6:hunter2 weight=2 tags=v6\n"
        "198.51.100.4:3128\n",
        encoding="utf-8",
    )
    parsed = settings_of(path)
    assert parsed is not None
    got = [(p.url, p.credentials and tuple(p.credentials), p.weight) for p in parsed.proxies]
    assert got == [
        ("http://gate.vendor.example:7000", ("cust-us-1", "Vend0r-Secret"), 1.0),
        ("http://10.0.0.9:3128", ("user", "pass word:with colons"), 1.0),
        ("http://[2001:db8::7]:8080", ("u6", "hunter2"), 2.0),
        ("http://198.51.100.4:3128", None, 1.0),
    ]


def test_no_message_holds_a_line_s_text(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "proxies.txt"
    lines = [
        "http://127.0.0.20:3128",  # 1: good
        "gate.vendor.example:notaport:cust:Vend0r-Secret",  # 2
        "http://user:top secret@gate.example:7000",  # 3: a space in a URL's password
        "http://user:hunter2@gate.example:7000/path",  # 4
        "gate.vendor.example:7000:cust-only",  # 5: a user and no password
        "socks5://u:s3cr3t@gate.example:1080",  # 6
        "pass word:with colons",  # 7: a password on a line of its own
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with caplog.at_level(logging.DEBUG):
        parsed = settings_of(path)
    assert parsed is not None and [p.display for p in parsed.proxies] == ["127.0.0.20:3128"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert [w.split(": ", 1)[0] for w in warnings] == [f"{path}:{n}" for n in range(2, 8)]
    for secret in (*PASSWORDS, "cust", "gate", "vendor"):
        assert secret not in caplog.text, secret
    assert all("\n" not in w for w in warnings)


def test_a_file_without_a_valid_line_stops_the_run_without_its_text(tmp_path: Path) -> None:
    path = tmp_path / "proxies.txt"
    path.write_text("gate.example:70000:cust:hunter2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no valid proxy") as info:
        settings_of(path)
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize("proxy", ["http://<script>:80", "http://exa mple.com:80", "http://:80"])
def test_a_proxy_whose_host_is_no_host_name_stops_the_run(proxy: str, caplog) -> None:
    with pytest.raises(ConfigError, match="no valid proxy"):
        ProxySettings.from_settings(Settings({"URLCHECK_PROXIES": [proxy]}))
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.startswith("URLCHECK_PROXIES[0]: skipped a malformed proxy line: ")
    assert "script" not in warning and "mple" not in warning
