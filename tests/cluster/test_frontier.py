"""The Redis frontier against a real, private redis-server (tests/redisserver.py)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict
from itertools import count
from typing import TYPE_CHECKING

import pytest

from urlcheck.clock import ManualClock
from urlcheck.cluster import (
    MAX_REAPS,
    ClusterError,
    ClusterJob,
    ClusterUnavailableError,
    Frontier,
    Lease,
    ResultCollector,
    Task,
    TaskCodecError,
    Then,
    WorkerInfo,
    connect,
    decode_entry,
    encode_entry,
)
from urlcheck.cluster.admin import ensure_sole_coordinator
from urlcheck.cluster.frontier import PaceEvent
from urlcheck.cluster.scripts import text
from urlcheck.redis.boundary import Breaker

if TYPE_CHECKING:
    import redis

    from tests.redisserver import RedisServer

JOB = "t1"
TTL = 30.0
DELAY = 0.3


_rows = count()


def task(host: str, row: int | None = None, path: str = "/") -> Task:
    row = next(_rows) if row is None else row
    url = f"http://{host}{path}"
    return Task(row, url, url, None, {}, url)


def frontier(client: redis.Redis, owner: str = "w1") -> Frontier:
    return Frontier(client, JOB, owner=owner)


@pytest.fixture
def job(client: redis.Redis) -> ClusterJob:
    j = ClusterJob(client, JOB)
    assert j.open("coordinator@test") is True
    return j


def host_state(client: redis.Redis, host: str) -> dict[str, int]:
    raw = client.hgetall(f"uc:{{{JOB}}}:h:{host}")
    return {text(k): int(float(v)) for k, v in raw.items()}


def ready_score(client: redis.Redis, host: str) -> float | None:
    return client.zscore(f"uc:{{{JOB}}}:ready", host)


# --- codec, keys, connection ------------------------------------------------------------------


def test_task_codec_round_trip_and_rejects_foreign_entries() -> None:
    t = Task(
        7,
        "exa mple.com/ä",
        "http://exa mple.com/%C3%A4",
        "https://x/",
        {"id": "1"},
        "http://b/",
        "HEAD",
        [{"url": "http://a/", "status": 301}],
        ["scheme_added"],
        1,
        2,
        30.0,
        True,
    )
    entry = encode_entry(t)
    assert entry.startswith("7|")
    assert decode_entry(entry) == t
    for bad in [
        "7",
        "7|{}",
        "x|" + entry[2:],
        "8|" + entry[2:],
        "7|[1]",
        entry.replace('"retries":1', '"retries":true'),
        entry.replace('"after_public":true', '"after_public":1'),
    ]:
        with pytest.raises(TaskCodecError):
            decode_entry(bad)


def test_job_names_become_one_hash_tag(client: redis.Redis) -> None:
    f = frontier(client)
    assert f.keys.prefix == "uc:{t1}:"
    assert f.keys.queue("a.example") == "uc:{t1}:q:a.example"
    for bad in ["", "a b", "a{b", "x" * 101, "-x"]:
        with pytest.raises(ClusterError, match="job name"):
            Frontier(client, bad, owner="w")
    with pytest.raises(ClusterError, match="worker id"):
        Frontier(client, "ok", owner="a|b")


def test_connection_is_configured_explicitly(server: RedisServer) -> None:
    c = connect(server.url, socket_timeout=0.5, retry_on_timeout=True, protocol=3)
    kwargs = c.connection_pool.connection_kwargs
    assert kwargs["protocol"] == 2
    assert kwargs["socket_timeout"] == 0.5
    assert kwargs["socket_connect_timeout"] == 1.5
    assert kwargs["retry"].get_retries() == 0
    assert "retry_on_timeout" not in kwargs or not kwargs["retry_on_timeout"]
    with pytest.raises(ClusterError, match="socket_timeout"):
        connect(server.url, socket_timeout=30)


# --- ordering and one in flight per host ------------------------------------------------------


def test_claims_one_task_per_host_in_queue_order(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    a1, a2, b1 = task("a", 1), task("a", 2), task("b", 3)
    assert f.push([("a", a1), ("a", a2), ("b", b1)]) == 3
    claim = f.claim(5, ttl=TTL, delay=DELAY)
    assert claim.control == "run" and claim.status == "running"
    assert sorted((lease.host, lease.task.row) for lease in claim.leases) == [("a", 1), ("b", 3)]
    # a is leased: nobody gets a2 while a1 is out, whatever the free places.
    again = frontier(client, "w2").claim(5, ttl=TTL, delay=DELAY)
    assert again.leases == ()
    assert again.wait is None  # nothing queued on a host without a lease


def test_a_completion_claims_the_next_lease_in_the_same_call(
    client: redis.Redis, job: ClusterJob
) -> None:
    f = frontier(client)
    f.push([(h, task(h, row)) for row, h in enumerate("abcd", 1)])
    (first,) = f.claim(1, ttl=TTL, delay=0).leases
    f.complete_result(first, "{}", delay=0)  # its first run loads the script (NOSCRIPT)
    (lease,) = f.claim(1, ttl=TTL, delay=0).leases
    calls = f.round_trips
    done = f.complete_result(lease, "{}", delay=0, then=Then(2, TTL))
    assert f.round_trips == calls + 1
    assert done.committed and done.claim is not None
    left = {"a", "b", "c", "d"} - {first.host, lease.host}
    assert sorted(x.host for x in done.claim.leases) == sorted(left)
    assert done.claim.control == "run"


def test_hops_and_retries_go_to_the_front(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1)), ("a", task("a", 2))])
    (lease,) = f.claim(1, ttl=TTL, delay=0).leases
    hop = task("a", 1, "/next")
    assert f.complete_hop(lease, "a", hop, delay=0).owned
    (lease,) = f.claim(1, ttl=TTL, delay=0).leases
    assert lease.task.target == "http://a/next"
    retry = task("a", 1, "/next")
    retry.retry_times = 1
    f.complete_retry(lease, retry, delay=0)
    (lease,) = f.claim(1, ttl=TTL, delay=0).leases
    assert lease.task.retry_times == 1
    f.complete_result(lease, '{"row":1}', delay=0)
    (lease,) = f.claim(1, ttl=TTL, delay=0).leases
    assert lease.task.row == 2


def test_cross_host_hop_waits_for_its_own_host(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1)), ("b", task("b", 2))])
    leases = {lease.host: lease for lease in f.claim(2, ttl=TTL, delay=DELAY).leases}
    # a's row redirects to b, which is busy: the hop queues behind b's lease.
    f.complete_hop(leases["a"], "b", task("b", 1, "/from-a"), delay=DELAY)
    assert ready_score(client, "b") is None
    f.complete_result(leases["b"], '{"row":2}', delay=DELAY)
    state = host_state(client, "b")
    assert ready_score(client, "b") == state["next"] == state["done"] + 300


def test_never_two_in_flight_per_host_across_clients(
    server: RedisServer, client: redis.Redis, job: ClusterJob
) -> None:
    hosts = [f"h{i}" for i in range(3)]
    feeder = frontier(client, "feeder")
    feeder.push([(h, task(h)) for h in hosts for _ in range(40)])
    held = dict.fromkeys(hosts, 0)
    most = dict.fromkeys(hosts, 0)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(owner: str) -> None:
        c = connect(server.url)
        f = Frontier(c, JOB, owner=owner)
        try:
            idle = 0
            while idle < 50:
                leases = f.claim(2, ttl=TTL, delay=0).leases
                if not leases:
                    idle += 1
                    time.sleep(0.001)
                    continue
                idle = 0
                with lock:
                    for lease in leases:
                        held[lease.host] += 1
                        most[lease.host] = max(most[lease.host], held[lease.host])
                time.sleep(0.001)
                for lease in leases:
                    with lock:
                        held[lease.host] -= 1  # before Redis releases it
                    f.complete_result(lease, "{}", delay=0)
        except BaseException as exc:
            errors.append(exc)
        finally:
            c.close()

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert most == dict.fromkeys(hosts, 1)
    assert job.status().committed == 120


# --- the gap rule and back-off ----------------------------------------------------------------


def test_next_is_max_of_dispatch_done_and_until(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1)), ("a", task("a", 2))])
    (lease,) = f.claim(1, ttl=TTL, delay=DELAY).leases
    dispatch = host_state(client, "a")["dispatch"]
    f.complete_result(lease, "{}", delay=DELAY)
    state = host_state(client, "a")
    assert state["dispatch"] == dispatch
    assert state["next"] == max(dispatch + 300, state["done"] + 300) == ready_score(client, "a")
    claim = f.claim(1, ttl=TTL, delay=DELAY)
    assert claim.leases == ()
    assert claim.wait is not None and 0 < claim.wait <= DELAY


def test_the_start_delay_counts_from_dispatch_and_the_gap_from_the_answer(
    client: redis.Redis, job: ClusterJob
) -> None:
    # AutoThrottle's delay (a 60 s latency, say) is between two starts; after the answer only
    # the 300 ms gap is kept, so a slow host costs its latency plus the gap, not twice it.
    f = frontier(client)
    f.push([("a", task("a", 1)), ("a", task("a", 2))])
    (lease,) = f.claim(1, ttl=TTL, delay=DELAY).leases
    dispatch = host_state(client, "a")["dispatch"]
    f.complete_result(lease, "{}", delay=60.0, gap=DELAY)
    state = host_state(client, "a")
    assert state["next"] == max(dispatch + 60_000, state["done"] + 300) == dispatch + 60_000
    assert f.claim(1, ttl=TTL, delay=DELAY).leases == ()  # not before the start delay
    # A gap longer than the start delay (a Crawl-delay) wins after the answer.
    f.push([("b", task("b", 3)), ("b", task("b", 4))])
    (lease,) = f.claim(1, ttl=TTL, delay=DELAY).leases
    f.complete_result(lease, "{}", delay=DELAY, gap=45.0)
    state = host_state(client, "b")
    assert state["next"] == state["done"] + 45_000


def test_backoff_pauses_the_host_for_every_process(client: redis.Redis, job: ClusterJob) -> None:
    one, two = frontier(client, "w1"), frontier(client, "w2")
    one.push([("a", task("a", 1)), ("a", task("a", 2)), ("b", task("b", 3))])
    leases = {lease.host: lease for lease in one.claim(2, ttl=TTL, delay=DELAY).leases}
    one.complete_retry(leases["a"], leases["a"].task, delay=DELAY, backoff=30, strikes=1)
    state = host_state(client, "a")
    assert state["until"] == state["done"] + 30_000 == state["next"] == ready_score(client, "a")
    assert state["strikes"] == 1
    claim = two.claim(5, ttl=TTL, delay=DELAY)
    assert claim.leases == ()  # a is paused for w2 as well; b is still leased by w1
    assert claim.wait is not None and 29 < claim.wait <= 30
    paused = job.status().paused_hosts
    assert set(paused) == {"a"} and 29 < paused["a"] <= 30
    # A learned delay travels with the host too.
    one.complete_result(leases["b"], "{}", delay=2.5)
    state = host_state(client, "b")
    assert state["delay"] == 2500 and state["next"] == state["done"] + 2500
    # The pace a 429 taught w2 (0.3 -> 0.6 s) holds for a process that learned nothing.
    client.hset(f"uc:{{{JOB}}}:h:a", "until", 0)
    client.zadd(f"uc:{{{JOB}}}:ready", {"a": 0})
    (lease,) = two.claim(1, ttl=TTL, delay=DELAY).leases
    two.complete_retry(
        lease, lease.task, delay=DELAY, backoff=0.001, strikes=2, pace=PaceEvent("fast")
    )
    client.hset(f"uc:{{{JOB}}}:h:a", "until", 0)
    client.zadd(f"uc:{{{JOB}}}:ready", {"a": 0})
    (lease,) = one.claim(1, ttl=TTL, delay=DELAY).leases
    one.complete_result(lease, "{}", delay=DELAY)
    state = host_state(client, "a")
    assert float(client.hget(f"uc:{{{JOB}}}:h:a", "pace")) == 0.6
    assert state["next"] == state["done"] + 600


def test_server_clock_never_goes_backwards(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    ahead = int(client.time()[0]) * 1000 + 60_000
    client.set(f"uc:{{{JOB}}}:clock", ahead)  # as if TIME had stepped back a minute
    f.push([("a", task("a", 1))])
    f.claim(1, ttl=TTL, delay=0)
    assert host_state(client, "a")["dispatch"] == ahead


# --- leases -----------------------------------------------------------------------------------


def _expire(client: redis.Redis, host: str) -> None:
    """Move a lease's deadline into the past (the same as waiting out its TTL)."""
    client.zadd(f"uc:{{{JOB}}}:leases", {host: 1})


