"""Web face benchmark (issue 23): a page costs O(page), and watching a job costs little.

1. A 1,000,000-row job against a 1,000-row job in the same run, through the real server
   (``urlcheck serve`` in a subprocess, no crawl started): the median time of the first page
   of results (``GET /api/jobs/ID/results?limit=50``) and of the status
   (``GET /api/jobs/ID``, sampled 0.55 s apart so the server's 0.5 s status cache never
   answers). Bound: big / small <= 1.5 for each. A filtered page is shown too, once the
   server's index is built (the build's time printed beside it).
2. The server's CPU while 10 pages watch a running job (a real crawl of the demo site, 5
   hosts): each page polls ``GET /api/jobs/ID?after=...&gen=...`` every 2 s with its ETag, as
   the job page does. CPU time of the server process (utime + stime) over the window, as a
   share of one core. Bound: < 0.05.

The results files are in the pipeline's format (rows of ``bench/report.py``'s mix).

Usage: python bench/serve.py [--rows N] [--seconds S] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx2 as httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import make_row  # noqa: E402
from urlcheck.demo.launcher import SiteServer  # noqa: E402
from urlcheck.jobs.counts import Counts  # noqa: E402
from urlcheck.jobs.files import JobMeta, JobState  # noqa: E402

MAX_RATIO = 1.5
MAX_CPU_SHARE = 0.05
TEMPLATES = 5000
_ROW = re.compile(rb'^\{"row": [0-9]+, ')


def write_job(jobdir: Path, rows: int) -> None:
    """A finished job of ``rows`` result lines (templates of bench/report.py's mix, renumbered)."""
    jobdir.mkdir(parents=True)
    rng = random.Random(23)
    templates = [make_row(n, rng) for n in range(1, TEMPLATES + 1)]
    lines = [t.to_json_line() for t in templates]
    tally: Counter[int] = Counter()
    results = jobdir / "results.jsonl"
    with results.open("wb") as out:
        for row in range(1, rows + 1):
            i = (row - 1) % TEMPLATES
            tally[i] += 1
            out.write(_ROW.sub(b'{"row": %d, ' % row, lines[i], count=1))
    total = Counts()
    for i, n in tally.items():
        total.add_first_status(templates[i].status, n)
        total.add_status(templates[i].final_status, n)
        total.add_verdict(templates[i].verdict, n)
    JobMeta(
        state=JobState.DONE,
        total_rows=rows,
        done_rows=rows,
        counts=total,
        results_path=str(results),
        results_bytes=results.stat().st_size,
        created_at="2026-12-01T00:00:00.000Z",
        finished_at="2026-12-01T06:00:00.000Z",
    ).save(jobdir)


class Server:
    def __init__(self, root: Path, *settings: str) -> None:
        out = root.parent / f"serve-{time.monotonic_ns()}.out"
        command = [sys.executable, "-m", "urlcheck", "serve", "--port", "0", "--jobs", str(root)]
        for setting in settings:
            command += ["-s", setting]
        self.process = subprocess.Popen(
            command, stdout=out.open("wb"), stderr=out.with_suffix(".err").open("wb")
        )
        while not (match := re.search(r"(http://\S+/)", out.read_text("utf-8"))):
            if self.process.poll() is not None:
                raise SystemExit(out.with_suffix(".err").read_text())
            time.sleep(0.05)
        self.url = match[1].rstrip("/")
        self.client = httpx.Client(base_url=self.url, timeout=120)
        token = re.search(r'csrf-token" content="(\w+)"', self.client.get("/").text)
        assert token is not None
        self.token = token[1]

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(30)


def timed(client: httpx.Client, url: str, **params: str | int) -> float:
    start = time.perf_counter()
    answer = client.get(url, params=params)
    elapsed = time.perf_counter() - start
    assert answer.status_code == 200, answer.text[:300]
    return elapsed


def pages_and_status(root: Path, rows: int) -> dict[str, float]:
    print(f"writing a {rows:,}-row job and a 1,000-row job ...", flush=True)
    write_job(root / "big", rows)
    write_job(root / "small", 1000)
    size = (root / "big" / "results.jsonl").stat().st_size
    print(f"  big results.jsonl: {size / 2**20:,.0f} MiB", flush=True)
    server = Server(root, "URLCHECK_SERVE_MAX_RUNNING=0")
    figures: dict[str, float] = {}
    try:
        for job in ("big", "small"):  # warm the page cache and the server
            timed(server.client, f"/api/jobs/{job}/results", limit=50)
            timed(server.client, f"/api/jobs/{job}")
        samples: dict[str, list[float]] = {k: [] for k in ("page big", "page small")}
        for _ in range(60):
            for job in ("big", "small"):
                samples[f"page {job}"].append(
                    timed(server.client, f"/api/jobs/{job}/results", limit=50)
                )
        status: dict[str, list[float]] = {"big": [], "small": []}
        for _ in range(25):
            for job in ("big", "small"):
                time.sleep(0.55)  # past the status cache
                status[job].append(timed(server.client, f"/api/jobs/{job}"))
        build = timed(server.client, "/api/jobs/big/results", limit=50, verdict="fail")
        timed(server.client, "/api/jobs/small/results", limit=50, verdict="fail")
        filtered = {
            job: statistics.median(
                timed(server.client, f"/api/jobs/{job}/results", limit=50, verdict="fail")
                for _ in range(40)
            )
            for job in ("big", "small")
        }
    finally:
        server.stop()
    for name, values in samples.items():
        figures[name] = statistics.median(values)
    figures["status big"] = statistics.median(status["big"])
    figures["status small"] = statistics.median(status["small"])
    figures["filtered big"], figures["filtered small"] = filtered["big"], filtered["small"]
    figures["index build s"] = build
    return figures


def pollers_cpu(root: Path, seconds: float, pages: int = 10) -> float:
    hosts = tuple(f"127.0.0.{i}" for i in range(2, 7))
    with SiteServer(hosts, log_path=root / "site.jsonl") as site:
        urls = [site.url(hosts[n % len(hosts)], f"/ok?n={n}") for n in range(5000)]
        server = Server(root / "watched")
        try:
            answer = server.client.post(
                "/api/upload",
                files={"file": ("urls.csv", ("url\n" + "\n".join(urls) + "\n").encode())},
                headers={"X-CSRF-Token": server.token, "Origin": server.url},
            )
            job = answer.json()["id"]
            while server.client.get(f"/api/jobs/{job}").json()["done_rows"] < 20:
                time.sleep(0.5)
            stop = threading.Event()

            def page() -> None:
                client = httpx.Client(base_url=server.url, timeout=30)
                after, gen, tag = 0, None, None
                while not stop.is_set():
                    params = {"after": after, "limit": 50, **({"gen": gen} if gen else {})}
                    headers: dict[str, str] = {"If-None-Match": tag} if tag else {}
                    answer = client.get(f"/api/jobs/{job}", params=params, headers=headers)
                    if answer.status_code == 200:
                        body = answer.json()
                        after, gen, tag = body["next"], body["generation"], answer.headers["etag"]
                    stop.wait(2.0)
                client.close()

            threads = [threading.Thread(target=page) for _ in range(pages)]
            for thread in threads:
                thread.start()
                time.sleep(2.0 / pages)  # spread over the 2 s period
            cpu0, wall0 = server.cpu_seconds(), time.monotonic()
            time.sleep(seconds)
            share = (server.cpu_seconds() - cpu0) / (time.monotonic() - wall0)
            done = server.client.get(f"/api/jobs/{job}").json()["done_rows"]
            stop.set()
            for thread in threads:
                thread.join()
            print(f"  the watched job had {done:,} rows done", flush=True)
            server.client.post(
                f"/api/jobs/{job}/cancel",
                headers={"X-CSRF-Token": server.token, "Origin": server.url},
            )
            time.sleep(2)
        finally:
            server.stop()
    return share


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        figures = pages_and_status(work / "jobs", args.rows)
        print(f"10 pages watching a running job for {args.seconds:g} s ...", flush=True)
        figures["cpu share"] = pollers_cpu(work, args.seconds)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    ratios = {
        "first page": figures["page big"] / figures["page small"],
        "status": figures["status big"] / figures["status small"],
        "filtered page": figures["filtered big"] / figures["filtered small"],
    }
    for what in ("page", "status", "filtered"):
        print(
            f"{what:>9}: {args.rows:,} rows {figures[f'{what} big'] * 1000:.2f} ms, "
            f"1,000 rows {figures[f'{what} small'] * 1000:.2f} ms"
        )
    print(f"index of the big job built in {figures['index build s']:.1f} s (its first filter)")
    for name, ratio in ratios.items():
        bound = f" (bound {MAX_RATIO})" if name != "filtered page" else ""
        print(f"ratio {name}: {ratio:.2f}{bound}")
    share = figures["cpu share"]
    print(f"server CPU with 10 pages polling: {share:.4f} of a core (bound {MAX_CPU_SHARE})")
    print(
        json.dumps(
            {
                **{k: round(v, 5) for k, v in figures.items()},
                **{f"ratio {k}": round(v, 3) for k, v in ratios.items()},
            }
        )
    )
    ok = (
        ratios["first page"] <= MAX_RATIO
        and ratios["status"] <= MAX_RATIO
        and figures["cpu share"] < MAX_CPU_SHARE
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
