"""Startup benchmark (issue 21): what the command line costs before it does anything.

Wall time of each command in a fresh interpreter, as a ratio against ``python -c "import
scrapy"`` measured in the same run (the commands and the baseline take turns; medians of
``--runs`` runs each):

    urlcheck --help          (target: at most 1.5 x a bare Scrapy import)
    urlcheck check --help
    urlcheck job --help

Then the import set of a one-process crawl, in a fresh process: a real check crawl of two rows
against the demo site, run as ``scrapy crawl check`` runs it (its preflight, then the crawl with
urlcheck's settings), and the same through the command line (``urlcheck check``), which also
loads every Scrapy command of the project. Whether redis-py and any ``urlcheck.cluster`` module
were loaded (target: neither, for the crawl).

Usage: python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from urlcheck.demo.launcher import SiteServer  # noqa: E402

HELP_BOUND = 1.5
BASELINE = [sys.executable, "-c", "import scrapy"]
URLCHECK = [sys.executable, "-m", "urlcheck"]  # the console script's code
COMMANDS = {
    "urlcheck --help": [*URLCHECK, "--help"],
    "urlcheck check --help": [*URLCHECK, "check", "--help"],
    "urlcheck job --help": [*URLCHECK, "job", "--help"],
}

# The same crawl through the command line, which also loads every Scrapy command of the project.
COMMAND = """
import json, sys
from tests.crawl.importset import distributed_modules
from urlcheck.cli import main
code = main(["check", sys.argv[1], "--jobdir", sys.argv[2], "-L", "WARNING"])
reason = "finished" if code == 0 else f"exit code {code}"
print(json.dumps({"finish_reason": reason, "loaded": distributed_modules()}))
"""


def seconds(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed ({done.returncode}):\n{done.stderr.decode()[-2000:]}")
    return elapsed


def startup(runs: int, cwd: Path) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"import scrapy": [], **{name: [] for name in COMMANDS}}
    for argv in (BASELINE, *COMMANDS.values()):  # warm the file cache once
        seconds(argv, cwd)
    for _ in range(runs):  # in turns, so that a busy moment weighs on all alike
        times["import scrapy"].append(seconds(BASELINE, cwd))
        for name, argv in COMMANDS.items():
            times[name].append(seconds(argv, cwd))
    return times


def import_set(how: list[str], folder: Path, site: SiteServer) -> dict[str, object]:
    """How a crawl of two rows ended, and what it loaded of distributed mode."""
    folder.mkdir()
    csv = folder / "urls.csv"
    urls = [site.url("127.0.0.2", "/"), site.url("127.0.0.3", "/redirect/301?to=/")]
    csv.write_text("url\n" + "".join(f"{url}\n" for url in urls), encoding="utf-8")
    done = subprocess.run(
        [*how, str(csv), str(folder / "job")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(f"the crawl failed ({done.returncode}):\n{done.stderr[-3000:]}")
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


def describe(found: dict[str, object]) -> str:
    loaded = found["loaded"]
    assert isinstance(loaded, list)
    redis = any(m.split(".")[0] == "redis" for m in loaded)
    cluster = [m for m in loaded if m.startswith("urlcheck.cluster")]
    return (
        f"{found['finish_reason']}; redis-py loaded: {'yes' if redis else 'no'}; "
        f"urlcheck.cluster modules loaded: {len(cluster)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="timed runs of each (default 9)")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="urlcheck-startup-") as tmp:
        folder = Path(tmp)
        times = startup(args.runs, folder)
        base = statistics.median(times["import scrapy"])
        print(f'startup, medians of {args.runs} runs, against `python -c "import scrapy"`:')
        print(f"  {'import scrapy':<24} {base:6.3f} s  1.00 x")
        for name in COMMANDS:
            median = statistics.median(times[name])
            ratio = median / base
            bound = f"  (target <= {HELP_BOUND})" if name == "urlcheck --help" else ""
            print(f"  {name:<24} {median:6.3f} s  {ratio:.2f} x{bound}")
            if name == "urlcheck --help" and ratio > HELP_BOUND:
                ok = False
        with SiteServer(("127.0.0.2", "127.0.0.3")) as site:
            crawl = import_set(
                [sys.executable, "-m", "tests.crawl.importset"], folder / "crawl", site
            )
            command = import_set([sys.executable, "-c", COMMAND], folder / "command", site)
        print("a one-process crawl of 2 rows against the demo site, in a fresh process:")
        print(f"  the crawl (preflight + crawl)   {describe(crawl)}  (target: no, 0)")
        print(f"  urlcheck check (command line)   {describe(command)}")
        if crawl["loaded"]:
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