def test_expired_lease_goes_back_to_the_front(client: redis.Redis, job: ClusterJob) -> None:
    dead, alive = frontier(client, "dead"), frontier(client, "alive")
    dead.push([("a", task("a", 1)), ("a", task("a", 2))])
    (lost,) = dead.claim(1, ttl=TTL, delay=0).leases
    assert alive.claim(1, ttl=TTL, delay=0).leases == ()
    _expire(client, "a")
    claim = alive.claim(1, ttl=TTL, delay=DELAY)
    assert claim.reaped == 1
    # The lost request may still reach the host: it waits out the delay first.
    assert claim.leases == () and claim.wait is not None and 0 < claim.wait <= DELAY
    client.hset(f"uc:{{{JOB}}}:h:a", "next", 0)
    client.zadd(f"uc:{{{JOB}}}:ready", {"a": 0})
    (again,) = alive.claim(1, ttl=TTL, delay=0).leases
    assert (again.task, again.reaps) == (lost.task, 1)
    # The dead worker wakes up: its hop is dropped (the re-queued copy redoes it) ...
    assert not dead.complete_hop(lost, "b", task("b", 1), delay=0).owned
    assert client.llen(f"uc:{{{JOB}}}:q:b") == 0
    # ... its result counts once, and the live copy's result is then a no-op.
    assert dead.complete_result(lost, '{"row":1,"by":"dead"}', delay=0).committed
    done = alive.complete_result(again, '{"row":1,"by":"alive"}', delay=0)
    assert done.owned and not done.committed
    assert job.status().reaped == 1


