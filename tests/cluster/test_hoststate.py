"""The host circuit across a distributed job, end to end: a coordinator and two workers (real
``scrapy crawl`` processes), a private redis-server and the demo site. A host that answers 503
to everything, and one that refuses connections, cost the cluster what they cost one process
(politeness/test_hostile.py: 2 rows run their tries, 2 x 4 requests for the 503 host), not that per
process; every other row of theirs gets its line from whichever process leases it, with the
evidence, and no request."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.crawls import coordinator, crawl
from tests.redisserver import RedisServer
from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl

UP, DOWN_503 = "127.0.0.2", "127.0.0.3"
REFUSED = "127.0.0.4"  # the site does not listen there: connections are refused
ROWS = 12  # per host given up on
# One process's figure: URLCHECK_HOST_DOWN_AFTER (2) rows run all their tries.
TRIES_503 = 4  # URLCHECK_BACKOFF_RETRIES (3) + 1
SINGLE_JOB_503_REQUESTS = 2 * TRIES_503


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteServer]:
    log = tmp_path_factory.mktemp("hoststate-site") / "requests.jsonl"
    with SiteServer((UP, DOWN_503), log_path=log) as server:
        yield server


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer() as srv:
        yield srv


def stat(log: Path, name: str) -> int:
    found = re.search(rf"'{re.escape(name)}': (\d+)", log.read_text())
    return int(found[1]) if found else 0


def test_a_host_down_is_given_up_on_once_for_the_whole_cluster(
    site: SiteServer, server: RedisServer, tmp_path: Path
) -> None:
    rows = ["url"]
    for i in range(ROWS):
        rows.append(site.url(DOWN_503, f"/always/503?retry_after=0&id=circ&i={i}"))
        rows.append(site.url(REFUSED, f"/ok?id=circ&i={i}"))
        rows.append(site.url(UP, f"/ok?id=circ&i={i}"))
    csv = tmp_path / "urls.csv"
    csv.write_text("\n".join(rows) + "\n")
    # Every row of a host queued at once, so any process may lease the next one.
    settings = ("URLCHECK_BACKOFF_BASE=0.1", f"URLCHECK_ROWS_AHEAD_PER_HOST={ROWS}")
    since = time.time()
    workers = [
        crawl(tmp_path, f"worker{i}", "circ", server.url, settings=settings) for i in range(2)
    ]
    coord = coordinator(tmp_path, "circ", server.url, csv, settings=settings)
    assert coord.wait(timeout=180) == 0
    assert [w.wait(timeout=60) for w in workers] == [0, 0]

    lines = [json.loads(x) for x in (tmp_path / "job" / "results.jsonl").read_text().splitlines()]
    assert sorted(Counter(x["row"] for x in lines).items()) == [
        (row, 1) for row in range(1, 3 * ROWS + 1)
    ]  # every row exactly one line
    by_host: dict[str, list[dict[str, object]]] = {UP: [], DOWN_503: [], REFUSED: []}
    for line in lines:
        by_host[str(line["url"]).split("/")[2].split(":")[0]].append(line)

    # The 503 host: two rows ran the ladder, across the cluster, and no more requests came.
    requests = [e for e in site.log() if e["t_arrival"] >= since and e["host"] == DOWN_503]
    assert len(requests) <= SINGLE_JOB_503_REQUESTS
    outcomes = Counter(x["error"] or x["status"] for x in by_host[DOWN_503])
    assert outcomes == {503: 2, "host_unavailable": ROWS - 2}
    messages = {x["error_message"] for x in by_host[DOWN_503] if x["error"] == "host_unavailable"}
    assert messages == {
        f"host {DOWN_503} unavailable: 2 rows in a row answered 503 on all 4 tries, "
        "last Retry-After 0 s; not requested"
    }

    # The refusing host: two rows' worth of connection errors for the whole job.
    outcomes = Counter(x["error"] for x in by_host[REFUSED])
    assert outcomes == {"connect": 2, "host_unavailable": ROWS - 2}
    messages = {x["error_message"] for x in by_host[REFUSED] if x["error"] == "host_unavailable"}
    assert messages == {
        f"host {REFUSED} unavailable: 2 rows in a row failed (connect) on all 3 tries; "
        "not requested"
    }
    assert all(x["status"] == 200 for x in by_host[UP])

    # Each host was given up on once for the job (by whichever process ran its second ladder);
    # the coordinator counts every row's error as it writes results.jsonl.
    logs = [tmp_path / f"{name}.log" for name in ("coordinator", "worker0", "worker1")]
    assert sum(stat(log, "urlcheck/hosts/unavailable") for log in logs) == 2
    assert stat(logs[0], "urlcheck/error/host_unavailable") == 2 * (ROWS - 2)

    # The coordinator's hosts.json is the job's, whichever process met the host.
    report = json.loads((tmp_path / "job" / "hosts.json").read_text())["hosts"]
    assert {h: e["unavailable"]["last_status"] for h, e in report.items()} == {
        DOWN_503: 503,
        REFUSED: None,
    }
    assert report[REFUSED]["unavailable"]["last_error"] == "connect"
    assert report[DOWN_503]["backoff_seconds"] > 0 and report[REFUSED]["backoff_seconds"] == 0
