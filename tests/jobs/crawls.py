"""What the job tests share: CSVs of rows spread over the demo site's hosts, the crawls run on
them (``Crawl`` on a job directory, ``Run`` from a directory of its own), and the checks of what
they wrote: every row exactly once, every line whole JSON."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from tests.processes import Process, crawl_argv
from urlcheck.jobs.files import JobMeta

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

HOSTS = tuple(f"127.0.0.{i}" for i in range(2, 7))
# Short but not instant: with 5 hosts, /delay/0.2 and a 0.05 s delay a row takes ~0.25 s per
# host, ~20 rows/s in all, so a 150-row crawl runs for ~7 s with requests always in flight.
SETTINGS = ("DOWNLOAD_DELAY=0.05", "AUTOTHROTTLE_ENABLED=False", "LOG_LEVEL=INFO")
RUN_TIMEOUT = 60.0


def row_url(site: SiteServer, tag: str, row: int, path: str = "/delay/0.2") -> str:
    sep = "&" if "?" in path else "?"
    return site.url(HOSTS[(row - 1) % len(HOSTS)], f"{path}{sep}t={tag}&r={row}")


def write_rows(path: Path, urls: list[str], expected: list[str] | None = None) -> Path:
    """A CSV whose data row n (1-based) is ``urls[n - 1]``."""
    if expected is None:
        text = "url\n" + "".join(f"{url}\n" for url in urls)
    else:
        text = "url,expected\n" + "".join(f"{u},{e}\n" for u, e in zip(urls, expected, strict=True))
    path.write_text(text, encoding="utf-8")
    return path


def make_csv(path: Path, site: SiteServer, tag: str, rows: int, *, chains: bool = True) -> Path:
    """``rows`` rows round-robin over HOSTS: /delay/0.2, and every 7th row a 2-hop chain whose
    first hop is slow too (so chains get interrupted mid-way)."""
    urls = []
    for row in range(1, rows + 1):
        path_ = "/chain/2" if chains and row % 7 == 0 else "/delay/0.2"
        urls.append(row_url(site, tag, row, path_))
    return write_rows(path, urls)


class Crawl(Process):
    """One ``scrapy crawl check`` subprocess on a job directory; its logs go to files."""

    def __init__(self, csv: Path, jobdir: Path, *settings: str, name: str = "crawl") -> None:
        self.jobdir = jobdir
        self.started = time.time()
        argv = crawl_argv("-a", f"csv={csv}", settings=(*SETTINGS, *settings, f"JOBDIR={jobdir}"))
        super().__init__(argv, logs=jobdir.parent / "logs", name=name)

    def lines(self) -> int:
        try:
            with (self.jobdir / "results.jsonl").open("rb") as src:
                return sum(1 for _ in src)
        except FileNotFoundError:
            return 0

    def wait_lines(self, count: int, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while (n := self.lines()) < count:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"the crawl exited ({self.process.returncode}) with {n} < {count} lines:\n"
                    + self.stderr()[-3000:]
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"results.jsonl has {n} lines after {timeout} s, not {count}")
            time.sleep(0.02)
        return n

    def wait(self, timeout: float = RUN_TIMEOUT) -> int:
        return super().wait(timeout)


class Run(Process):
    """``scrapy crawl check ARGS`` run from ``cwd``, a directory of its own (not the checkout)."""

    def __init__(self, cwd: Path, *args: str) -> None:
        super().__init__(
            crawl_argv(*args, settings=SETTINGS), logs=cwd / "logs", name="run", cwd=cwd
        )


def wait_lines(path: Path, count: int, run: Process, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() or path.read_bytes().count(b"\n") < count:
        assert run.poll() is None, run.stderr()[-3000:]
        assert time.monotonic() < deadline, f"{path}: fewer than {count} lines"
        time.sleep(0.02)


def run_crawl(csv: Path, jobdir: Path, *settings: str) -> tuple[int, str]:
    crawl = Crawl(csv, jobdir, *settings)
    return crawl.wait(), crawl.stderr()


def read_results(path: Path) -> list[dict[str, Any]]:
    """Every line of a results file, each asserted to be one whole JSON object."""
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path} ends with a torn line"
    results = []
    for number, line in enumerate(data.splitlines(), 1):
        try:
            result = json.loads(line)
        except ValueError as exc:  # pragma: no cover - the assertion's message
            raise AssertionError(f"{path} line {number} is not JSON: {line[:200]!r}") from exc
        assert isinstance(result, dict) and isinstance(result.get("row"), int)
        results.append(result)
    return results


def assert_no_duplicates(results: list[dict[str, Any]]) -> set[int]:
    counts = Counter(result["row"] for result in results)
    twice = sorted(row for row, n in counts.items() if n > 1)
    assert not twice, f"rows with more than one result line: {twice}"
    return set(counts)


def assert_exact(path: Path, rows: int) -> list[dict[str, Any]]:
    """Rows 1..rows, each exactly once, each the URL of its CSV row."""
    results = read_results(path)
    seen = assert_no_duplicates(results)
    expected = set(range(1, rows + 1))
    assert seen == expected, (
        f"missing {sorted(expected - seen)}, unexpected {sorted(seen - expected)}"
    )
    for result in results:
        query = parse_qs(urlsplit(result["url"]).query)
        assert query["r"] == [str(result["row"])], result
    return results


def meta_of(jobdir: Path) -> JobMeta:
    meta = JobMeta.load(jobdir)
    assert meta is not None
    return meta


def requested_rows(site: SiteServer, tag: str) -> list[tuple[float, int]]:
    """(arrival time, row) of every request this test's crawls sent."""
    arrivals = []
    for record in site.log():
        query = parse_qs(urlsplit(record["path"]).query)
        if query.get("t") == [tag]:
            arrivals.append((record["t_arrival"], int(query["r"][0])))
    return sorted(arrivals)
