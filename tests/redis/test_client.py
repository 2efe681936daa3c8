"""The client options urlcheck forces on every Redis client, whatever the options or the URL."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from urlcheck.redis.client import OptionError, check_options, make_client

SECRET = "s3cret-Pw"


def kwargs_of(url: str, options: dict[str, Any] | None = None, *, decode: bool) -> dict[str, Any]:
    client = make_client(url, options, decode_responses=decode)  # no connection made
    try:
        return dict(client.connection_pool.connection_kwargs)
    finally:
        client.close()


def test_the_forced_options_win_over_the_options_and_the_urls_query() -> None:
    asked = {
        "protocol": 3,
        "retry_on_timeout": True,
        "decode_responses": True,
        "single_connection_client": True,
        "password": SECRET,
        "client_name": "mine",
    }
    url = "redis://127.0.0.1:1/2?protocol=3&retry_on_timeout=yes"
    kwargs = kwargs_of(url, asked, decode=False)
    assert (kwargs["protocol"], kwargs["decode_responses"], kwargs["retry_on_error"]) == (
        2,
        False,
        [],
    )
    assert kwargs["retry"].get_retries() == 0
    assert "retry_on_timeout" not in kwargs
    assert (kwargs["password"], kwargs["client_name"], kwargs["db"]) == (SECRET, "mine", 2)
    assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (1.5, 1.5)
    assert kwargs_of("redis://127.0.0.1:1/0", decode=True)["decode_responses"] is True


def test_timeouts_up_to_two_seconds_are_the_callers_and_the_url_wins() -> None:
    kwargs = kwargs_of("redis://h:1/0?socket_timeout=0.5", {"socket_timeout": 2}, decode=False)
    assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (0.5, 1.5)
    cases: list[tuple[str, dict[str, Any]]] = [
        ("redis://h:1/0", {"socket_timeout": 30}),
        ("redis://h:1/0", {"socket_connect_timeout": 0}),
        (f"redis://:{SECRET}@h:1/0?socket_connect_timeout=2.5", {}),
        ("redis://h:1/0", {"socket_timeout": "soon"}),
    ]
    for url, options in cases:
        with pytest.raises(OptionError, match="socket_") as info:
            make_client(url, options, decode_responses=False)
        assert SECRET not in str(info.value)
        with pytest.raises(OptionError):
            check_options(url, options)  # settings are checked without redis-py


def test_a_bad_url_is_named_without_the_url() -> None:
    with pytest.raises(OptionError, match="redis://, rediss://, unix://") as info:
        make_client(f"http://:{SECRET}@h:1/0", decode_responses=False)
    assert SECRET not in str(info.value)


def test_a_unix_socket_keeps_the_options_too() -> None:
    kwargs = kwargs_of("unix:///tmp/none.sock?db=3", {"socket_timeout": 1}, decode=True)
    assert (kwargs["path"], kwargs["db"], kwargs["socket_timeout"], kwargs["protocol"]) == (
        "/tmp/none.sock",
        3,
        1,
        2,
    )


def test_redis_py_is_loaded_when_a_client_is_made_not_before() -> None:
    code = (
        "import sys\n"
        "from urlcheck.proxypool.store import store_from_uri\n"
        "from urlcheck.proxypool.store.redis import RedisStore\n"
        "before = 'redis' in sys.modules\n"
        "store_from_uri('redis://127.0.0.1:1/0', 'p')\n"
        "print(before, 'redis' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
