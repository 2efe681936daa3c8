"""The lease dispatch alone, without Scrapy: a real JobProcess on a private redis-server, clocks
moved by hand, and the hooks of a crawl reduced to a record of what it was asked to do."""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from urlcheck.clock import ManualClock
from urlcheck.cluster import ClusterJob, Frontier, Lease, Task
from urlcheck.cluster.config import ClusterConfig
from urlcheck.cluster.dispatch import IDLE_POLL, LeaseDispatch
from urlcheck.cluster.frontier import Then
from urlcheck.cluster.process import COORDINATOR, WORKER, JobProcess
from urlcheck.politeness.backoff import BackoffConfig, HostBackoff

if TYPE_CHECKING:
    from collections.abc import Iterator

    import redis

    from tests.redisserver import RedisServer

JOB = "disp"
TTL = 30.0


class Crawl:
    """What dispatch asked of the crawl it serves (urlcheck.cluster.dispatch.Hooks)."""

    def __init__(self) -> None:
        self.handed: list[int] = []
        self.ended: list[str] = []
        self.wakes: list[float] = []
        self.stats: Counter[str] = Counter()

    def prepare(self, lease: Lease) -> Task:
        return lease.task  # what a crawl sends: here, the task itself

    def handed_on(self, row: int) -> None:
        self.handed.append(row)

    def lost_line(self, lease: Lease) -> str:
        return json.dumps({"row": lease.task.row, "error": "worker_lost"})

    def job_ended(self, reason: str) -> None:
        self.ended.append(reason)

    def wake_at(self, when: float) -> None:
        self.wakes.append(when)

    def inc(self, key: str, count: int = 1) -> None:
        self.stats[key.removeprefix("urlcheck/cluster/")] += count


def task(row: int, host: str = "a.test", path: str = "/") -> Task:
    url = f"http://{host}{path}"
    return Task(row, url, url, None, {}, url)


def make_process(server: RedisServer, role: str = WORKER) -> JobProcess:
    config = ClusterConfig(redis_url=server.url, lease_ttl=TTL, delay=0.3, poll_interval=0.5)
    return JobProcess(config, JOB, role, HostBackoff(BackoffConfig()))


@pytest.fixture
def process(server: RedisServer, client: redis.Redis) -> Iterator[JobProcess]:
    assert ClusterJob(client, JOB).open("coordinator@test")
    found = make_process(server)
    found.book.clock = ManualClock(0.0)
    yield found
    found.client.close()


@pytest.fixture
def crawl() -> Crawl:
    return Crawl()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(100.0)


@pytest.fixture
def dispatch(process: JobProcess, crawl: Crawl, clock: ManualClock) -> LeaseDispatch[Task]:
    return LeaseDispatch(process, crawl, clock=clock)


def committed(client: redis.Redis) -> list[dict[str, object]]:
    return [json.loads(c.line) for c in ClusterJob(client, JOB).collect(100).results]


def test_a_claim_leases_one_task_per_ready_host_and_each_is_sent_once(
    dispatch: LeaseDispatch[Task], process: JobProcess, crawl: Crawl
) -> None:
    process.frontier.push([("a.test", task(1)), ("a.test", task(2)), ("b.test", task(3))])
    first = dispatch.claim(5)
    assert first is not None and first.row == 1
    assert len(dispatch) == 1  # b.test's; a.test's second row waits for the first's outcome
    second = dispatch.pop_ready()
    assert second is not None and second.row == 3
    assert dispatch.pop_ready() is None
    assert crawl.stats == {"claims": 1, "leases": 2}
    assert sorted(lease.task.row for lease in process.book.renewable()) == [1, 3]
    assert process.book.unsent() == []


