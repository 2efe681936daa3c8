"""Report benchmark (issue 13): a report and a diff of a 1,000,000-row results file.

Generates a results.jsonl in the pipeline's exact format (lines from
:func:`urlcheck.check.result.build_result`) over 2,000 hosts with a realistic mix: direct 200s,
301 chains that pass, 302s that fail, 404s, network errors, loops, unavailable hosts. Then runs
the real commands in subprocesses, sampling VmRSS every 0.1 s:

    python -m scrapy job report JOB -o report.html
    python -m scrapy job diff JOB NEW.jsonl -o changes.jsonl   (NEW: 1% of the rows changed)

and prints seconds and peak RSS for each, the HTML's size, and as a baseline measured in the
same run, the seconds a bare ``json.loads`` loop takes over the same file (startup included
in the commands' times). Bounds (checked, exit 1 when missed): report <= 3 x the bare parse,
diff <= 5 x (it parses two files), each <= 150 MiB peak RSS; HTML <= 1.5 MB.

Usage: python bench/report.py [--rows N] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._proc import RssSampler  # noqa: E402
from tests.processes import job_argv, start  # noqa: E402
from urlcheck.check.hops import RowTask, hop  # noqa: E402
from urlcheck.check.result import Result, build_result  # noqa: E402
from urlcheck.check.verdict import VerdictRules  # noqa: E402

MAX_RATIO = {"report": 3.0, "diff": 5.0}
MAX_RSS_MIB = 150.0
MAX_HTML_BYTES = 1_500_000
RULES = VerdictRules()


def make_row(row: int, rng: random.Random) -> Result:
    host = f"www.site{row % 2000}.example"
    url = f"https://{host}/section/{row % 97}/page-{row}.html"
    target = f"https://{host}/new/{row % 97}/page-{row}"
    ms = rng.randint(20, 900)
    roll = rng.random()
    if roll < 0.55:
        task = RowTask(row, url, url, None, {"id": str(row)})
        return build_result(task, [hop(url, status=200, ms=ms)], rules=RULES)
    task = RowTask(row, url, url, target, {"id": str(row)})
    if roll < 0.80:
        chain = [
            hop(url, status=301, location=target, ms=ms, kind="path"),
            hop(target, status=200, ms=ms // 2),
        ]
        return build_result(task, chain, rules=RULES)
    if roll < 0.86:
        chain = [
            hop(url, status=302, location=target, ms=ms, kind="path"),
            hop(target, status=200, ms=ms // 2),
        ]
        return build_result(task, chain, rules=RULES)
    if roll < 0.93:
        return build_result(task, [hop(url, status=404, ms=ms)], rules=RULES)
    if roll < 0.97:
        kind = rng.choice(("timeout", "dns", "connect", "connection_lost"))
        chain = [hop(url, error=kind)]
        return build_result(task, chain, rules=RULES, error=kind, error_message=f"{kind} error")
    if roll < 0.99:
        chain = [
            hop(url, status=301, location=target, ms=ms, kind="path"),
            hop(target, status=301, location=url, ms=ms, kind="path"),
        ]
        return build_result(task, chain, rules=RULES, loop=True)
    return build_result(
        task,
        [],
        rules=RULES,
        error="host_unavailable",
        error_message="503 on 2 consecutive rows after all retries",
        retries=3,
        retry_after=120,
    )


def generate(path: Path, rows: int, *, seed: int, change: float = 0.0) -> None:
    rng = random.Random(seed)
    flip = random.Random(seed + 1)
    with path.open("w", encoding="utf-8") as out:
        for row in range(1, rows + 1):
            result = make_row(row, rng)
            if change and flip.random() < change:
                result.final_status = 500
                result.verdict = "fail" if result.expected else None
            out.write(result.to_json_line().decode("utf-8"))


def run(args: list[str]) -> tuple[float, float, int]:
    started = time.perf_counter()
    process = start(job_argv(*args), stderr=subprocess.PIPE)
    with RssSampler(process) as sampler:
        process.wait()
    seconds = time.perf_counter() - started
    return seconds, sampler.peak(), process.returncode


def bare_parse(path: Path) -> float:
    started = time.perf_counter()
    with path.open("rb") as lines:
        for line in lines:
            json.loads(line)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true")
    opts = parser.parse_args()
    work = opts.workdir or Path(tempfile.mkdtemp(prefix="urlcheck-report-bench-"))
    job = work / "job"
    job.mkdir(parents=True, exist_ok=True)
    results, new = job / "results.jsonl", work / "new.jsonl"
    try:
        started = time.perf_counter()
        generate(results, opts.rows, seed=13)
        generate(new, opts.rows, seed=13, change=0.01)
        size = results.stat().st_size
        print(
            f"generated {opts.rows:,} rows ({size / 2**20:.0f} MiB) twice "
            f"in {time.perf_counter() - started:.1f} s"
        )
        parse = bare_parse(results)
        print(f"baseline: bare json.loads over the file: {parse:.1f} s")
        failed = False
        html = work / "report.html"
        for name, args, expect in (
            ("report", ["report", str(job), "-o", str(html)], 0),
            ("diff", ["diff", str(job), str(new), "-o", str(work / "changes.jsonl")], 1),
        ):
            seconds, rss, code = run(args)
            bound = MAX_RATIO[name]
            ok = code == expect and seconds <= bound * parse and rss <= MAX_RSS_MIB
            failed |= not ok
            print(
                f"{name}: {seconds:.1f} s ({seconds / parse:.2f} x the bare parse, bound "
                f"{bound:.0f} x), peak RSS {rss:.0f} MiB (bound {MAX_RSS_MIB:.0f}), "
                f"exit {code} (expected {expect}){'' if ok else '  <-- MISSED'}"
            )
        html_size = html.stat().st_size
        failed |= html_size > MAX_HTML_BYTES
        print(f"report.html: {html_size / 1000:.0f} kB (bound {MAX_HTML_BYTES / 1000:.0f} kB)")
        return 1 if failed else 0
    finally:
        if opts.keep:
            print(f"kept {work}")
        elif opts.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
