"""Resume benchmark (issues 4 and 27): how fast and how lean a large job resumes.

Builds a job the size the issue names: a 1,000,000-row CSV over 50 hosts (127.0.0.10 to
127.0.0.59, all served by one demo site), a results.jsonl with rows 1..900,000 already done
(lines in the results pipeline's exact format, made from :func:`urlcheck.check.result.build_result`
templates), the job's own copy of the CSV (``input.csv``, as every job keeps one), and a
meta.json in state ``paused`` holding the CSV's sha256 and the results' size. It then resumes
the job with the real command in a subprocess:

    python -m scrapy crawl check -a csv=CSV -s JOBDIR=JOB -s CLOSESPIDER_TIMEOUT=30 (--seconds)

and prints one line per figure:
  a. seconds from process start to the first request arriving at the site, against 2.0 s
  b. peak RSS of the crawl process in its first 30 s, VmRSS read every 0.1 s, against 100 MB
  c. requests for rows already done (target 0), read from the site's request log
  d. the results file after the run: lines, rows twice, unreadable lines (targets: 0, 0)

Usage: python bench/resume.py [--rows N] [--done N] [--workdir DIR] [--keep] [--seconds S]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._proc import RssSampler  # noqa: E402
from tests.processes import crawl_argv, start  # noqa: E402
from urlcheck.check.hops import RowTask, hop  # noqa: E402
from urlcheck.check.result import build_result  # noqa: E402
from urlcheck.check.verdict import VerdictRules  # noqa: E402
from urlcheck.clock import utc_iso  # noqa: E402
from urlcheck.demo.launcher import SiteServer  # noqa: E402
from urlcheck.input.csvfile import sha256_file  # noqa: E402
from urlcheck.jobs.counts import Counts  # noqa: E402
from urlcheck.jobs.done import scan_results  # noqa: E402
from urlcheck.jobs.files import INPUT_COPY, JobMeta, JobState  # noqa: E402

HOSTS = [f"127.0.0.{i}" for i in range(10, 60)]
FIRST_REQUEST_TARGET = 2.0  # seconds (issue 27)
RSS_TARGET = 100.0  # MB (MiB, as VmRSS is read)
RSS_WINDOW = 30.0  # seconds
CLOSESPIDER_TIMEOUT = 30
_BASE, _ROW = "http://base.placeholder.test", "987654321"  # placeholders in the templates
_CHUNK_ROWS = 50_000


def host_base(port: int, row: int) -> str:
    return f"http://{HOSTS[(row - 1) % len(HOSTS)]}:{port}"


def write_csv(path: Path, port: int, rows: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write("url\n")
        for start in range(1, rows + 1, _CHUNK_ROWS):
            end = min(start + _CHUNK_ROWS, rows + 1)
            out.write("".join(f"{host_base(port, row)}/ok?r={row}\n" for row in range(start, end)))


def _templates() -> tuple[str, str]:
    """Result lines as the pipeline writes them (build_result's to_json_line), with
    placeholders for the host and the row: a direct 200, and a 301 that adds a slash, judged
    against an expected URL (one row in five)."""
    rules = VerdictRules()
    url, moved = f"{_BASE}/ok?r={_ROW}", f"{_BASE}/ok/?r={_ROW}"
    direct = build_result(
        RowTask(1, url, url, None, {}), [hop(url, status=200, ms=12)], rules=rules
    )
    redirected = build_result(
        RowTask(1, url, url, moved, {}),
        [hop(url, status=301, location=moved, ms=9, kind="slash"), hop(moved, status=200, ms=11)],
        rules=rules,
    )
    assert redirected.verdict == "pass", redirected
    lines = []
    for result in (direct, redirected):
        line = result.to_json_line().decode("utf-8")
        assert line.startswith('{"row": 1, ')
        lines.append(f'{{"row": {_ROW}, ' + line[len('{"row": 1, ') :])
    return lines[0], lines[1]


def write_results(path: Path, port: int, done: int) -> Counts:
    """Rows 1..done, one line each; returns the counts meta.json must hold for them."""
    direct, redirected = _templates()
    with path.open("w", encoding="utf-8") as out:
        for start in range(1, done + 1, _CHUNK_ROWS):
            end = min(start + _CHUNK_ROWS, done + 1)
            out.write(
                "".join(
                    (redirected if row % 5 == 0 else direct)
                    .replace(_BASE, host_base(port, row))
                    .replace(_ROW, str(row))
                    for row in range(start, end)
                )
            )
    counts = Counts()
    counts.add_status(200, done)
    counts.add_first_status(200, done - done // 5)
    counts.add_first_status(301, done // 5)
    counts.add_verdict(None, done - done // 5)
    counts.add_verdict("pass", done // 5)
    return counts


def write_meta(
    jobdir: Path, csv: Path, results: Path, rows: int, done: int, counts: Counts
) -> None:
    now = time.time()
    shutil.copyfile(csv, jobdir / INPUT_COPY)
    JobMeta(
        state=JobState.PAUSED,
        total_rows=rows,
        done_rows=done,
        counts=counts,
        created_at=utc_iso(now - 3 * 3600),
        started_at=utc_iso(now - 3600),
        updated_at=utc_iso(now - 60),
        last_activity_at=utc_iso(now - 60),
        finish_reason="shutdown",
        input_path=str(csv.resolve()),
        input_sha256=sha256_file(csv),
        input_copy=INPUT_COPY,
        results_path=str(results.resolve()),
        results_bytes=results.stat().st_size,
    ).save(jobdir)


def run(args: argparse.Namespace, workdir: Path) -> list[str]:
    rows, done = args.rows, args.done
    jobdir = workdir / "job"
    jobdir.mkdir(parents=True, exist_ok=True)
    csv, results = workdir / "urls.csv", jobdir / "results.jsonl"
    figures = []
    with SiteServer(HOSTS, log_path=workdir / "site.jsonl") as site:
        t0 = time.monotonic()
        write_csv(csv, site.port, rows)
        counts = write_results(results, site.port, done)
        write_meta(jobdir, csv, results, rows, done, counts)
        print(
            f"built the job in {time.monotonic() - t0:.1f} s: {csv} "
            f"({csv.stat().st_size / 1e6:.0f} MB, {rows} rows), {results} "
            f"({results.stat().st_size / 1e6:.0f} MB, {done} rows done)",
            flush=True,
        )
        command = crawl_argv(
            "-a",
            f"csv={csv}",
            settings=[f"JOBDIR={jobdir}", f"CLOSESPIDER_TIMEOUT={args.seconds}"],
        )
        print(f"command (cwd {REPO}): {' '.join(command)}", flush=True)
        log = workdir / "crawl.log"
        with log.open("wb") as err:
            process = start(command, stdout=None, stderr=err)
            with RssSampler(process) as sampler:
                code = process.wait(args.seconds + 600)
        started, samples = sampler.started, sampler.samples
        records = site.log()

    requested = sorted(
        (r["t_arrival"], int(parse_qs(urlsplit(r["path"]).query)["r"][0])) for r in records
    )
    if requested:
        first = requested[0][0] - started
        figures.append(
            f"a. first request at the site {first:.2f} s after process start: "
            f"{first / FIRST_REQUEST_TARGET:.3f} of the {FIRST_REQUEST_TARGET:.1f} s bound "
            "(target <= 1)"
        )
    else:
        figures.append("a. no request reached the site: FAILED")
    early = [rss for t, rss in samples if t <= RSS_WINDOW]
    peak = max(early, default=0.0)
    figures.append(
        f"b. peak RSS in the first {RSS_WINDOW:.0f} s: {peak:.1f} MiB "
        f"({len(early)} samples; whole run {max((s for _, s in samples), default=0.0):.1f} MiB): "
        f"{peak / RSS_TARGET:.3f} of the {RSS_TARGET:.0f} MB bound (target <= 1)"
    )
    again = [row for _, row in requested if row <= done]
    figures.append(
        f"c. requests for rows already done: {len(again)} of {len(requested)} requests "
        f"(lowest row requested: {min((r for _, r in requested), default='-')}; target 0)"
    )
    scan = scan_results(results, repair=False)
    meta = JobMeta.load(jobdir)
    state = meta.state.value if meta else "-"
    figures.append(
        f"d. after the run: exit code {code}, state {state}, {scan.lines} result lines "
        f"({scan.lines - done} new), {scan.duplicates} rows twice, {scan.malformed} unreadable, "
        f"{scan.repaired_bytes} torn bytes"
    )
    if args.keep or args.workdir is not None:
        figures.append(f"crawl log: {log}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--done", type=int, default=900_000)
    parser.add_argument("--workdir", type=Path, help="default: a new temporary directory")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--seconds",
        type=int,
        default=CLOSESPIDER_TIMEOUT,
        help=f"CLOSESPIDER_TIMEOUT of the resumed crawl (default {CLOSESPIDER_TIMEOUT})",
    )
    args = parser.parse_args()
    if not 0 < args.done < args.rows:
        parser.error("need 0 < --done < --rows")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="urlcheck-resume-bench-"))
    try:
        figures = run(args, workdir)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print("\n".join(["", "urlcheck resume benchmark", *figures]))


if __name__ == "__main__":
    main()
