"""Proxy pool benchmark (issue 6). Two real crawls of the project (``scrapy crawl check`` in a
subprocess) through ten local forward proxies, each with its own egress address, of which three
are blocked by one site with captcha and block pages:

  (a) the proxy pool (URLCHECK_PROXY_STRATEGY=weighted, otherwise its defaults);
  (b) the baseline: a uniformly random proxy per request (bench/_random_proxy.py), with the same
      detection and the same retries through another proxy.

Both crawls use the same URLs (in the same shuffled order, told apart by a ``run=`` argument),
the same politeness and URLCHECK_PROXY_STICKY=none. Printed, as ratios pool / random from this
run: the share of rows that end with ``error: "blocked"``, the requests wasted on blocked
proxies (the blocking site's captcha and block answers, counted in its own log by client
address), and the requests per row; then the ten proxies' final states in the pool run's
proxies.json.

Usage: python bench/proxies.py [--rows N] [--seed N] [--keep]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.processes import crawl_argv, project_env  # noqa: E402
from tests.servers.proxylauncher import ProxyServer, running_proxies  # noqa: E402
from urlcheck import settings as project_settings  # noqa: E402
from urlcheck.demo.launcher import SiteServer  # noqa: E402

DELAY = 0.05  # both crawls; quick, and the same politeness for both
BLOCKING = "127.0.0.2"  # blocks BLOCKED with captcha (and block) pages
OTHERS = ("127.0.0.3", "127.0.0.4", "127.0.0.5")
PROXY_HOSTS = [f"127.0.0.{i}" for i in range(20, 30)]
BLOCKED = PROXY_HOSTS[:3]
BLOCKING_SHARE = 0.4  # of the rows, on the blocking site
AKAMAI_EVERY = 3  # one blocking-site row in three answers Akamai's block page, the others reCAPTCHA
RANDOM_MIDDLEWARE = "bench._random_proxy.RandomProxyMiddleware"
POOL_MIDDLEWARE = "urlcheck.middlewares.proxy.ProxyPoolMiddleware"
RETRIES = 2  # URLCHECK_PROXY_BLOCK_RETRIES's default, left as it is for both crawls


def plan(site: SiteServer, rows: int, seed: int) -> list[str]:
    """Paths with a ``{run}`` placeholder, shuffled with `seed`."""
    blocked = ",".join(BLOCKED)
    on_blocking = round(rows * BLOCKING_SHARE)
    urls = []
    for i in range(on_blocking):
        kind = "akamai" if i % AKAMAI_EVERY == 0 else "recaptcha"
        urls.append(site.url(BLOCKING, f"/by-client?blocked={blocked}&as={kind}&run={{run}}&i={i}"))
    for i in range(rows - on_blocking):
        host = OTHERS[i % len(OTHERS)]
        path = f"/chain/2?run={{run}}&i={i}" if i % 4 == 0 else f"/ok?run={{run}}&i={i}"
        urls.append(site.url(host, path))
    random.Random(seed).shuffle(urls)
    return urls


def write_csv(path: Path, urls: list[str]) -> Path:
    # The csv module quotes every URL with a comma in it (the blocked list).
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["url"])
        writer.writerows([u] for u in urls)
    return path


def crawl(csv_path: Path, out: Path, settings: dict[str, str], timeout: float = 300) -> float:
    """Run ``scrapy crawl check``; returns the wall time in seconds."""
    # (a job of its own beside its results: the default job would be in the checkout)
    settings_ = ["LOG_LEVEL=WARNING", f"JOBDIR={out.with_name(f'{out.stem}-job')}"]
    settings_ += [f"{name}={value}" for name, value in settings.items()]
    argv = crawl_argv("-a", f"csv={csv_path}", "-a", f"out={out}", settings=settings_)
    began = time.monotonic()
    subprocess.run(argv, cwd=REPO, env=project_env(), check=True, timeout=timeout)
    return time.monotonic() - began


def read_results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else ("1.000" if a == b else "inf")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    opts = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="urlcheck-bench-proxies-"))
    try:
        lines = run(tmp, opts.rows, opts.seed)
    finally:
        if not opts.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if opts.keep:
        lines.append(f"files kept in {tmp}")
    print("\n".join(["", "urlcheck proxy pool benchmark", *lines]))


def run(tmp: Path, rows: int, seed: int) -> list[str]:
    fleet = [ProxyServer(listen=h, log_path=tmp / f"proxy-{h}.jsonl") for h in PROXY_HOSTS]
    with (
        SiteServer((BLOCKING, *OTHERS), log_path=tmp / "site.jsonl") as site,
        running_proxies(fleet) as proxies,
    ):
        urls = plan(site, rows, seed)
        common = {
            "DOWNLOAD_DELAY": str(DELAY),
            "AUTOTHROTTLE_START_DELAY": str(DELAY),
            "URLCHECK_PROXY_STICKY": "none",
            "URLCHECK_PROXIES": ",".join(p.url for p in proxies),
        }
        # -s replaces the project's dict whole: start from it so backoff and bodycap stay.
        baseline_mw: dict[str, int | None] = dict(project_settings.DOWNLOADER_MIDDLEWARES)
        baseline_mw[POOL_MIDDLEWARE] = None
        baseline_mw[RANDOM_MIDDLEWARE] = 580
        runs = {
            "pool": {**common, "URLCHECK_PROXY_STRATEGY": "weighted"},
            "random": {
                **common,
                "DOWNLOADER_MIDDLEWARES": json.dumps(baseline_mw),
                "BENCH_RANDOM_PROXY_SEED": str(seed),
            },
        }
        figures: dict[str, dict[str, float]] = {}
        for tag, settings in runs.items():
            (tmp / tag).mkdir()
            csv_path = write_csv(tmp / tag / "in.csv", [u.format(run=tag) for u in urls])
            out = tmp / tag / "results.jsonl"
            wall = crawl(csv_path, out, settings)
            results = read_results(out)
            if len(results) != rows:
                raise SystemExit(f"{tag}: {len(results)} results for {rows} rows")
            figures[tag] = measure(site.log(), results, tag, wall)
        snapshot = json.loads((tmp / "pool" / "proxies.json").read_text(encoding="utf-8"))
    return report(figures, snapshot, rows)


def measure(
    log: list[dict[str, Any]], results: list[dict[str, Any]], tag: str, wall: float
) -> dict[str, float]:
    mine = [e for e in log if f"run={tag}&" in e["path"]]
    wasted = [
        e
        for e in mine
        if e["host"] == BLOCKING
        and e["path"].startswith("/by-client")
        and e["client"].rsplit(":", 1)[0] in BLOCKED
    ]
    on_blocking = [e for e in mine if e["host"] == BLOCKING]
    errors = Counter(r["error"] for r in results)
    blocked_rows = [r for r in results if r["error"] == "blocked"]
    return {
        "rows": len(results),
        "blocked_rows": len(blocked_rows),
        "other_errors": sum(n for e, n in errors.items() if e not in (None, "blocked")),
        "requests": len(mine),
        "blocking_requests": len(on_blocking),
        "wasted": len(wasted),
        "captcha_wasted": sum(1 for e in wasted if "as=recaptcha" in e["path"]),
        "wall": wall,
    }


def report(figures: dict[str, dict[str, float]], snapshot: dict[str, Any], rows: int) -> list[str]:
    pool, base = figures["pool"], figures["random"]
    blocking_rows = round(rows * BLOCKING_SHARE)
    share = len(BLOCKED) / len(PROXY_HOSTS)  # a random pick's chance of a blocked proxy
    lines = [
        f"{rows} rows ({blocking_rows} on {BLOCKING}, which blocks {len(BLOCKED)} of "
        f"{len(PROXY_HOSTS)} proxies), delay {DELAY} s, sticky none; pool = weighted, "
        f"baseline = uniform random proxy per request, both with {RETRIES} block retries",
        f"1. rows ending blocked: pool {pool['blocked_rows'] / rows:.2%} "
        f"({pool['blocked_rows']:.0f}) / random {base['blocked_rows'] / rows:.2%} "
        f"({base['blocked_rows']:.0f}) = {ratio(pool['blocked_rows'], base['blocked_rows'])} "
        f"(random's expectation {share ** (RETRIES + 1) * blocking_rows / rows:.2%})",
        f"2. requests wasted on blocked proxies (captcha or block pages from {BLOCKING}): "
        f"pool {pool['wasted']:.0f} / random {base['wasted']:.0f} = "
        f"{ratio(pool['wasted'], base['wasted'])}; per row on {BLOCKING}: "
        f"{pool['wasted'] / blocking_rows:.3f} vs {base['wasted'] / blocking_rows:.3f} "
        f"(random's expectation {sum(share**k for k in range(1, RETRIES + 2)):.3f}); "
        f"captcha + block pages: pool {pool['captcha_wasted']:.0f} + "
        f"{pool['wasted'] - pool['captcha_wasted']:.0f}, random {base['captcha_wasted']:.0f} + "
        f"{base['wasted'] - base['captcha_wasted']:.0f}",
        f"3. requests per row: pool {pool['requests'] / rows:.3f} / random "
        f"{base['requests'] / rows:.3f} = {ratio(pool['requests'], base['requests'])}; "
        f"on {BLOCKING}: {pool['blocking_requests'] / blocking_rows:.3f} vs "
        f"{base['blocking_requests'] / blocking_rows:.3f}",
        f"   other errors: pool {pool['other_errors']:.0f}, random {base['other_errors']:.0f}; "
        f"crawl wall time: pool {pool['wall']:.1f} s, random {base['wall']:.1f} s",
        "4. proxies at the end of the pool run (proxies.json):",
        f"   {'proxy':<18} {'blocked':<7} {'state':<12} {'weight':>6} {'outcomes':>8} "
        f"{'captcha':>7} {'block':>6} {'on ' + BLOCKING:>14} {'benched':>7}",
    ]
    site_cells = snapshot["matrix"].get(BLOCKING, {})
    for proxy in snapshot["proxies"]:
        cell = site_cells.get(proxy["id"])
        on_site = "-" if cell is None else f"{cell['outcomes']} @ {cell['success_rate']:.0%}"
        benched = "-" if cell is None else ("yes" if cell["benched_until"] else "no")
        lines.append(
            f"   {proxy['display']:<18} "
            f"{'yes' if proxy['display'].split(':')[0] in BLOCKED else 'no':<7} "
            f"{proxy['state']:<12} {proxy['weight']:>6.2f} {proxy['outcomes']:>8} "
            f"{pct(proxy['captcha_rate']):>7} {pct(proxy['block_rate']):>6} {on_site:>14} "
            f"{benched:>7}"
        )
    totals = snapshot["totals"]
    lines.append(
        f"   states {dict(totals['states'])}, quarantines {totals['quarantines_total']}, "
        f"sites at fault {totals['sites_at_fault'] or 'none'}"
    )
    return lines


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
