"""Input readers benchmark (issue 25 point 1): a 1,000,000-row CSV, .xlsx and sitemap, read in
full by the reader the crawl uses (``urlcheck.input.kind.open_source(...).records()``).

The three files hold the same rows (a URL over 97 hosts and a lastmod date): the CSV as
``url,lastmod``; the workbook as Excel writes it (shared strings, one sheet, a header row);
the sitemap as a ``urlset`` with ``<loc>`` and ``<lastmod>``. Each read runs in its own process
(``--read KIND PATH``), so that its peak memory (VmHWM: the interpreter and its imports
included) is its own; the readers take turns, ``--rounds`` times, and the median of each is
compared with the CSV reader's of the same run. One line per figure:

  csv      CPU seconds and wall seconds for the full pass
  xlsx     the same, and its ratio to the CSV reader (target: at most 5x)
  sitemap  the same, and its ratio to the CSV reader (target: at most 2x)
  memory   the peak RSS of each reader's process (target: at most 100 MB each)

Usage: python bench/inputs.py [--rows N] [--rounds N] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.input import workbooks  # noqa: E402

XLSX_TARGET = 5.0  # times the CSV reader
SITEMAP_TARGET = 2.0
MEMORY_TARGET = 100.0  # MB (MiB, as VmHWM counts)
KINDS = ("csv", "xlsx", "sitemap")


def row(i: int) -> tuple[str, str]:
    return (
        f"https://host{i % 97}.example/section/{i % 1000}/page-{i}.html?ref=bench&n={i}",
        f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}",
    )


def write_csv(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("url,lastmod\r\n")
        for i in range(rows):
            url, lastmod = row(i)
            out.write(f"{url},{lastmod}\r\n")


def write_sitemap(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        out.write('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n')
        for i in range(rows):
            url, lastmod = row(i)
            out.write(f"  <url>\n    <loc>{escape(url)}</loc>\n    <lastmod>{lastmod}</lastmod>\n")
            out.write("  </url>\n")
        out.write("</urlset>\n")


def write_xlsx(path: Path, rows: int) -> None:
    """A workbook as Excel saves one: every text cell a shared string (the URLs all distinct,
    the dates a few hundred), cell references on every row and cell."""
    lines = (["url", "lastmod"] if i < 0 else list(row(i)) for i in range(-1, rows))
    workbooks.write_xlsx(path, lines)


def vm_hwm_mib() -> float:
    """This process's peak resident memory (VmHWM). Not ru_maxrss: Linux carries that over
    exec from the parent, whose writing of the workbook peaks far higher."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def read(kind: str, path: Path) -> None:
    """``--read``: one full pass; prints its figures as JSON."""
    from urlcheck.input.kind import open_source

    wall, cpu = time.perf_counter(), time.process_time()
    source = open_source(path)
    count = 0
    for _record in source.records():
        count += 1
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    source.close()
    assert source.kind == kind, (source.kind, kind)
    peak = vm_hwm_mib()
    print(json.dumps({"rows": count, "cpu": cpu, "wall": wall, "peak_mb": peak}))


def measure(kind: str, path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--read", kind, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--read", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read:
        read(args.read[0], Path(args.read[1]))
        return 0
    work = args.workdir or Path(tempfile.mkdtemp(prefix="urlcheck-bench-inputs-"))
    work.mkdir(parents=True, exist_ok=True)
    files = {"csv": work / "urls.csv", "xlsx": work / "urls.xlsx", "sitemap": work / "sitemap.xml"}
    try:
        started = time.perf_counter()
        write_csv(files["csv"], args.rows)
        write_xlsx(files["xlsx"], args.rows)
        write_sitemap(files["sitemap"], args.rows)
        sizes = ", ".join(f"{k} {p.stat().st_size / 1e6:.0f} MB" for k, p in files.items())
        print(
            f"files: {args.rows:,} rows each ({sizes}), written in "
            f"{time.perf_counter() - started:.0f} s"
        )
        runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
        for _ in range(args.rounds):
            for kind in KINDS:
                figures = measure(kind, files[kind])
                assert figures["rows"] == args.rows, (kind, figures)
                runs[kind].append(figures)
        med = {
            kind: {key: statistics.median(r[key] for r in runs[kind]) for key in runs[kind][0]}
            for kind in KINDS
        }
        base = med["csv"]
        ok = True
        print(
            f"csv:     {base['cpu']:.2f} s CPU, {base['wall']:.2f} s wall (median of {args.rounds})"
        )
        for kind, target in (("xlsx", XLSX_TARGET), ("sitemap", SITEMAP_TARGET)):
            cpu_ratio = med[kind]["cpu"] / base["cpu"]
            wall_ratio = med[kind]["wall"] / base["wall"]
            ok &= cpu_ratio <= target
            print(
                f"{kind + ':':<8} {med[kind]['cpu']:.2f} s CPU, {med[kind]['wall']:.2f} s wall: "
                f"{cpu_ratio:.2f}x the CSV reader's CPU ({wall_ratio:.2f}x wall; target <= "
                f"{target:g}x) {'ok' if cpu_ratio <= target else 'OVER'}"
            )
        peaks = {kind: max(r["peak_mb"] for r in runs[kind]) for kind in KINDS}
        ok &= all(peak <= MEMORY_TARGET for peak in peaks.values())
        print(
            "memory:  peak RSS "
            + ", ".join(f"{kind} {peak:.0f} MB" for kind, peak in peaks.items())
            + f" (target <= {MEMORY_TARGET:g} MB each)"
        )
        return 0 if ok else 1
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
