"""The boundary: whatever Redis does wrong leaves a store's public methods as the store's own
error, raised the same way by each (limits' ``_wrap_errors``), on a private redis-server."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
import redis

from urlcheck.clock import ManualClock
from urlcheck.redis.boundary import Boundary, Breaker
from urlcheck.redis.client import make_client
from urlcheck.redis.link import Link
from urlcheck.redis.scripts import Script

if TYPE_CHECKING:
    from tests.redisserver import RedisServer

TEXT = "return redis.call('HINCRBY', KEYS[1], 'n', 1)"
BUMP = Script("bump", TEXT, hashlib.sha1(TEXT.encode()).hexdigest())


class Down(Exception):
    pass


class Refused(Exception):
    pass


class Counter(Boundary):
    unavailable_error = Down
    refused_error = Refused
    subject = "counter"

    def __init__(self, url: str, breaker: Breaker | None = None) -> None:
        self.link = Link(make_client(url, decode_responses=True), owns_client=True)
        self.breaker = breaker

    def bump(self, key: str) -> int:
        return int(self.link.run(BUMP, [key], []))

    def read(self, key: str) -> Any:
        with self.link.pipeline(transaction=True) as pipe:
            pipe.get(key)
            return pipe.execute()[0]

    def check(self, value: int) -> int:
        if value < 0:
            raise ValueError("not Redis's business")
        return value

    def _raw(self, key: str) -> Any:
        return self.link.call("HGET", key, "n")


@pytest.fixture
def running(server: RedisServer) -> Iterator[RedisServer]:
    if not server.running:
        server.start()
    server.flush()
    yield server


def test_every_public_method_raises_the_stores_own_errors(running: RedisServer) -> None:
    counter = Counter(running.url)
    assert counter.bump("h") == 1
    running.client().set("s", "a string")
    with pytest.raises(Refused, match=r"^counter bump: Redis error: WRONGTYPE") as refused:
        counter.bump("s")  # a script Redis refuses to run on a string
    assert isinstance(refused.value.__cause__, redis.ResponseError)
    with pytest.raises(ValueError, match="not Redis's"):  # other errors are left alone
        counter.check(-1)
    with pytest.raises(redis.ResponseError):  # private methods are the public ones' plumbing
        counter._raw("s")
    running.stop()
    for call in (lambda: counter.bump("h"), lambda: counter.read("h")):
        with pytest.raises(Down, match=r"^counter (bump|read): Redis unavailable: ") as down:
            call()
        assert isinstance(down.value.__cause__, redis.ConnectionError)
    running.start()
    assert counter.bump("h") == 1  # asked again at once: the store has no breaker
    counter.link.close()


def test_a_breaker_holds_calls_back_after_redis_did_not_answer(running: RedisServer) -> None:
    clock = ManualClock(0.0)
    counter = Counter(running.url, Breaker(cooldown=2.0, clock=clock))
    running.client().set("s", "a string")
    with pytest.raises(Refused):
        counter.bump("s")
    assert counter.bump("h") == 1  # a refusal does not hold calls back
    running.stop()
    with pytest.raises(Down, match=r"^counter bump: Redis unavailable: (?!not asked)"):
        counter.bump("h")
    running.start()
    trips = counter.link.round_trips
    clock.advance(1.5)
    with pytest.raises(
        Down, match=r"^counter read: Redis unavailable: not asked for another 0\.5 s"
    ):
        counter.read("h")
    assert counter.link.round_trips == trips  # not asked
    clock.advance(0.5)
    assert counter.bump("h") == 1  # an empty Redis, asked again
    counter.link.close()