def test_a_reaped_copy_of_a_done_row_is_dropped(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1))])
    (lease,) = f.claim(1, ttl=TTL, delay=0).leases
    _expire(client, "a")
    f.claim(1, ttl=TTL, delay=3600)  # reaps; the host waits an hour
    assert f.complete_result(lease, "{}", delay=0).committed  # the stalled holder finishes
    client.zadd(f"uc:{{{JOB}}}:ready", {"a": 0})
    claim = f.claim(1, ttl=TTL, delay=0)
    assert (claim.leases, claim.dropped) == ((), 1)


def test_row_is_worker_lost_after_three_reaps(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1))])
    reaps = []
    for _ in range(MAX_REAPS + 1):
        client.zadd(f"uc:{{{JOB}}}:ready", {"a": 0})
        client.hset(f"uc:{{{JOB}}}:h:a", "next", 0)
        (lease,) = f.claim(1, ttl=TTL, delay=0).leases
        reaps.append(lease.reaps)
        _expire(client, "a")
        f.claim(0, ttl=TTL, delay=0)
    assert reaps == [0, 1, 2, 3]
    assert Lease("a", "x", 2, lease.task).lost_too_often is False
    assert lease.lost_too_often


def test_renew_keeps_leases_and_reports_lost_ones(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1)), ("b", task("b", 2))])
    leases = {lease.host: lease for lease in f.claim(2, ttl=0.05, delay=0).leases}
    _expire(client, "b")
    frontier(client, "other").claim(0, ttl=TTL, delay=0)  # reaps b only if a was renewed
    time.sleep(0.1)  # a's 50 ms TTL has passed too ...
    renewal = f.renew(leases.values(), ttl=TTL, info=None)
    assert renewal.lost == {"b"} and renewal.control == "run"
    frontier(client, "other").claim(0, ttl=TTL, delay=0)
    # ... but a had not been reaped yet, and renewal saved it.
    assert f.complete_result(leases["a"], "{}", delay=0).owned


