"""Distributed-mode benchmark (issue 12): one job, 1, 2 and 4 processes, politeness held
across all of them. Real ``scrapy crawl`` processes, a private redis-server, and the demo site
on 40 loopback hosts answering after 400 ms, in strict mode (429 to an arrival < 250 ms after
the previous one on its host, or while another request to it is being served).

Prints, as ratios from this run:
  1. wall time of 2 and 4 processes against 1 (speedup; target >= 3.0 for 4)
  2. smallest gap between arrivals per host at the server (>= 300 ms), strict-mode 429s (0)
  3. most requests in flight per host at the server (1)
  4. rows missing and duplicated in results.jsonl with one worker kill -9'd mid-run (0 and 0)
  5. Redis round trips per request (<= 3): EVALSHA + pipelines + GETs counted by Redis itself

"Processes" counts the coordinator, which checks URLs too. Wall time is measured at the
servers (first arrival to last departure of the run's requests).

Usage: python bench/cluster.py [--rows-per-host 25] [--hosts 40]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import redis  # noqa: E402

from tests.processes import crawl_argv, start  # noqa: E402
from tests.redisserver import RedisServer  # noqa: E402
from urlcheck.demo.launcher import SiteServer  # noqa: E402
from urlcheck.demo.serverlog import host_stats  # noqa: E402

LATENCY = 0.4


@dataclass
class Run:
    processes: int
    wall: float
    requests: int
    min_gap: float
    rejected: int
    max_in_flight: int
    rows: int
    unique: int
    round_trips: int
    codes: list[int]


def scrapy(*args: str, log: Path) -> subprocess.Popen[bytes]:
    return start(crawl_argv(*args, settings=[f"LOG_FILE={log}"]))


def round_trips(client: redis.Redis) -> int:
    # Commands run inside scripts count too, so only what clients send: scripts, the
    # coordinator's read pipeline (one XREADGROUP each) and its MULTI/EXEC acknowledgements.
    stats = client.info("commandstats")
    counted = ("evalsha", "eval", "exec", "xreadgroup")
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in counted)


def run(
    site: SiteServer, csv: Path, total: int, processes: int, work: Path, *, kill: bool = False
) -> Run:
    tag = f"p{processes}{'k' if kill else ''}"
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        common = ["-a", f"job={tag}", "-s", f"REDIS_URL={server.url}", "-s", "LOG_LEVEL=INFO"]
        jobdir = work / tag
        started = time.time()
        coordinator = scrapy(
            "-a", f"csv={csv}", "-s", f"JOBDIR={jobdir}", *common, log=work / f"{tag}-c.log"
        )
        workers = [scrapy(*common, log=work / f"{tag}-w{i}.log") for i in range(processes - 1)]
        results = jobdir / "results.jsonl"
        if kill:
            victim = workers[0]
            while True:
                done = len(results.read_bytes().splitlines()) if results.exists() else 0
                held = [
                    v for v in client.hvals(f"uc:{{{tag}}}:inflight") if b":%d:" % victim.pid in v
                ]
                if done >= total * 0.3 and len(held) >= 2:
                    os.kill(victim.pid, signal.SIGKILL)
                    print(
                        f"   killed worker {victim.pid} holding {len(held)} leases at {done} rows"
                    )
                    break
                time.sleep(0.05)
        codes = [coordinator.wait(timeout=900)] + [w.wait(timeout=120) for w in workers]
        trips = round_trips(client)
        client.close()
    log = [e for e in site.log() if e["t_arrival"] >= started]
    stats = host_stats(log)
    rows = [json.loads(line)["row"] for line in results.read_text().splitlines()]
    return Run(
        processes,
        max(e["t_departure"] for e in log) - min(e["t_arrival"] for e in log),
        len(log),
        min(s.min_gap for s in stats.values() if s.min_gap is not None),
        sum(s.rejected for s in stats.values()),
        max(s.max_in_flight for s in stats.values()),
        len(rows),
        len(set(rows)),
        trips,
        codes,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows-per-host", type=int, default=25)
    parser.add_argument("--hosts", type=int, default=40)
    opts = parser.parse_args()
    hosts = [f"127.0.0.{10 + i}" for i in range(opts.hosts)]
    work = Path(tempfile.mkdtemp(prefix="urlcheck-cluster-bench-"))
    with SiteServer(hosts, log_path=work / "site.jsonl", min_gap=0.25) as site:
        urls = []
        for i in range(opts.rows_per_host):
            for n, host in enumerate(hosts):
                if i % 5 == 2:  # a cross-host hop to the next host
                    other = hosts[(n + 1) % len(hosts)]
                    target = f"/delay/{LATENCY}%3Fhop%3D{i}"
                    urls.append(site.url(host, f"/301-redirect-to-host?host={other}&path={target}"))
                else:
                    urls.append(site.url(host, f"/delay/{LATENCY}?i={i}"))
        csv = work / "urls.csv"
        csv.write_text("url\n" + "\n".join(urls) + "\n")
        total = len(urls)
        print(f"\nurlcheck cluster benchmark: {total} rows over {len(hosts)} hosts ({work})")
        runs = {}
        for processes in (1, 2, 4):
            runs[processes] = result = run(site, csv, total, processes, work)
            print(
                f"   {processes} process(es): wall {result.wall:6.1f} s, {result.requests} "
                f"requests, exit codes {result.codes}"
            )
        killed = run(site, csv, total, 4, work, kill=True)
        print(
            f"   4 processes, one kill -9'd: wall {killed.wall:6.1f} s, exit codes {killed.codes}"
        )
    every = [*runs.values(), killed]
    base = runs[1].wall
    print()
    print(
        f"1. speedup: 2 processes {base / runs[2].wall:.2f}x, 4 processes "
        f"{base / runs[4].wall:.2f}x (target >= 3.0 for 4)"
    )
    print(
        f"2. smallest gap per host at the server: {min(r.min_gap for r in every) * 1000:.1f} ms "
        f"(target >= 300); strict-mode 429s: {sum(r.rejected for r in every)} (target 0)"
    )
    print(f"3. max in flight per host: {max(r.max_in_flight for r in every)} (target 1)")
    for r in every:
        if (r.rows, r.unique) != (total, total):
            print(f"   run with {r.processes} processes: {r.rows} lines, {r.unique} rows")
    print(
        f"4. with a worker kill -9'd: {total - killed.unique} rows missing, "
        f"{killed.rows - killed.unique} duplicated (target 0 and 0)"
    )
    per_request = [r.round_trips / r.requests for r in every]
    print(
        "5. Redis round trips per request: "
        + ", ".join(f"{r.processes}p {x:.2f}" for r, x in zip(every, per_request, strict=False))
        + " (target <= 3)"
    )


if __name__ == "__main__":
    main()
