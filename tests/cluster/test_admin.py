"""`scrapy job` helpers for distributed jobs, and the boundary's error cases."""

from __future__ import annotations

import contextlib
import io
import json
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from scrapy.settings import Settings

from urlcheck.cluster import (
    ClusterError,
    ClusterJob,
    ClusterUnavailableError,
    Frontier,
    JobKeys,
    Task,
    WorkerInfo,
    connect,
)
from urlcheck.cluster.admin import (
    check_coordinator,
    clean,
    cluster_control,
    cluster_of,
    cluster_status,
    format_cluster,
)
from urlcheck.cluster.task import TaskCodecError, encode_entry

if TYPE_CHECKING:
    import redis

    from tests.redisserver import RedisServer


def jobdir(tmp_path: Path, data: object) -> Path:
    (tmp_path / "cluster.json").write_text(json.dumps(data))
    return tmp_path


def test_a_job_directory_says_which_distributed_job_it_ran(
    tmp_path: Path, server: RedisServer
) -> None:
    assert cluster_of(tmp_path, None) is None  # ran in one process
    assert cluster_status(tmp_path, None) is None
    found = cluster_of(jobdir(tmp_path, {"job": "j1", "redis_url": server.url}), None)
    assert found is not None and found.job == "j1"
    for bad, message in [
        ("not json", "cluster.json"),
        ([1], "not a urlcheck cluster file"),
        ({"job": "j1"}, "no Redis URL"),
    ]:
        (tmp_path / "cluster.json").write_text(bad if isinstance(bad, str) else json.dumps(bad))
        with pytest.raises(ClusterError, match=message):
            cluster_of(tmp_path, None)
    # -s REDIS_URL wins over the file (it may carry the password).
    assert cluster_of(tmp_path, server.url) is not None


def test_a_job_directory_never_gets_our_redis_password(tmp_path: Path) -> None:
    # A job directory from elsewhere names "its" Redis: a listener that records what it hears.
    heard: list[bytes] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.9", 0))
        listener.listen()
        listener.settimeout(5)
        port = listener.getsockname()[1]

        def serve() -> None:
            with contextlib.suppress(OSError):
                conn, _ = listener.accept()
                with conn:
                    conn.settimeout(2)
                    while chunk := conn.recv(4096):
                        heard.append(chunk)
                        conn.sendall(b"-ERR not a redis\r\n")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        found = cluster_of(
            jobdir(tmp_path, {"job": "j1", "redis_url": f"redis://127.0.0.9:{port}/0"}),
            None,
            {"password": "s3cret-of-ours", "username": "ours"},
        )
        assert found is not None
        with pytest.raises(ClusterError):
            found.status()
        thread.join(5)
    assert heard  # it was reached, and asked something
    assert b"s3cret-of-ours" not in b"".join(heard)
    assert b"ours" not in b"".join(heard)


def test_status_control_and_clean_of_a_job(
    tmp_path: Path, server: RedisServer, client: redis.Redis
) -> None:
    directory = jobdir(tmp_path, {"job": "j2", "redis_url": server.url})
    text, data = cluster_status(directory, None) or ("", {})
    assert "has no state in Redis" in text and data["workers"] == []
    out = io.StringIO()
    assert not cluster_control(directory, "pause", None, out)
    assert "nothing sent" in out.getvalue()
    job = ClusterJob(client, "j2")
    job.open("box:1:aa", place="box:/jobs/j2")
    frontier = Frontier(client, "j2", owner="box:1:aa")
    frontier.renew([], ttl=30, info=WorkerInfo("box:1:aa", "box", 1, "coordinator", 1.0))
    assert cluster_control(directory, "cancel", None, out)
    status = job.status()
    assert (status.status, status.control) == ("cancelled", "cancelled")
    text = format_cluster("j2", status)
    assert "cluster: job 'j2' cancelled" in text and "coordinator" in text
    assert clean("j2", server.url, out) > 0
    assert client.keys("uc:{j2}:*") == []


def test_preflight_lets_the_crawl_wait_for_an_unreachable_redis() -> None:
    check_coordinator(Settings(), {"csv": "urls.csv", "job": "x"}, None)  # not distributed
    settings = Settings({"REDIS_URL": "redis://127.0.0.1:1/0", "DOWNLOAD_TIMEOUT": 20})
    check_coordinator(
        settings, {"csv": "urls.csv", "job": "x"}, "jobs/x"
    )  # nobody to ask: no refusal


def test_boundary_errors_are_named(client: redis.Redis) -> None:
    with pytest.raises(ClusterError, match="REDIS_URL"):
        connect("nonsense://x")
    client.set("uc:{j}:meta", "not a hash")  # Redis refuses the script's HEXISTS
    with pytest.raises(ClusterError, match=r"^job control: Redis error: WRONGTYPE") as refused:
        ClusterJob(client, "j").control("pause")
    assert not isinstance(refused.value, ClusterUnavailableError)
    assert type(refused.value.__cause__).__name__ == "ResponseError"
    with pytest.raises(KeyError):
        JobKeys("j").key("nope")
    assert JobKeys("j").host_state("a.test") == "uc:{j}:h:a.test"
    with pytest.raises(TaskCodecError, match="numbered from 0"):
        encode_entry(Task(-1, "u", None, None, {}, "u"))
    assert WorkerInfo.from_json("garbage", "w9") == WorkerInfo("w9", "?", 0, "?", 0.0)


def test_odd_stream_entries_and_many_keys(client: redis.Redis) -> None:
    job = ClusterJob(client, "j3")
    job.open("box:1:aa")
    client.xadd("uc:{j3}:results", {"row": "1"})  # not written by urlcheck
    with pytest.raises(ClusterError, match="lacks row or line"):
        job.collect(10)
    job.acknowledge([])  # nothing to forget
    client.mset({f"uc:{{j3}}:q:h{i}": "x" for i in range(600)})
    assert job.clean() >= 600