def test_release_hands_an_unsent_task_back(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1))])
    (lease,) = f.claim(1, ttl=TTL, delay=0).leases
    assert f.release(lease, delay=0).owned
    (again,) = f.claim(1, ttl=TTL, delay=0).leases
    assert again.task == lease.task and again.reaps == 0


# --- exactly once -----------------------------------------------------------------------------


def test_replayed_complete_commits_once(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1))])
    (lease,) = f.claim(1, ttl=TTL, delay=0).leases
    first = f.complete_result(lease, '{"row":1}', delay=0)
    replay = f.complete_result(lease, '{"row":1}', delay=0)
    assert (first.owned, first.committed) == (True, True)
    assert (replay.owned, replay.committed) == (False, False)
    assert client.xlen(f"uc:{{{JOB}}}:results") == 1
    assert f.push([("a", task("a", 1))]) == 0  # a done row is never queued again


def test_commit_without_a_lease_is_first_result_wins(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    assert f.commit(5, '{"row":5,"error":"invalid_url"}')
    assert not f.commit(5, '{"row":5}')
    assert f.push([("a", task("a", 5))]) == 0
    assert client.xlen(f"uc:{{{JOB}}}:results") == 1


def test_collector_writes_each_row_once_across_a_crash(
    client: redis.Redis, job: ClusterJob
) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1)), ("b", task("b", 2))])
    for lease in f.claim(2, ttl=TTL, delay=0).leases:
        f.complete_result(lease, json.dumps({"row": lease.task.row}), delay=0)
    lines: list[tuple[int, str]] = []
    done: set[int] = set()

    class Crash(Exception):
        pass

    def crash_on_sync() -> None:
        raise Crash

    collector = ResultCollector(job, done, lambda r, line: lines.append((r, line)), crash_on_sync)
    with pytest.raises(Crash):  # written, not synced or acknowledged
        collector.step()
    assert len(lines) == 2
    # Restart: results.jsonl (here `done`) says which rows are on disk; the entries come back.
    restarted = ResultCollector(
        job, set(done), lambda r, line: lines.append((r, line)), lambda: None
    )
    step = restarted.step()
    assert (step.written, step.duplicates) == ([], 2)
    assert restarted.step().written == []  # and acknowledges the two
    assert client.xlen(f"uc:{{{JOB}}}:results") == 0  # acknowledged and deleted
    assert sorted(r for r, _ in lines) == [1, 2]


