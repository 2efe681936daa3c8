"""The learned pace in the job's Redis (``pace_step``, lua/common.lua) is
urlcheck/politeness/pace.py's rule: driven with the same answers, it gives the same delay after
every one, so a transient 429 eases back in distributed mode as in one process. Counts answers, not
time: no clock to wait for."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from scrapy.utils.test import get_crawler

from urlcheck.cluster import ClusterJob, Frontier, Task
from urlcheck.cluster.circuit import RedisCircuitStore
from urlcheck.cluster.crawl.coordinator import ClusterCoordinator
from urlcheck.cluster.crawl.runtime import ClusterRuntime
from urlcheck.cluster.frontier import JobHost, PaceEvent, PaceRule
from urlcheck.extensions.hostreport import HostReport
from urlcheck.politeness.circuit import HostCircuit, Strike
from urlcheck.politeness.pace import HostPace
from urlcheck.spiders.check import CheckSpider

if TYPE_CHECKING:
    from pathlib import Path

    import redis

    from tests.redisserver import RedisServer

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


def test_the_job_keeps_what_every_process_met_of_a_host_for_the_report(client: redis.Redis) -> None:
    """The coordinator's host report is the job's: the 429s, learned pace and back-off time
    of each host, whichever process met it, and the hosts given up on, in one call."""
    twin = Twin(client, PaceRule(0.3, 10.0, ease_after=20))
    twin.answer(FAST)  # through w1
    twin.answer(FAST)  # through w2
    twin.answer(OK)
    one, two = twin.processes
    url = "http://b/"
    one.push([("b", Task(100, url, url, None, {}, url))])
    (lease,) = one.claim(1, ttl=30, delay=0).leases
    one.complete_retry(lease, lease.task, delay=0, backoff=120, strikes=1)
    client.zadd(f"uc:{{{JOB}}}:ready", {"b": 0})  # sent early, say by a stalled lease's reaper
    (lease,) = two.claim(1, ttl=30, delay=0).leases
    two.complete_retry(lease, lease.task, delay=0, backoff=60, strikes=2)  # inside the 120 s
    met = one.hosts()
    assert met == {
        HOST: JobHost(too_fast=2, pace=twin.stored(), backoff_seconds=0.0),
        "b": JobHost(backoff_seconds=met["b"].backoff_seconds),
    }
    assert twin.stored() == 1.2 and 120 <= met["b"].backoff_seconds < 125  # overlap once
    # Given up on: its back-off ends, and the time it did not wait is taken off.
    given_up = HostCircuit(1, store=RedisCircuitStore(two)).exhausted("b", Strike(503))
    assert given_up is not None
    after = one.hosts()["b"]
    assert after.down == given_up and 0 <= after.backoff_seconds < 5


def test_the_coordinators_hosts_json_is_the_jobs(
    client: redis.Redis, server: RedisServer, tmp_path: Path
) -> None:
    """What a worker met (a 429, a back-off, a host given up on) is in the coordinator's
    report, though the coordinator never sent the host a request; a restarted coordinator
    writes the job's back-off time again, not on top of its last report."""
    csv = tmp_path / "urls.csv"
    csv.write_text("url\nhttp://a/\n")
    jobdir = tmp_path / "job"
    crawler = get_crawler(CheckSpider, {"REDIS_URL": server.url, "JOBDIR": str(jobdir)})
    crawler.spider = CheckSpider.from_crawler(crawler, job=JOB, csv=str(csv))
    runtime = ClusterRuntime.for_crawler(crawler)
    assert runtime is not None and runtime.is_coordinator
    worker = Twin(client, PaceRule(0.3, 10.0, ease_after=20))
    worker.answer(FAST)
    w1 = worker.processes[0]
    url = "http://b/"
    w1.push([("b", Task(100, url, url, None, {}, url))])
    (lease,) = w1.claim(1, ttl=30, delay=0).leases
    w1.complete_retry(lease, lease.task, delay=0, backoff=2, strikes=1)
    assert HostCircuit(1, store=RedisCircuitStore(w1)).exhausted("b", Strike(503)) is not None

    ClusterCoordinator.from_crawler(crawler)  # what gives the host report the job's hosts
    report = HostReport.from_crawler(crawler)
    for _ in range(2):  # the coordinator's run, and a restart's
        report.spider_closed()
        hosts = json.loads((jobdir / "hosts.json").read_text())["hosts"]
        assert hosts[HOST] == {
            "delay": 0.6,
            "too_fast": 1,
            "backoff_seconds": 0.0,
            "unavailable": None,
            "pace": None,  # a distributed job's pace state lives in its Redis
        }
        assert hosts["b"]["unavailable"]["last_status"] == 503
        assert 0 <= hosts["b"]["backoff_seconds"] <= 2
