"""ClusterScheduler, the Scrapy adapter of the lease dispatch, on a real crawler and a private
redis-server: a lease lost three times, a hop, a stale outcome, a pause and the job's end, as the
engine sees them (tests/cluster/test_dispatch.py tests the dispatch alone)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from scrapy import Request
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.test import get_crawler

from urlcheck.clock import ManualClock
from urlcheck.cluster import ClusterJob, Frontier, Task, connect
from urlcheck.cluster.crawl.pipeline import ClusterResultsPipeline
from urlcheck.cluster.crawl.runtime import ClusterRuntime
from urlcheck.cluster.crawl.scheduler import ClusterScheduler
from urlcheck.cluster.crawl.tasks import task_from_request, worker_lost_result
from urlcheck.crawl import meta as m
from urlcheck.crawl.runtime import runtime as crawl_runtime
from urlcheck.spiders.check import CheckSpider

if TYPE_CHECKING:
    from tests.redisserver import RedisServer

JOB = "sched"


@pytest.fixture
def scheduler(server: RedisServer) -> Iterator[ClusterScheduler]:
    client = connect(server.url)
    client.flushall()
    crawler = get_crawler(
        CheckSpider, {"REDIS_URL": server.url, "DOWNLOAD_DELAY": 0.3, "DOWNLOAD_TIMEOUT": 20}
    )
    crawler.spider = CheckSpider.from_crawler(crawler, job=JOB)
    crawler.engine = crawler._create_engine()  # a real engine, never started
    found = ClusterScheduler.from_crawler(crawler)  # not opened: no renewal loop
    assert ClusterJob(client, JOB).open("coordinator@test")
    yield found
    client.close()


def task(row: int, host: str = "a.test", path: str = "/") -> Task:
    url = f"http://{host}{path}"
    return Task(row, url, url, None, {}, url)


def claim(scheduler: ClusterScheduler, n: int = 5) -> None:
    runtime = scheduler.runtime
    asked = runtime.book.clock()
    config = runtime.config
    scheduler.accept(runtime.frontier.claim(n, ttl=config.lease_ttl, delay=config.delay), asked)


def collected(server: RedisServer) -> list[dict[str, object]]:
    job = ClusterJob(connect(server.url), JOB)
    return [json.loads(c.line) for c in job.collect(100).results]


def test_a_row_lost_three_times_is_written_as_worker_lost(
    scheduler: ClusterScheduler, server: RedisServer
) -> None:
    runtime = scheduler.runtime
    runtime.frontier.push([("a.test", task(1))])
    client = connect(server.url)
    client.hset(f"uc:{{{JOB}}}:reaps", "1", 3)  # three holders died with it
    claim(scheduler)
    assert len(scheduler) == 0  # nothing to send
    (line,) = collected(server)
    assert (line["row"], line["error"]) == (1, "worker_lost")
    assert runtime.rows_done == 1
    assert crawler_stat(scheduler, "urlcheck/cluster/worker_lost") == 1


def crawler_stat(scheduler: ClusterScheduler, key: str) -> object:
    assert scheduler.stats is not None
    return scheduler.stats.get_value(key)


def test_a_hop_goes_back_with_its_lease_and_a_stale_one_is_dropped(
    scheduler: ClusterScheduler, server: RedisServer
) -> None:
    runtime = scheduler.runtime
    runtime.frontier.push([("a.test", task(1))])
    claim(scheduler)
    request = scheduler.next_request()  # handed to the downloader
    assert request is not None and len(scheduler) == 0
    assert request.url == "http://a.test/" and request.meta[m.TASK].row == 1
    hop = scheduler.requests.request(
        request.meta[m.TASK],
        "http://b.test/next",
        [{"url": "http://a.test/", "status": 301, "location": None, "ms": 1, "kind": None}],
    )
    assert scheduler.enqueue_request(hop)
    # Its completion leased the next hop (b.test is idle) in the same round trip.
    assert len(scheduler) == 1
    assert scheduler.next_request().url == "http://b.test/next"
    assert task_from_request(hop).chain[0]["status"] == 301
    # An outcome for a row whose lease this process lost (reaped after a stall) is dropped.
    scheduler.runtime.book.pop(1)
    assert not scheduler.enqueue_request(hop)
    assert crawler_stat(scheduler, "urlcheck/cluster/stale_dropped") == 1


def test_a_pause_hands_back_what_was_not_sent_and_the_end_stops_asking(
    scheduler: ClusterScheduler, server: RedisServer
) -> None:
    runtime = scheduler.runtime
    runtime.frontier.push([("a.test", task(1)), ("b.test", task(2))])
    claim(scheduler)
    assert len(scheduler) == 2
    scheduler.dispatch.follow_control("paused", "running")
    assert len(scheduler) == 0 and len(runtime.book) == 0
    client = connect(server.url)
    ready = client.zrange(f"uc:{{{JOB}}}:ready", 0, -1)
    assert sorted(ready) == [b"a.test", b"b.test"]  # back in the queue, after the host's delay
    assert client.hlen(f"uc:{{{JOB}}}:inflight") == 0
    assert scheduler.has_pending_requests()
    scheduler.dispatch.follow_control("run", "done")
    assert runtime.finished and not scheduler.has_pending_requests()
    assert scheduler.next_request() is None


def test_the_runtime_is_the_crawls(scheduler: ClusterScheduler) -> None:
    runtime = scheduler.runtime
    assert ClusterRuntime.for_crawler(scheduler.crawler) is runtime
    assert runtime.role == "worker" and not runtime.is_coordinator
    info = runtime.info(state="shutdown")
    assert (info.role, info.state, info.in_flight) == ("worker", "shutdown", 0)
    assert runtime.delay_for("a.test") == 0.3
    # a Crawl-delay from the host's robots.txt goes to Redis with each completion
    crawl_runtime(scheduler.crawler).backoff.pace.ask("a.test", 2.0)
    assert (runtime.delay_for("a.test"), runtime.delay_for("b.test")) == (2.0, 0.3)


def test_a_lease_near_its_end_is_not_sent_and_a_lost_one_is_let_go(
    scheduler: ClusterScheduler, server: RedisServer
) -> None:
    runtime = scheduler.runtime
    runtime.frontier.push([("a.test", task(1)), ("b.test", task(2))])
    clock = ManualClock(0.0)
    runtime.book.clock = clock
    claim(scheduler)
    assert len(runtime.book) == 2
    clock.advance(runtime.config.lease_ttl)  # renewals failed all along
    assert scheduler.next_request() is None
    assert crawler_stat(scheduler, "urlcheck/cluster/expired_before_send") == 2
    # A lease reaped by another process while this one stalled comes back as lost.
    clock.now = 0.0
    runtime.frontier.push([("c.test", task(3))])
    claim(scheduler)
    client = connect(server.url)
    client.zadd(f"uc:{{{JOB}}}:leases", {"c.test": 1})
    Frontier(client, JOB, owner="other").claim(0, ttl=30, delay=0)  # reaps it
    scheduler.dispatch.renew()
    assert crawler_stat(scheduler, "urlcheck/cluster/lost") == 1
    assert len(runtime.book) == 0


def test_results_are_committed_once_and_other_items_pass(
    scheduler: ClusterScheduler, server: RedisServer
) -> None:
    pipeline = ClusterResultsPipeline.from_crawler(scheduler.crawler)
    assert pipeline.process_item({"not": "a result"}) == {"not": "a result"}
    line = worker_lost_result(scheduler.requests, task(5), 3)
    with pytest.raises(DropItem):
        pipeline.process_item(line)  # no lease: committed as it is
    with pytest.raises(DropItem):
        pipeline.process_item(line)  # a second time: not committed again
    assert crawler_stat(scheduler, "urlcheck/cluster/committed") == 1
    assert crawler_stat(scheduler, "urlcheck/cluster/duplicates") == 1
    assert [x["row"] for x in collected(server)] == [5]


def test_without_redis_url_the_cluster_parts_are_off() -> None:
    crawler = get_crawler(CheckSpider, {})
    crawler.spider = CheckSpider.from_crawler(crawler, csv="urls.csv")
    with pytest.raises(NotConfigured):
        ClusterScheduler.from_crawler(crawler)
    with pytest.raises(NotConfigured):
        ClusterResultsPipeline.from_crawler(crawler)


def test_a_proxy_probe_is_sent_from_this_process_and_other_strays_are_dropped(
    scheduler: ClusterScheduler, server: RedisServer
) -> None:
    """The pool's health probes are this process's own requests (no row owns them): they were
    dropped as stale, so a distributed crawl's quarantined proxies were never probed."""
    scheduler.runtime.frontier.push([("a.test", task(1))])
    claim(scheduler)
    probe = Request("http://control.test/", meta={m.PROBE_PROXY: "p1"}, dont_filter=True)
    assert scheduler.enqueue_request(probe)
    assert len(scheduler) == 2
    assert scheduler.next_request() is probe  # before the leased row
    assert scheduler.next_request().url == "http://a.test/"
    assert not scheduler.enqueue_request(Request("http://stray.test/"))
    assert crawler_stat(scheduler, "urlcheck/cluster/stale_dropped") == 1
