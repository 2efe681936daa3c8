"""The link on a private redis-server: scripts by SHA1, loaded again after a SCRIPT FLUSH and
after a restart; commands whose answers nobody waits for; each round trip counted."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
import redis

from tests.redisserver import RedisServer
from urlcheck.redis.client import make_client
from urlcheck.redis.link import Link
from urlcheck.redis.scripts import Script

TEXT = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
INCR = Script("incr", TEXT, hashlib.sha1(TEXT.encode()).hexdigest())


@pytest.fixture
def link(server: RedisServer) -> Iterator[Link]:
    if not server.running:
        server.start()
    server.flush()
    link = Link(make_client(server.url, decode_responses=True), owns_client=True)
    yield link
    link.close()


def test_a_script_is_loaded_once_and_again_after_a_flush_or_a_restart(
    server: RedisServer, link: Link
) -> None:
    assert link.run(INCR, ["n"], [1]) == 1
    assert link.round_trips == 3  # EVALSHA: NOSCRIPT; SCRIPT LOAD; EVALSHA
    assert link.run(INCR, ["n"], [1]) == 2
    assert link.round_trips == 4
    server.client().script_flush()
    assert link.run(INCR, ["n"], [1]) == 3
    assert link.round_trips == 7
    server.restart()  # empty: no keys, no scripts
    with pytest.raises(redis.ConnectionError):  # the link's connection died with the server
        link.run(INCR, ["n"], [1])
    assert link.run(INCR, ["n"], [5]) == 5  # a new connection; the script loaded again
    assert server.client().get("n") == b"5"


def test_open_loads_the_scripts_up_front(server: RedisServer, link: Link) -> None:
    link.open([INCR], probe="n")
    assert link.round_trips == 1
    assert link.run(INCR, ["n"], [2]) == 2
    assert link.round_trips == 2


def test_a_command_sent_without_waiting_runs_before_the_next_call(link: Link) -> None:
    link.open([], probe="k")  # learns that the server knows CLIENT REPLY
    link.send("SET", "k", "v")
    assert (link.round_trips, link.commands) == (1, 2)  # CLIENT REPLY SKIP and SET, one write
    assert link.call("GET", "k") == "v"
    assert (link.round_trips, link.commands) == (2, 3)
    link.send_script(INCR, ["n"], [4])
    assert link.others().get("n") == "4"  # another connection: a PING first made sure
    assert link.round_trips == 3


def test_without_client_reply_the_answers_are_read_with_the_next_call() -> None:
    with RedisServer(options=("--rename-command", "CLIENT", "")) as server:
        link = Link(make_client(server.url, decode_responses=True), owns_client=True)
        link.open([], probe="k")
        for i in range(3):
            link.send("SET", f"k{i}", i)
        assert link.call("MGET", "k0", "k1", "k2") == ["0", "1", "2"]
        assert (link.round_trips, link.commands) == (2, 4)
        link.close()