def test_no_claim_before_it_is_due_nor_without_a_free_place(
    dispatch: LeaseDispatch[Task], process: JobProcess, crawl: Crawl, clock: ManualClock
) -> None:
    assert dispatch.claim(0) is None
    assert crawl.stats["claims"] == 0
    assert dispatch.claim(5) is None  # nothing queued anywhere: ask again after poll_interval
    assert crawl.stats["claims"] == 1 and crawl.wakes[-1] == 100.5
    process.frontier.push([("a.test", task(1))])
    assert dispatch.claim(5) is None  # too early: Redis is not asked
    assert crawl.stats["claims"] == 1 and crawl.wakes[-1] == 100.5
    clock.advance(0.5)
    claimed = dispatch.claim(5)
    assert claimed is not None and claimed.row == 1
    assert crawl.stats["claims"] == 2


def test_a_row_lost_three_times_is_committed_as_worker_lost(
    dispatch: LeaseDispatch[Task], process: JobProcess, crawl: Crawl, client: redis.Redis
) -> None:
    process.frontier.push([("a.test", task(1))])
    client.hset(f"uc:{{{JOB}}}:reaps", "1", 3)  # three holders died with it
    assert dispatch.claim(5) is None
    assert len(dispatch) == 0 and len(process.book) == 0
    assert committed(client) == [{"row": 1, "error": "worker_lost"}]
    assert process.rows_done == 1
    assert crawl.stats["worker_lost"] == 1


def test_a_lease_near_its_end_is_not_sent_but_handed_on(
    dispatch: LeaseDispatch[Task], process: JobProcess, crawl: Crawl
) -> None:
    process.frontier.push([("a.test", task(1)), ("b.test", task(2))])
    book_clock = process.book.clock
    assert isinstance(book_clock, ManualClock)
    asked = book_clock()
    dispatch.accept(process.frontier.claim(5, ttl=TTL, delay=0), asked)
    assert len(dispatch) == 2
    book_clock.advance(TTL - process.config.send_margin)  # renewals failed all along
    assert dispatch.pop_ready() is None
    assert sorted(crawl.handed) == [1, 2] and len(process.book) == 0
    assert crawl.stats["expired_before_send"] == 2


def test_a_hop_goes_back_with_its_lease_and_claims_the_next_in_the_same_round_trip(
    dispatch: LeaseDispatch[Task], process: JobProcess, crawl: Crawl
) -> None:
    process.frontier.push([("a.test", task(1))])
    sent = dispatch.claim(5)
    assert sent is not None
    hop = Task(1, sent.url, sent.requested_url, None, {}, "http://b.test/next")
    hop.chain.append({"url": sent.target, "status": 301, "location": None, "ms": 1, "kind": None})
    assert dispatch.hand_back(1, hop, then=lambda: Then(1, TTL))
    assert crawl.handed == [1]
    assert crawl.stats["hops"] == 1 and crawl.stats["claims"] == 1  # no claim of its own
    following = dispatch.pop_ready()
    assert following is not None and following.target == "http://b.test/next"
    assert following.chain[0]["status"] == 301
    # Its lease went with that completion: a second outcome for the row is stale.
    process.book.pop(1)
    assert not dispatch.hand_back(1, hop, then=lambda: None)
    assert crawl.stats["stale_dropped"] == 1


def test_a_retry_goes_back_with_the_pause_the_back_off_decided(
    dispatch: LeaseDispatch[Task], process: JobProcess, crawl: Crawl
) -> None:
    process.frontier.push([("a.test", task(1))])
    sent = dispatch.claim(5)
    assert sent is not None
    dispatch.host_paused("a.test", 20.0)
    assert dispatch.hand_back(1, sent, then=lambda: None)
    assert crawl.stats["retries"] == 1
    again = process.frontier.claim(5, ttl=TTL, delay=0)
    assert again.leases == () and again.wait is not None and 19.0 < again.wait <= 20.0