# --- control, status, finish, clean -----------------------------------------------------------


def test_pause_resume_cancel_reach_every_process(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1))])
    assert job.control("pause")
    claim = f.claim(1, ttl=TTL, delay=0)
    assert (claim.control, claim.leases) == ("paused", ())
    assert job.control("resume")
    assert len(f.claim(1, ttl=TTL, delay=0).leases) == 1
    assert job.control("cancel")
    assert f.renew([], ttl=TTL, info=None).control == "cancelled"
    with pytest.raises(ClusterError, match="unknown action"):
        job.control("stop")
    assert not ClusterJob(client, "nosuchjob").control("pause")


def test_status_lists_workers_with_heartbeats(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client, "box1:4242:ab")
    f.push([("a", task("a", 1))])
    leases = f.claim(1, ttl=TTL, delay=0).leases
    info = WorkerInfo("box1:4242:ab", "box1", 4242, "worker", 1.0e9, rows_done=7, in_flight=1)
    f.renew(leases, ttl=TTL, info=info)
    status = job.status()
    assert status.exists and status.status == "running" and status.fed == 1
    assert status.in_flight == 1 and status.coordinator == "coordinator@test"
    (worker,) = status.workers
    assert worker.info == info and 0 <= worker.seconds_since_beat < 5
    assert worker.state(silent_after=30) == "running"
    client.zadd(f"uc:{{{JOB}}}:beats", {info.id: 0})  # no word since 1970: killed
    assert job.status().workers[0].state(silent_after=30) == "silent"
    f.renew([], ttl=TTL, info=WorkerInfo(**{**asdict(info), "state": "finished"}))
    assert job.status().workers[0].state(silent_after=30) == "finished"


