"""The command line as users meet it: bad input ends the run with one line and exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def scrapy(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("make", "extra", "message"),
    [
        (lambda d: d / "missing.csv", (), "missing.csv: no such file"),
        (lambda d: d, (), "is a directory"),
        (
            lambda d: _write(d / "h.csv", b"url\n"),
            (),
            "h.csv: the file has a header but no data rows",
        ),
        (lambda d: _write(d / "e.csv", b""), (), "e.csv: the file is empty"),
        (lambda d: _write(d / "b.csv", b"\x89PNG\r\n\x1a\n\0\0"), (), "looks like a PNG image"),
        (
            lambda d: _write(d / "ok.csv", b"url\nhttp://127.0.0.2:9/\n"),
            ("-s", "URLCHECK_MAX_HOPS=ten"),
            "setting URLCHECK_MAX_HOPS: expected a whole number",
        ),
        (
            lambda d: _write(d / "ok.csv", b"url\nhttp://127.0.0.2:9/\n"),
            ("-s", "URLCHECK_PROXY_QUARANTINE_CAP=2", "-s", "URLCHECK_PROXIES=http://127.0.0.20:1"),
            "URLCHECK_PROXY_QUARANTINE_CAP",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, make, extra, message):
    path = make(tmp_path)
    done = scrapy(
        "crawl", "check", "-a", f"csv={path}", "-a", f"out={tmp_path / 'r.jsonl'}", *extra
    )
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("urlcheck: ")]
    assert len(lines) == 1 and message in lines[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "r.jsonl").exists()


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_demo_runs_offline_and_prints_a_summary(tmp_path):
    done = scrapy("demo", "--jobdir", str(tmp_path / "job"), "-s", "LOG_LEVEL=WARNING")
    assert done.returncode == 3, done.stdout + done.stderr[-2000:]  # the demo has failing verdicts
    assert "11 rows checked" in done.stdout
    assert "[loop]" in done.stdout and "[temporary_redirect]" in done.stdout
    assert (tmp_path / "job" / "results.jsonl").read_text().count("\n") == 11