def test_redis_gone_pauses_dispatch_once_and_its_return_resumes_it(
    dispatch: LeaseDispatch[Task],
    process: JobProcess,
    crawl: Crawl,
    clock: ManualClock,
    server: RedisServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="urlcheck.cluster.dispatch")
    process.breaker.clock = clock  # after a failure Redis is not asked for 2 s
    server.stop()
    assert dispatch.claim(5) is None
    assert crawl.wakes[-1] == 100.0 + IDLE_POLL
    dispatch.renew()
    clock.advance(IDLE_POLL)
    assert dispatch.claim(5) is None
    assert crawl.stats["unavailable"] == 3 and crawl.stats["claims"] == 0
    paused = [r for r in caplog.records if "dispatch paused until it answers" in r.message]
    assert len(paused) == 1 and paused[0].levelno == logging.WARNING
    server.start()  # empty: the job is gone until its coordinator opens it again
    clock.advance(IDLE_POLL)
    assert dispatch.claim(5) is None
    assert crawl.stats["claims"] == 1
    assert "Redis answers again after 2.0 s; dispatch resumes" in caplog.messages


def test_a_pause_hands_back_what_was_not_sent_and_the_end_is_said_once(
    dispatch: LeaseDispatch[Task], process: JobProcess, crawl: Crawl, client: redis.Redis
) -> None:
    process.frontier.push([("a.test", task(1)), ("b.test", task(2))])
    dispatch.accept(process.frontier.claim(5, ttl=TTL, delay=0), process.book.clock())
    assert len(dispatch) == 2
    dispatch.follow_control("paused", "running")
    assert len(dispatch) == 0 and len(process.book) == 0
    assert sorted(crawl.handed) == [1, 2]
    assert sorted(client.zrange(f"uc:{{{JOB}}}:ready", 0, -1)) == [b"a.test", b"b.test"]
    assert client.hlen(f"uc:{{{JOB}}}:inflight") == 0
    dispatch.follow_control("run", "done")
    dispatch.follow_control("cancelled", "cancelled")
    assert process.finished and crawl.ended == ["finished"]


def test_a_renewal_learns_of_a_lease_lost_after_a_stall(
    dispatch: LeaseDispatch[Task], process: JobProcess, crawl: Crawl, client: redis.Redis
) -> None:
    process.frontier.push([("a.test", task(1))])
    assert dispatch.claim(5) is not None
    client.zadd(f"uc:{{{JOB}}}:leases", {"a.test": 1})  # expired long ago in Redis
    Frontier(client, JOB, owner="other").claim(0, ttl=TTL, delay=0)  # reaps it
    dispatch.renew()
    assert crawl.stats["lost"] == 1 and len(process.book) == 0


def test_a_worker_says_every_30_s_that_it_waits_for_the_coordinator(
    dispatch: LeaseDispatch[Task],
    clock: ManualClock,
    client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="urlcheck.cluster.dispatch")
    client.flushall()  # no job yet
    waiting = f"Waiting for the coordinator of job {JOB!r} to start"
    for step in (0.0, 10.0, 19.0, 1.0):
        clock.advance(step)
        dispatch.renew()
    assert caplog.messages.count(waiting) == 2  # at 100 s and at 130 s


def test_the_coordinator_does_not_wait_for_itself(
    server: RedisServer, client: redis.Redis, crawl: Crawl, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="urlcheck.cluster.dispatch")
    process = make_process(server, COORDINATOR)
    LeaseDispatch(process, crawl).renew()
    assert not any("Waiting" in message for message in caplog.messages)
    process.client.close()


def test_closing_gives_back_what_was_not_sent_and_says_why(
    dispatch: LeaseDispatch[Task], process: JobProcess, crawl: Crawl, client: redis.Redis
) -> None:
    process.frontier.push([("a.test", task(1)), ("b.test", task(2))])
    assert dispatch.claim(5) is not None  # row 1 sent, row 2 not
    dispatch.close("shutdown")
    assert dispatch.closing and crawl.handed == [2]
    assert client.zrange(f"uc:{{{JOB}}}:ready", 0, -1) == [b"b.test"]
    (worker,) = ClusterJob(client, JOB).status().workers
    assert (worker.info.id, worker.info.state, worker.info.in_flight) == (
        process.owner,
        "shutdown",
        1,
    )
