"""A job on a real Redis Cluster (three redis-servers on loopback): every key a script is given,
the hosts' queues and states included, is in the job's one slot (a script given keys of two
slots is refused: CROSSSLOT), and so is every key the scripts make. Given another node, the job's
stores turn to the one that serves the slot, as the proxy store does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.redisserver import RedisClusterServers
from urlcheck.cluster import ClusterJob, ClusterUnavailableError, Frontier, JobKeys, Task, connect
from urlcheck.cluster.collector import ResultCollector
from urlcheck.cluster.frontier import PaceEvent, Then
from urlcheck.cluster.workers import WorkerInfo
from urlcheck.politeness.circuit import Strike, Unavailable

JOB = "sharded"


def task(row: int, host: str, path: str = "/") -> Task:
    url = f"http://{host}{path}"
    return Task(row, url, url, None, {}, url)


def test_every_key_of_a_job_is_in_its_slot_on_a_redis_cluster(tmp_path: Path) -> None:
    keys = JobKeys(JOB)
    with RedisClusterServers(tmp_path) as cluster:
        owner = cluster.owner(keys.key("meta"))
        given = next(node for node in cluster.nodes if node is not owner)
        client = connect(given.url)
        job, frontier = ClusterJob(client, JOB), Frontier(client, JOB, owner="w1")
        for first in (
            lambda: job.open("coordinator@test"),
            lambda: frontier.claim(1, ttl=30, delay=0),
        ):
            with pytest.raises(ClusterUnavailableError, match="now asking that node"):
                first()  # MOVED: each store turns to the slot's node, and is asked again
        assert job.open("coordinator@test") is True
        hosts = ["a.test", "b.test", "c.test"]
        assert frontier.push([(host, task(row, host)) for row, host in enumerate(hosts)]) == 3
        leases = {lease.host: lease for lease in frontier.claim(3, ttl=30, delay=0).leases}
        assert set(leases) == set(hosts)
        # a hop to another host: the keys of both hosts are given to the script
        hop = frontier.complete_hop(leases["a.test"], "b.test", task(0, "b.test", "/hop"), delay=0)
        assert hop.owned
        frontier.complete_result(leases["b.test"], '{"row":1}', delay=0, pace=PaceEvent("fast"))
        frontier.complete_retry(
            leases["c.test"], leases["c.test"].task, delay=0, backoff=60, strikes=1,
            then=Then(2, 30),
        )  # fmt: skip
        given_up = Unavailable("c.test", 1, Strike(503), 0.0)
        new, _ = frontier.give_up("c.test", '{"rows":1,"status":503,"error":null,'
                                  '"retry_after":null,"tries":3}')  # fmt: skip
        assert new and given_up.host in frontier.hosts()
        frontier.renew([], ttl=30, info=WorkerInfo("w1", "box", 1, "worker", 1.0))
        lines: list[int] = []
        ResultCollector(job, set(), lambda row, line: lines.append(row), lambda: None).step()
        assert lines == [1]
        assert job.status().fed == 3
        job.finish("done")

        node = owner.client()
        slot = node.execute_command("CLUSTER", "KEYSLOT", keys.key("meta"))
        made = {key.decode() for key in node.scan_iter(match=f"{keys.prefix}*")}
        assert {keys.queue("b.test"), keys.host_state("a.test"), keys.key("down")} <= made
        assert node.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == len(made)
        assert node.dbsize() == len(made)  # nothing of the job elsewhere on the node
        for other in cluster.nodes:
            if other is not owner:
                assert other.client().dbsize() == 0
        node.close()
        job.close()
