"""The learned pace in the job's Redis (``pace_step``, lua/common.lua) is urlcheck/pace.py's rule:
driven with the same answers, it gives the same delay after every one, so a transient 429 eases
back in distributed mode as in one process. Counts answers, not time: no clock to wait for."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from urlcheck.cluster import ClusterJob, Frontier, Task
from urlcheck.cluster.frontier import PaceEvent, PaceRule
from urlcheck.pace import HostPace

if TYPE_CHECKING:
    import redis

JOB = "pace"
HOST = "a"


@pytest.fixture
def client(client: redis.Redis) -> redis.Redis:
    """The shared empty client (conftest), with the job open."""
    ClusterJob(client, JOB).open("coordinator@test")
    return client


class Twin:
    """One host's pace in Redis, answered through two processes in turn, next to the
    single-process rule given the same answers."""

    def __init__(self, client: redis.Redis, rule: PaceRule) -> None:
        self.client = client
        self.processes = [Frontier(client, JOB, owner=f"w{i}") for i in (1, 2)]
        for frontier in self.processes:
            frontier.pace = rule
        self.local = HostPace(rule.floor, rule.maximum, rule.ease_after)
        self.turn = 0
        self.rows = 0

    def answer(self, event: PaceEvent) -> tuple[float, float]:
        """One request to the host and its answer; returns (Redis's delay, pace.py's)."""
        frontier = self.processes[self.turn % 2]
        self.turn += 1
        self.rows += 1
        url = f"http://{HOST}/{self.rows}"
        frontier.push([(HOST, Task(self.rows, url, url, None, {}, url))])
        # The host's gap is not what is tested here: make it ready now.
        self.client.zadd(f"uc:{{{JOB}}}:ready", {HOST: 0})
        (lease,) = frontier.claim(1, ttl=30, delay=0).leases
        frontier.complete_result(lease, "{}", delay=0.3, pace=event)
        if event.kind == "fast":
            self.local.too_fast(HOST, event.retry_after)
        else:
            self.local.answered(HOST)
        return self.stored(), self.local.delay(HOST)

    def stored(self) -> float:
        value = self.client.hget(f"uc:{{{JOB}}}:h:{HOST}", "pace")
        return 0.3 if value is None else float(value)

    def gap_ms(self) -> int:
        state = self.client.hmget(f"uc:{{{JOB}}}:h:{HOST}", "next", "done")
        return int(state[0]) - int(state[1])


FAST, OK = PaceEvent("fast"), PaceEvent("ok")


def test_a_transient_429_eases_back_as_in_one_process(client: redis.Redis) -> None:
    twin = Twin(client, PaceRule(0.3, 10.0, ease_after=3))
    steps = [twin.answer(FAST), twin.answer(FAST)]
    assert steps == [(0.6, 0.6), (1.2, 1.2)]
    assert twin.gap_ms() == 1200  # the pace holds the gap for every process
    # The 429s stop: every 3 clean answers it eases halfway to the delay that drew a 429 (0.6),
    # holds there once within 20 %, and after ten such runs forgets the 429 and halves.
    trail = [twin.answer(OK) for _ in range(3 * 12)]
    assert all(redis_delay == local for redis_delay, local in trail)
    eased = [d for i, (d, _) in enumerate(trail) if i % 3 == 2]
    assert eased == [0.8999999999999999, *[0.75] * 10, 0.375]
    for _ in range(3):
        twin.answer(OK)
    assert twin.stored() == 0.3 and twin.gap_ms() == 300  # back to the floor
    assert twin.answer(OK) == (0.3, 0.3)  # at the floor, clean answers change nothing


def test_probe_retry_after_and_cap_follow_the_rule(client: redis.Redis) -> None:
    twin = Twin(client, PaceRule(0.0, 2.0, ease_after=2))
    script = [FAST, PaceEvent("fast", 1.5), OK, OK, FAST, OK, OK, OK, OK]
    script += [PaceEvent("fast", 60.0), FAST, FAST, OK, OK]
    for event in script:
        redis_delay, local = twin.answer(event)
        assert redis_delay == local, event
    assert twin.stored() <= 2.0


def test_no_event_leaves_the_pace_alone(client: redis.Redis) -> None:
    twin = Twin(client, PaceRule(0.3, 10.0, ease_after=1))
    twin.answer(FAST)
    frontier = twin.processes[0]
    frontier.push([(HOST, Task(99, "http://a/x", "http://a/x", None, {}, "http://a/x"))])
    client.zadd(f"uc:{{{JOB}}}:ready", {HOST: 0})
    (lease,) = frontier.claim(1, ttl=30, delay=0).leases
    frontier.complete_result(lease, "{}", delay=0.3)  # a network error: nothing learned
    assert twin.stored() == 0.6