def test_finish_expires_the_job_and_clean_removes_it(client: redis.Redis, job: ClusterJob) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1)), ("b", task("b", 2))])
    (lease, _) = f.claim(2, ttl=TTL, delay=0).leases
    f.complete_result(lease, "{}", delay=0)
    job.finish("done", ttl=3600)
    assert job.status().status == "done"
    for key in client.keys("uc:{t1}:*"):
        if not text(key).startswith(("uc:{t1}:q:", "uc:{t1}:h:")):
            assert 0 < client.pttl(key) <= 3_600_000, key
    client.set("uc:{t10}:meta", "another job")
    assert job.clean() > 0
    assert client.keys("uc:{t1}:*") == []
    assert client.exists("uc:{t10}:meta")


def test_a_second_coordinator_elsewhere_is_refused(client: redis.Redis) -> None:
    job = ClusterJob(client, JOB)
    job.open("box1:10:aa", place="box1:/jobs/a")
    f = Frontier(client, JOB, owner="box1:10:aa")
    info = WorkerInfo("box1:10:aa", "box1", 10, "coordinator", 1.0)
    f.renew([], ttl=TTL, info=info)
    with pytest.raises(ClusterError, match="already has a coordinator"):
        ensure_sole_coordinator(job, "box2:/jobs/a", fresh=15)
    ensure_sole_coordinator(job, "box1:/jobs/a", fresh=15)  # its own restart
    client.zadd(f"uc:{{{JOB}}}:beats", {"box1:10:aa": 0})  # silent for ages: dead
    ensure_sole_coordinator(job, "box2:/jobs/a", fresh=15)


# --- Redis going away -------------------------------------------------------------------------


def test_after_a_failure_calls_fail_fast_for_a_while(
    server: RedisServer, client: redis.Redis
) -> None:
    clock = ManualClock(0.0)
    breaker = Breaker(cooldown=2.0, clock=clock)
    f = Frontier(client, JOB, owner="w1", breaker=breaker)
    f.claim(1, ttl=TTL, delay=0)
    server.stop()
    with pytest.raises(ClusterUnavailableError, match="Redis unavailable"):
        f.claim(1, ttl=TTL, delay=0)
    server.start()
    calls = f.round_trips
    with pytest.raises(ClusterUnavailableError, match=r"not asked for another 2\.0 s"):
        f.claim(1, ttl=TTL, delay=0)  # Redis is back, but not asked yet
    clock.advance(2.0)
    assert f.claim(1, ttl=TTL, delay=0).control == ""  # asked again: an empty Redis
    # None while held back; then the restarted Redis knew no script: EVALSHA answered
    # NOSCRIPT, SCRIPT LOAD, EVALSHA again.
    assert f.round_trips == calls + 3


def test_redis_down_raises_at_once_and_restart_is_survived(
    server: RedisServer, client: redis.Redis, job: ClusterJob
) -> None:
    f = frontier(client)
    f.push([("a", task("a", 1)), ("b", task("b", 2))])
    leases = f.claim(2, ttl=TTL, delay=0).leases
    server.stop()
    with pytest.raises(ClusterUnavailableError):
        f.claim(1, ttl=TTL, delay=0)
    with pytest.raises(ClusterUnavailableError):
        job.status()
    server.start()  # empty: no job, no scripts
    claim = f.claim(1, ttl=TTL, delay=0)
    assert (claim.control, claim.status, claim.leases) == ("", "", ())
    collector = ResultCollector(job, set(), lambda r, line: None, lambda: None)
    assert collector.step().gone
    # A worker finishing a request from before the restart: its lease is gone, its result is
    # still committed once, and the coordinator's reopened group reads it.
    assert f.complete_result(leases[0], '{"row":"x"}', delay=0).committed
    assert job.open("coordinator@test", hold=3600) is True
    lines: list[int] = []
    collector = ResultCollector(job, set(), lambda r, line: lines.append(r), lambda: None)
    collector.step()
    assert lines == [leases[0].task.row]
    assert job.open("coordinator@test") is False
    # Requeued rows wait out the hold: a request sent before the loss may still be running.
    f.push([("b", leases[1].task)])
    held = f.claim(5, ttl=TTL, delay=0)
    assert held.leases == () and held.wait is not None and 3590 < held.wait <= 3600
