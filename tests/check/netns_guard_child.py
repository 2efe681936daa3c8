"""Runs inside ``unshare -n -m`` (test_addressguard.py): gives this namespace's own ``lo``
the addresses the guard is about, serves the demo site on them, runs real ``scrapy crawl check``
processes, and writes their results and the site's request log to the JSON file named by argv[1].

The crawls run side by side (one after another they took most of the test's time); each sends a
User-Agent of its own, by which the site's one log is split between them, and a request that no
crawl here sent fails the run.

It refuses to start unless the only network interface is ``lo``: nothing it sends can leave.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.processes import crawl_argv, run  # noqa: E402
from urlcheck.demo.launcher import SiteServer  # noqa: E402

PUBLIC = "93.184.216.34"  # a global address, here only on this namespace's lo
METADATA = "169.254.169.254"
PRIVATE = "10.1.2.3"
LOCAL = "127.0.0.2"
CGNAT = "100.64.1.2"
BENCHMARKING = "198.18.0.5"
UNIQUE_LOCAL = "fd00::1"
# Where a public page's redirect may not lead, and so neither may the robots.txt request it
# causes: (row id, URL host).
ROBOTS_TARGETS = (
    ("private", PRIVATE),
    ("loopback", "127.0.0.1"),
    ("loopback6", "[::1]"),
    ("cgnat", CGNAT),
    ("benchmarking", BENCHMARKING),
    ("unique_local", f"[{UNIQUE_LOCAL}]"),
)


def isolate(tmp: Path) -> None:
    interfaces = [name for _, name in socket.if_nameindex()]
    if interfaces != ["lo"]:
        raise SystemExit(f"not in a fresh network namespace (interfaces: {interfaces})")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for address in (PUBLIC, METADATA, PRIVATE, CGNAT, BENCHMARKING, UNIQUE_LOCAL):
        prefix = 128 if ":" in address else 32
        subprocess.run(["ip", "addr", "add", f"{address}/{prefix}", "dev", "lo"], check=True)
    hosts = tmp / "hosts"
    hosts.write_text(
        f"127.0.0.1 localhost\n{METADATA} metadata.test\n{PUBLIC} public.test\n", encoding="ascii"
    )
    # Private mount namespace (unshare -m): this /etc/hosts is seen by this process tree only.
    subprocess.run(["mount", "--bind", str(hosts), "/etc/hosts"], check=True)


Row = tuple[str, str]
# A crawl, or crawls that must run in turn: what each wrote, by run name (its log added later).
Task = Callable[[], dict[str, dict[str, Any]]]
CRAWLS_AT_ONCE = 4  # enough to keep both cores busy while some crawls wait on a response


def agent(name: str) -> str:
    """The User-Agent of run ``name``: its requests in the site's log."""
    return f"urlcheck-netns-{name}"


def side_by_side(site: SiteServer, tasks: list[Task]) -> list[dict[str, dict[str, Any]]]:
    """What each task wrote, each run with the requests of the site's log that it sent."""
    with ThreadPoolExecutor(CRAWLS_AT_ONCE) as pool:
        done = [future.result() for future in [pool.submit(task) for task in tasks]]
    logs: dict[str, list[dict[str, Any]]] = {}
    for runs in done:
        for name, written in runs.items():
            logs[agent(name)] = written["log"] = []
    for entry in site.log():
        log = logs.get(entry.get("user_agent", ""))
        if log is None:
            raise SystemExit(f"a request that no crawl here sent: {entry}")
        log.append(entry)
    return done


def crawl(tmp: Path, name: str, rows: list[Row], *settings: str) -> list[dict[str, Any]]:
    csv = tmp / f"{name}.csv"
    csv.write_text("url,id\n" + "".join(f"{url},{key}\n" for key, url in rows), encoding="utf-8")
    out = tmp / f"{name}.jsonl"
    quick = ["LOG_LEVEL=WARNING", "DOWNLOAD_DELAY=0", "AUTOTHROTTLE_ENABLED=False"]
    quick += ["RETRY_TIMES=0", "DOWNLOAD_TIMEOUT=5", f"URLCHECK_USER_AGENT={agent(name)}"]
    quick.append(f"JOBDIR={tmp / 'jobs' / name}")  # the default job would be in the checkout
    done = run(crawl_argv("-a", f"csv={csv}", "-a", f"out={out}", settings=(*quick, *settings)))
    sys.stderr.write(done.stderr)  # as if it had run in the foreground
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def crawl_input(
    tmp: Path, name: str, given: str | None, jobdir: Path | None = None
) -> dict[str, Any]:
    """A crawl of ``given`` (a sitemap's URL; None: the job's own copy of its input): its
    results (none when it ended early) and its stderr."""
    quick = ["LOG_LEVEL=WARNING", "DOWNLOAD_DELAY=0", "AUTOTHROTTLE_ENABLED=False"]
    quick += ["RETRY_TIMES=0", "DOWNLOAD_TIMEOUT=5", f"URLCHECK_USER_AGENT={agent(name)}"]
    args: list[str] = ["-a", f"csv={given}"] if given else []
    if jobdir is None:
        out = tmp / f"{name}.jsonl"
        args += ["-a", f"out={out}"]
        quick.append(f"JOBDIR={tmp / 'jobs' / name}")  # the default job would be in the checkout
    else:
        out = jobdir / "results.jsonl"
        quick.append(f"JOBDIR={jobdir}")
    done = run(crawl_argv(*args, settings=quick))
    sys.stderr.write(done.stderr)
    lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    return {"results": [json.loads(line) for line in lines], "stderr": done.stderr}


