"""What the distributed-mode tests share: coordinator and worker processes of one job (real
``scrapy crawl check``, each logging to ``TMP/NAME.log``), and the check of what they wrote."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

from tests.processes import REPO, crawl_argv, start


def crawl(
    tmp: Path,
    name: str,
    job: str,
    url: str,
    *args: str,
    settings: tuple[str, ...] = (),
    cwd: Path = REPO,
) -> subprocess.Popen[bytes]:
    """A process of distributed job ``job`` on the Redis at ``url``: a worker unless ``args``
    give it the CSV (see :func:`coordinator`)."""
    common = (f"REDIS_URL={url}", "LOG_LEVEL=INFO", f"LOG_FILE={tmp / name}.log")
    return start(crawl_argv("-a", f"job={job}", *args, settings=(*common, *settings)), cwd=cwd)


def coordinator(
    tmp: Path,
    job: str,
    url: str,
    csv: Path,
    *,
    settings: tuple[str, ...] = (),
    name: str = "coordinator",
) -> subprocess.Popen[bytes]:
    """The job's coordinator: it reads ``csv`` and writes ``TMP/job/results.jsonl``."""
    return crawl(
        tmp, name, job, url, "-a", f"csv={csv}", "-s", f"JOBDIR={tmp / 'job'}", settings=settings
    )


def result_rows(tmp: Path) -> list[int]:
    path = tmp / "job" / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["row"] for line in path.read_text().splitlines() if line.endswith("}")]


def assert_each_row_once(tmp: Path, total: int) -> None:
    rows = result_rows(tmp)
    assert [row for row, n in Counter(rows).items() if n > 1] == []
    assert sorted(rows) == list(range(1, total + 1))
