"""Politeness benchmark (issue 3). Real crawls of the project (``scrapy crawl check`` in a
subprocess) against local hosts that log every request's arrival and departure.

Prints one line per figure, each a ratio against a bound or a baseline from the same run:
  1. wall time / politeness bound, 5 hosts x 100 URLs, grouped by host and shuffled
  2. the same with a quarter of the URLs one-hop redirects on the same host
  3. healthy hosts' finishing time with a 429-answering host / without it
  4. max requests in flight per host, smallest gap between request starts per host
  5. peak RSS in the first 60 s of a 1,000,000-row crawl over 50 hosts against 100 MB, and its
     request rate against the allowed rate (target >= 0.98); where the memory goes at the
     traced peak of a second run under tracemalloc, by component; then URLs/s with politeness
     relaxed by settings
  6. a host answering 503 to everything (60 rows, URLCHECK_BACKOFF_BASE=1): time until all its
     rows have their lines / two back-off ladders; healthy hosts' finishing time with it / without
  7. 100 rows on a host that 429s arrivals closer than 1 s apart: 429s received and wall time
     with the learned pace, against the same crawl with URLCHECK_HOST_PACE_ENABLED=False
  8. slow hosts at the design's pace (the answer, then the 300 ms gap): a healthy host that
     answers in 1 s, time per URL / (its latency + 300 ms); and a host that answers slower the
     faster it is asked (/busy), whose latency AutoThrottle's delay follows

Wall time is measured on the servers' side (first arrival to last arrival of the run's
requests), so interpreter start-up is not counted against the crawl.

Usage: python bench/politeness.py [--quick] [--skip-million] [--only-hostile] [--only-slow]
                                  [--pace-base S]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._proc import RssSampler  # noqa: E402
from tests.processes import crawl_argv, start  # noqa: E402
from urlcheck.clock import parse_utc_iso  # noqa: E402
from urlcheck.demo.launcher import SiteServer  # noqa: E402
from urlcheck.demo.serverlog import host_stats  # noqa: E402

DELAY = 0.3
MILLION_RSS_BOUND = 100.0  # MB (MiB, as VmRSS is read): issue 27
MILLION_RATE_TARGET = 0.98
HEALTHY = [f"127.0.0.{i}" for i in range(2, 7)]
FAULTY = "127.0.0.7"
MANY = [f"127.0.0.{i}" for i in range(10, 60)]


def crawl(
    csv: Path,
    out: Path,
    *settings: str,
    timeout: float = 900,
    traced: tuple[Path, float] | None = None,
) -> tuple[float, int]:
    """Run ``scrapy crawl check``; returns (peak RSS MiB within the first 60 s, exit code).
    ``traced``: (breakdown file, seconds) runs it under bench/_traced.py instead."""
    # A job of its own beside its results (the default job would be in the checkout).
    jobdir = out.with_name(f"{out.stem}-job")
    argv = crawl_argv(
        "-a",
        f"csv={csv}",
        "-a",
        f"out={out}",
        settings=["LOG_LEVEL=WARNING", f"JOBDIR={jobdir}", *settings],
    )
    if traced is not None:  # python -m scrapy ... -> python _traced.py OUT SECONDS scrapy ...
        tool = [str(REPO / "bench" / "_traced.py"), str(traced[0]), str(traced[1])]
        argv = [argv[0], *tool, *argv[2:]]
    process = start(argv, stdout=None, stderr=None)
    with RssSampler(process, interval=0.2) as sampler:
        code = process.wait(timeout)
    return sampler.peak(within=60), code


def write_csv(path: Path, urls: list[str]) -> Path:
    path.write_text("url\n" + "\n".join(urls) + "\n")
    return path


def run_log(site: SiteServer, tag: str) -> list[dict[str, Any]]:
    return [e for e in site.log() if f"run={tag}" in e["path"]]


def span(log: list[dict[str, Any]], hosts: list[str] | None = None) -> float:
    arrivals = [e["t_arrival"] for e in log if hosts is None or e["host"] in hosts]
    return max(arrivals) - min(e["t_arrival"] for e in log)


def bound(log: list[dict[str, Any]], cap_in_flight: int = 5) -> float:
    per_host = {h: s.count for h, s in host_stats(log).items()}
    return max((n - 1) * DELAY for n in per_host.values())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="20 URLs per host instead of 100")
    parser.add_argument("--skip-million", action="store_true")
    parser.add_argument("--only-million", action="store_true")
    parser.add_argument("--only-hostile", action="store_true", help="figures 6 and 7 only")
    parser.add_argument("--only-slow", action="store_true", help="figure 8 only")
    parser.add_argument(
        "--pace-base",
        type=float,
        default=30.0,
        help="URLCHECK_BACKOFF_BASE for figure 7 (30 = the default; today's behaviour then takes "
        "about 100 x 30 s, so the baseline run is cut at --baseline-rows rows)",
    )
    parser.add_argument("--baseline-rows", type=int, default=10)
    opts = parser.parse_args()
    per_host = 20 if opts.quick else 100
    tmp = Path(tempfile.mkdtemp(prefix="urlcheck-bench-"))
    figures: list[str] = []
    all_logs: list[dict[str, Any]] = []
    if opts.only_million:
        print("\n".join(["", "urlcheck politeness benchmark", *million(tmp)]))
        return
    if opts.only_slow:
        print("\n".join(["", "urlcheck politeness benchmark", *slow_hosts(tmp, per_host)]))
        return
    if opts.only_hostile:
        lines = [*down_host(tmp, per_host), *learned_pace(tmp, opts.pace_base, opts.baseline_rows)]
        print("\n".join(["", "urlcheck politeness benchmark", *lines]))
        return

    with SiteServer([*HEALTHY, FAULTY], log_path=tmp / "site.jsonl") as site:

        def urls(tag: str, redirects: bool = False) -> list[str]:
            out = []
            for host in HEALTHY:
                for i in range(per_host):
                    if redirects and i % 4 == 0:
                        path = f"/redirect/301?to=/ok%3Frun%3D{tag}%26i%3D{i}%26hop%3D1&run={tag}"
                    else:
                        path = f"/ok?run={tag}&i={i}"
                    out.append(site.url(host, path))
            return out

        # 1. grouped and shuffled
        results = {}
        for tag, shuffle in (("grouped", False), ("shuffled", True)):
            rows = urls(tag)
            if shuffle:
                random.Random(7).shuffle(rows)
            crawl(write_csv(tmp / f"{tag}.csv", rows), tmp / f"{tag}.jsonl")
            log = run_log(site, tag)
            all_logs += log
            results[tag] = log
            figures.append(
                f"1. {tag:<9} {len(rows)} URLs: wall {span(log):6.2f} s / bound "
                f"{bound(log):6.2f} s = {span(log) / bound(log):.3f} (target <= 1.05)"
            )

        # 2. a quarter one-hop redirects
        rows = urls("redir", redirects=True)
        crawl(write_csv(tmp / "redir.csv", rows), tmp / "redir.jsonl")
        log = run_log(site, "redir")
        all_logs += log
        figures.append(
            f"2. redirects {len(log)} requests: wall {span(log):6.2f} s / bound "
            f"{bound(log):6.2f} s = {span(log) / bound(log):.3f} (target <= 1.05)"
        )

        # 3. one host answering 429 (Retry-After: 2) to its first requests
        rows = urls("faulty") + [
            site.url(FAULTY, f"/ratelimit/2?retry_after=2&run=faulty&i={i}")
            for i in range(per_host // 5)
        ]
        crawl(write_csv(tmp / "faulty.csv", rows), tmp / "faulty.jsonl", "URLCHECK_BACKOFF_BASE=1")
        log = run_log(site, "faulty")
        all_logs += log
        healthy_with = span(log, HEALTHY)
        healthy_without = span(results["grouped"], HEALTHY)
        rejected = sum(1 for e in log if e["host"] == FAULTY and e["status"] == 429)
        figures.append(
            f"3. healthy hosts finish {healthy_with:6.2f} s with a 429 host ({rejected} 429s) / "
            f"{healthy_without:6.2f} s without = {healthy_with / healthy_without:.3f} "
            "(target <= 1.05)"
        )

        # 4. in flight and gaps, over every run above
        stats = host_stats(all_logs)
        in_flight = max(s.max_in_flight for s in stats.values())
        gaps = [s.min_gap for s in stats.values() if s.min_gap is not None]
        figures.append(
            f"4. max in flight per host {in_flight} (must be 1); smallest gap between "
            f"request starts at the server {min(gaps) * 1000:.1f} ms = "
            f"{min(gaps) / 0.290:.3f} of 290 ms (must be >= 1)"
        )

    figures += down_host(tmp, per_host)
    figures += learned_pace(tmp, opts.pace_base, opts.baseline_rows)
    figures += slow_hosts(tmp, per_host)
    if not opts.skip_million:
        figures += million(tmp)
    print("\n".join(["", "urlcheck politeness benchmark", *figures]))


def gaps(log: list[dict[str, Any]]) -> list[float]:
    """Seconds between consecutive arrivals (one host's log)."""
    arrivals = sorted(e["t_arrival"] for e in log)
    return [b - a for a, b in itertools.pairwise(arrivals)]


def slow_hosts(tmp: Path, per_host: int) -> list[str]:
    """Figure 8: a slow host costs its latency plus the gap, not twice its latency."""
    slow, busy = HEALTHY[0], HEALTHY[1]
    with SiteServer([slow, busy], log_path=tmp / "slow-site.jsonl") as site:
        rows = [site.url(slow, f"/delay/1?run=slow&i={i}") for i in range(per_host)]
        crawl(write_csv(tmp / "slow.csv", rows), tmp / "slow.jsonl")
        log = run_log(site, "slow")
        latency = statistics.mean(e["t_departure"] - e["t_arrival"] for e in log)
        per_url = statistics.mean(gaps(log))
        lines = [
            f"8. a host answering in {latency:.3f} s, {len(log)} URLs: {per_url:.3f} s per URL / "
            f"(latency + {DELAY} s) = {per_url / (latency + DELAY):.3f} (target <= 1.05)"
        ]
        query = "base=0.2&per=0.5&window=2"
        rows = [site.url(busy, f"/busy?{query}&run=busy&i={i}") for i in range(per_host)]
        crawl_log = tmp / "busy.log"
        crawl(
            write_csv(tmp / "busy.csv", rows),
            tmp / "busy.jsonl",
            "LOG_LEVEL=INFO",
            "AUTOTHROTTLE_DEBUG=True",
            f"LOG_FILE={crawl_log}",
        )
        log = sorted(run_log(site, "busy"), key=lambda e: e["t_arrival"])
        latencies = [e["t_departure"] - e["t_arrival"] for e in log]
        # AutoThrottle's own debug line per answer: "slot: <host> | ... delay: <ms> ms ..."
        delays = [
            float(m.group(1)) / 1000
            for m in re.finditer(
                r"slot: \S+ \| conc:\s*\d+ \| delay:\s*(\d+) ms", crawl_log.read_text()
            )
        ]
        late = latencies[len(latencies) // 2 :]
        late_gap = statistics.mean(gaps(log[len(log) // 2 :]))
        first_delay = delays[0] if delays else 0.0
        late_delay = statistics.mean(delays[len(delays) // 2 :]) if delays else 0.0
        lines.append(
            f"8. a host slower the faster it is asked: latency {latencies[0]:.2f} s at first, "
            f"{statistics.mean(late):.2f} s under our pace; AutoThrottle's delay "
            f"{first_delay:.2f} -> {late_delay:.2f} s; {late_gap:.3f} s per URL / "
            f"(latency + {DELAY} s) = {late_gap / (statistics.mean(late) + DELAY):.3f} "
            "(the pace follows the latency: about 1)"
        )
    return lines


def million(tmp: Path) -> list[str]:
    lines = []
    with SiteServer(MANY, log_path=tmp / "many.jsonl") as site:
        csv = tmp / "million.csv"
        with csv.open("w") as f:
            f.write("url\n")
            for host in MANY:  # given host after host
                for i in range(20_000):
                    f.write(f"http://{host}:{site.port}/ok?run=million&i={i}\n")
        peak, _ = crawl(csv, tmp / "million.jsonl", "CLOSESPIDER_TIMEOUT=60")
        log = run_log(site, "million")
        # The rate over the crawl's steady state: from the first to the last request.
        rate = len(log) / span(log)
        allowed = min(
            len(MANY) / DELAY,
            5 / max(sum(e["t_departure"] - e["t_arrival"] for e in log) / len(log), 1e-6),
        )
        lines.append(
            f"5. 1,000,000 rows over 50 hosts, first 60 s: peak RSS {peak:6.1f} MB / "
            f"{MILLION_RSS_BOUND:.0f} MB = {peak / MILLION_RSS_BOUND:.3f} (target <= 1); rate "
            f"{rate:6.1f} req/s / allowed {allowed:6.1f} = {rate / allowed:.3f} "
            f"(target >= {MILLION_RATE_TARGET})"
        )
        lines += memory_breakdown(tmp, csv, peak)
        relaxed_csv = tmp / "relaxed.csv"
        with relaxed_csv.open("w") as f:
            f.write("url\n")
            for i in range(6000):
                f.write(f"http://{MANY[i % len(MANY)]}:{site.port}/ok?run=relaxed&i={i}\n")
        start = time.monotonic()
        crawl(
            relaxed_csv,
            tmp / "relaxed.jsonl",
            "DOWNLOAD_DELAY=0",
            "CONCURRENT_REQUESTS=64",
            "CONCURRENT_REQUESTS_PER_DOMAIN=8",
            "AUTOTHROTTLE_ENABLED=False",
        )
        wall = time.monotonic() - start
        relaxed = run_log(site, "relaxed")
        lines.append(
            f"5b. relaxed politeness (delay 0, 64 in flight, 8 per host): "
            f"{len(relaxed) / span(relaxed):6.1f} URLs/s at the server, "
            f"{6000 / wall:6.1f} URLs/s including start-up ({wall:.1f} s for 6000)"
        )
    return lines


def memory_breakdown(tmp: Path, csv: Path, peak_rss: float) -> list[str]:
    """Figure 5c: the same crawl under tracemalloc from the spider's start (tracing slows
    indexing tenfold) until 15 s after the CSV is indexed: its Python memory by component at
    the traced peak and then; what was resident before the spider started is the interpreter,
    modules and libraries."""
    out = tmp / "million-traced.json"
    traced_rss, _ = crawl(
        csv, tmp / "million-traced.jsonl", "CLOSESPIDER_TIMEOUT=300", traced=(out, 240.0)
    )
    if not out.exists():
        return ["5c. the traced run wrote no breakdown: FAILED"]
    data = json.loads(out.read_text())
    peak_parts, end_parts = data["at_peak"], data["at_end"]
    names = sorted(set(peak_parts) | set(end_parts), key=lambda n: -peak_parts.get(n, 0))
    total = sum(peak_parts.values())
    mib = 1024 * 1024
    before = data["rss_before"] / mib
    lines = [
        f"5c. where the memory goes (tracemalloc from the spider's start; traced run's peak RSS "
        f"{traced_rss:.1f} MB, tracing included), at the traced peak / 15 s after indexing, "
        f"against the {MILLION_RSS_BOUND:.0f} MB bound:",
        f"    {'before the first row (interpreter, modules, libraries: RSS)':<62} "
        f"{before:6.2f} MB = {before / MILLION_RSS_BOUND:.3f}",
    ]
    for name in names:
        at_peak, at_end = peak_parts.get(name, 0) / mib, end_parts.get(name, 0) / mib
        if max(at_peak, at_end) >= 0.01:
            lines.append(
                f"    {name:<62} {at_peak:6.2f} MB = {at_peak / MILLION_RSS_BOUND:.3f} / "
                f"{at_end:6.2f} MB = {at_end / MILLION_RSS_BOUND:.3f}"
            )
    rest = peak_rss - before - total / mib
    lines.append(
        f"    {'the rest of the untraced peak (allocator, C libraries, sockets)':<62} "
        f"{rest:6.2f} MB = {rest / MILLION_RSS_BOUND:.3f}"
    )
    return lines


def down_host(tmp: Path, per_host: int) -> list[str]:
    """Figure 6: the per-host circuit."""
    with SiteServer([*HEALTHY, FAULTY], log_path=tmp / "down.jsonl") as site:

        def healthy(tag: str) -> list[str]:
            return [site.url(h, f"/ok?run={tag}&i={i}") for h in HEALTHY for i in range(per_host)]

        crawl(write_csv(tmp / "down-base.csv", healthy("calm")), tmp / "down-base.jsonl")
        baseline = span(run_log(site, "calm"))
        down = [site.url(FAULTY, f"/always/503?run=down&i={i}") for i in range(60)]
        out = tmp / "down.jsonl.out"
        crawl(write_csv(tmp / "down.csv", down + healthy("down")), out, "URLCHECK_BACKOFF_BASE=1")
        log = run_log(site, "down")
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        start = min(e["t_arrival"] for e in log)
        done = max(parse_utc_iso(r["checked_at"]) for r in rows if f"{FAULTY}:" in r["url"])
        ladders = 2 * (1 + 2 + 4)
        skipped = sum(1 for r in rows if r["error"] == "host_unavailable")
        sent = sum(1 for e in log if e["host"] == FAULTY)
        with_down = span(log, HEALTHY)
    return [
        f"6. 60 rows on a host down for everyone: all lines after {done - start:6.2f} s / two "
        f"ladders {ladders} s = {(done - start) / ladders:.3f} (target <= 1.05; {sent} requests, "
        f"{skipped} rows host_unavailable); healthy hosts {with_down:6.2f} s / {baseline:6.2f} s "
        f"without = {with_down / baseline:.3f} (target <= 1.05)"
    ]


def learned_pace(tmp: Path, base: float, baseline_rows: int) -> list[str]:
    """Figure 7: the learned pace, against today's behaviour (the pace off)."""
    lines = []
    with SiteServer([FAULTY], log_path=tmp / "pace.jsonl", min_gap=1.0) as site:
        runs = {}
        for tag, rows, settings in (
            ("learned", 100, ()),
            ("today", baseline_rows, ("URLCHECK_HOST_PACE_ENABLED=False",)),
        ):
            urls = [site.url(FAULTY, f"/ok?run={tag}&i={i}") for i in range(rows)]
            crawl(
                write_csv(tmp / f"pace-{tag}.csv", urls),
                tmp / f"pace-{tag}.jsonl",
                f"URLCHECK_BACKOFF_BASE={base}",
                *settings,
            )
            log = run_log(site, tag)
            rejected = sum(1 for e in log if e["rejected"])
            # Each 429 paused the host for the back-off base (its row's first strike).
            runs[tag] = (rows, rejected, span(log), rejected * base)
    rows, rejected, wall, pauses = runs["learned"]
    bound = 100 + pauses
    lines.append(
        f"7. 100 rows on a host that 429s arrivals < 1 s apart (back-off base {base:g} s): "
        f"{rejected} 429s (target <= 3), wall {wall:6.1f} s / 1.2 x (100 s + {pauses:g} s of "
        f"pauses) = {wall / (1.2 * bound):.3f} (target <= 1)"
    )
    rows, rejected, wall, pauses = runs["today"]
    lines.append(
        f"7b. today's behaviour (pace off), {rows} rows: {rejected} 429s, wall {wall:6.1f} s "
        f"({wall / rows:.2f} s a row against {runs['learned'][2] / 100:.2f} s learned)"
    )
    return lines


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