def sitemap_runs(tmp: Path, site: SiteServer) -> list[Task]:
    """Sitemaps the crawl fetches: what a public one names is judged as a hop after it."""
    port = site.port
    inputs = {
        # a public index naming sitemaps on a private address (and on the metadata address)
        "public_index": site.url(PUBLIC, f"/sitemap-index.xml?parts=1&n=2&host={PRIVATE}"),
        "metadata_index": site.url(PUBLIC, f"/sitemap-index.xml?parts=1&n=2&host={METADATA}"),
        # a public sitemap listing URLs on a private address
        "public_rows": site.url(PUBLIC, f"/sitemap.xml?n=2&host={PRIVATE}"),
        # a public sitemap URL redirecting to a private one
        "public_redirect": site.url(
            PUBLIC,
            "/redirect/301?to=" + quote(f"http://{PRIVATE}:{port}/sitemap.xml?n=2", safe=""),
        ),
        # what stays allowed: the user's own (private) index, its sitemaps and rows private
        "private_index": site.url(LOCAL, f"/sitemap-index.xml?parts=2&n=2&host={PRIVATE}"),
        # and a public index of public sitemaps
        "public_public": site.url(PUBLIC, "/sitemap-index.xml?parts=1&n=2"),
    }

    def input_run(name: str, given: str) -> Task:
        return lambda: {name: crawl_input(tmp, name, given)}

    tasks = [input_run(name, given) for name, given in inputs.items()]
    # A job of a public sitemap, run again from its own copy of the input (no URL given).
    job = tmp / "sitemap-job"
    tasks.append(
        lambda: {
            "job_first": crawl_input(tmp, "job_first", inputs["public_rows"], job),
            "job_again": crawl_input(tmp, "job_again", None, job),
        }
    )
    return tasks


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="urlcheck-netns-"))
    isolate(tmp)
    hosts = (
        PUBLIC,
        METADATA,
        PRIVATE,
        LOCAL,
        "127.0.0.1",
        "::1",
        CGNAT,
        BENCHMARKING,
        UNIQUE_LOCAL,
    )
    with SiteServer(hosts, log_path=tmp / "site.jsonl") as site:
        port = site.port

        def via_public(target: str, code: int = 301) -> str:
            return site.url(PUBLIC, f"/redirect/{code}?to={quote(target, safe='')}")

        meta_path = "/latest/meta-data/"
        rows = [
            ("meta", via_public(f"http://{METADATA}:{port}{meta_path}")),
            ("mapped", via_public(f"http://[::ffff:{METADATA}]:{port}{meta_path}", 302)),
            ("hex", via_public(f"http://0xa9.0xfe.0xa9.0xfe:{port}{meta_path}")),
            ("int", via_public(f"http://2852039166:{port}{meta_path}")),
            ("private", via_public(f"http://{PRIVATE}:{port}/ok?from=public")),
            ("loopback", via_public(f"http://{LOCAL}:{port}/ok?from=public")),
            ("zero", via_public(f"http://0.0.0.0:{port}/ok?from=public")),
            ("name", via_public(f"http://metadata.test:{port}{meta_path}")),
            ("fe80", via_public(f"http://[fe80::1]:{port}{meta_path}")),
            (
                "twohop",
                via_public(
                    f"http://public.test:{port}/redirect/301?to="
                    + quote(f"http://{PRIVATE}:{port}/ok?from=public", safe="")
                ),
            ),
            ("input_meta", f"http://{METADATA}:{port}{meta_path}"),
            ("input_name", f"http://metadata.test:{port}{meta_path}"),
            ("public", via_public(f"http://public.test:{port}/ok")),
            ("input_private", f"http://{PRIVATE}:{port}/ok"),
            (
                "private_chain",
                site.url(LOCAL, "/redirect/301?to=" + quote(f"http://{PRIVATE}:{port}/ok", "")),
            ),
        ]
        # With robots.txt obeyed, the robots.txt request a hop causes is judged as the hop is.
        robots = [
            (name, via_public(f"http://{host}:{port}/ok?from=public"))
            for name, host in ROBOTS_TARGETS
        ]
        robots.append(("public", via_public(f"http://public.test:{port}/ok")))

        def rows_run(name: str, given: list[Row], *settings: str) -> Task:
            return lambda: {
                name: {"rows": len(given), "results": crawl(tmp, name, given, *settings)}
            }

        tasks = [
            rows_run("default", rows),
            rows_run("allow", rows, f"URLCHECK_ALLOW_NETWORKS={METADATA}/32,10.0.0.0/8"),
            rows_run("strict", rows, "URLCHECK_BLOCK_PRIVATE_INPUT=true"),
            rows_run("off", rows, "URLCHECK_ADDRESS_GUARD_ENABLED=false"),
            rows_run("robots", robots, "ROBOTSTXT_OBEY=True"),
        ]
        done = side_by_side(site, [*tasks, *sitemap_runs(tmp, site)])
    runs: dict[str, Any] = {name: run for runs in done[: len(tasks)] for name, run in runs.items()}
    runs["sitemaps"] = {name: run for runs in done[len(tasks) :] for name, run in runs.items()}
    Path(sys.argv[1]).write_text(json.dumps(runs), encoding="utf-8")


if __name__ == "__main__":
    main()
