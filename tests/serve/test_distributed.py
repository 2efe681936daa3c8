"""A distributed job in the jobs root: its page shows the workers from the cluster status, and
the buttons reach every process through the Redis given to the server, never through the one a
job directory names."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.serve.conftest import Browserish
from urlcheck.cluster import ClusterJob, Frontier, WorkerInfo
from urlcheck.jobs.files import JobMeta, JobState

if TYPE_CHECKING:
    import redis

    from tests.redisserver import RedisServer


def test_workers_are_shown_and_steered_through_the_servers_redis(
    make_client, tmp_path, server: RedisServer, client: redis.Redis
):
    jobdir = tmp_path / "jobs" / "spring"
    jobdir.mkdir(parents=True)
    JobMeta(state=JobState.PROCESSING, total_rows=10).save(jobdir)
    # The file names another Redis (with a password): the server must not use it.
    elsewhere = "redis://:hunter2@10.9.9.9:6379/0"
    (jobdir / "cluster.json").write_text(json.dumps({"job": "spring", "redis_url": elsewhere}))
    job = ClusterJob(client, "spring")
    job.open("box:1:aa", place=f"box:{jobdir}")
    Frontier(client, "spring", owner="box:1:aa").renew(
        [], ttl=30, info=WorkerInfo("box:1:aa", "box", 1, "coordinator", 1.0)
    )
    Frontier(client, "spring", owner="other:7:bb").renew(
        [], ttl=30, info=WorkerInfo("other:7:bb", "other", 7, "worker", 1.0, rows_done=3)
    )

    app = make_client(redis_url=server.url)
    answer = app.get("/api/jobs/spring")
    cluster = answer.json()["cluster"]
    assert cluster["status"] == "running"
    workers = {w["id"]: w for w in cluster["workers"]}
    assert set(workers) == {"box:1:aa", "other:7:bb"}
    assert workers["other:7:bb"]["role"] == "worker" and workers["other:7:bb"]["rows"] == 3
    assert workers["box:1:aa"]["state"] == "running"
    for secret in (server.url, "10.9.9.9", "hunter2", str(jobdir)):
        assert secret not in answer.text
    assert "workers" in app.get("/jobs/spring").text

    page = Browserish(app)
    assert page.post("/api/jobs/spring/pause").status_code == 202
    assert job.status().control == "paused"
    assert page.post("/api/jobs/spring/resume").status_code == 202
    assert job.status().control == "run"

    # Without a Redis of its own, the server shows no cluster and connects to none.
    plain = make_client()
    assert "cluster" not in plain.get("/api/jobs/spring").json()
