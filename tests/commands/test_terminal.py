"""`urlcheck check` as it reads on a terminal: a progress bar on stderr under a pseudo-terminal,
Scrapy's own lines and its stats dump in the job's crawl.log, the summary on stdout, -v and -q,
and without a terminal the log on stderr with its first progress line within 5 s. Everything
printed escapes control and bidi characters."""

from __future__ import annotations

import io
import logging
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests import processes
from urlcheck.crawl.terminal import Mode, Terminal, log_file

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

BIDI = "\u202e"


def _csv(tmp_path: Path, site: SiteServer, host: str, rows: int, path: str = "/ok") -> Path:
    urls = [site.url(host, f"{path}?term={tmp_path.name}&i={i}") for i in range(rows)]
    csv = tmp_path / "urls.csv"
    csv.write_text("url\n" + "\n".join(urls) + "\n", encoding="utf-8")
    return csv


def _on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """``urlcheck ARGS`` with its stderr on a pseudo-terminal: (exit code, what the terminal
    got, stdout)."""
    main, side = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "urlcheck", *args],
        cwd=cwd,
        env=processes.project_env(COLUMNS="120"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=side,
    )
    os.close(side)
    screen = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.2)
        if ready:
            try:
                data = os.read(main, 65536)
            except OSError:  # the child closed its side
                break
            if not data:
                break
            screen += data
        elif child.poll() is not None:
            break
    os.close(main)
    assert child.stdout is not None
    with child.stdout:
        out = child.stdout.read().decode("utf-8")
    code = child.wait(timeout=30)
    return code, screen.decode("utf-8", "replace"), out


def test_a_progress_bar_on_a_terminal_and_the_log_in_the_job(
    site: SiteServer, tmp_path: Path
) -> None:
    _csv(tmp_path, site, "127.0.0.8", 6, "/delay/0.2")
    out = f"r{BIDI}.jsonl"
    code, screen, stdout = _on_a_terminal(
        ["check", "urls.csv", "--jobdir", "job", "--out", out], tmp_path
    )
    assert code == 0, screen[-3000:]
    # The bar, redrawn as rows finish, with the progress line's figures.
    assert screen.count("\r") >= 3 and "6/6 rows" in screen and "100%" in screen
    assert "rows/min" in screen and "hosts: " in screen and "in back-off" in screen
    # Not Scrapy's chatter, not the stats dump, not progress log lines.
    assert "[scrapy" not in screen and "Dumping Scrapy stats" not in screen
    assert "Progress: " not in screen and "urlcheck summary" not in screen
    log = (tmp_path / "job" / "crawl.log").read_text(encoding="utf-8")
    assert "Scrapy 2.19" in log and "Dumping Scrapy stats" in log and "urlcheck summary" in log
    # The summary on stdout, with where the results and the log are, the path escaped.
    lines = stdout.splitlines()
    assert lines[0] == "urlcheck summary (finished): 6 rows checked"
    assert "  first status: 2xx 6" in lines
    assert f"results: {tmp_path}/r\\u202e.jsonl" in lines and BIDI not in stdout
    assert f"log:     {tmp_path}/job/crawl.log" in lines


def test_quiet_and_verbose(site: SiteServer, tmp_path: Path) -> None:
    _csv(tmp_path, site, "127.0.0.8", 3)
    code, screen, stdout = _on_a_terminal(["check", "urls.csv", "--jobdir", "job", "-q"], tmp_path)
    assert (code, screen, stdout) == (0, "", "")  # a terminal, and nothing on it
    assert "urlcheck summary" in (tmp_path / "job" / "crawl.log").read_text(encoding="utf-8")
    code, screen, stdout = _on_a_terminal(
        ["check", "urls.csv", "--jobdir", "again", "-v"], tmp_path
    )
    assert code == 0
    assert "[scrapy.core.engine] INFO: Spider closed (finished)" in screen  # the log, as ever
    assert "rows/min" not in screen.replace("Progress: ", "")  # no bar
    assert stdout.startswith("urlcheck summary (finished): 3 rows checked\n")
    assert not (tmp_path / "again" / "crawl.log").exists()


def test_without_a_terminal_the_log_with_a_first_progress_line_within_5_s(
    site: SiteServer, tmp_path: Path
) -> None:
    # About 7 s of crawling: the 30 s interval alone would show no progress line.
    _csv(tmp_path, site, "127.0.0.9", 7, "/delay/1")
    done = processes.run(
        [sys.executable, "-m", "urlcheck", "check", "urls.csv", "--no-job"], cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Progress: " in done.stderr and "Dumping Scrapy stats" in done.stderr
    assert done.stdout.startswith("urlcheck summary (finished): 7 rows checked\n")
    assert f"results: {tmp_path}/results.jsonl" in done.stdout.splitlines()
    assert not (tmp_path / "results.log").exists()


def test_warnings_above_the_bar_are_escaped() -> None:
    stream = io.StringIO()
    terminal = Terminal(bar=False, stream=stream)
    terminal.start()
    try:
        logger = logging.getLogger("urlcheck.test.terminal")
        logger.info("not shown")
        logger.warning("row 3: %s", f"http://a.test/\x1b]0;owned\x07{BIDI}gnp.exe")
    finally:
        terminal.stop()
    logger.warning("not shown either: stopped")
    assert stream.getvalue() == "WARNING: row 3: http://a.test/\\x1b]0;owned\\x07\\u202egnp.exe\n"


def test_the_mode_and_the_log_file() -> None:
    assert Mode.choose(verbose=False, quiet=False, tty=True) is Mode.BAR
    assert Mode.choose(verbose=False, quiet=False, tty=False) is Mode.LOG
    assert Mode.choose(verbose=True, quiet=False, tty=True) is Mode.LOG
    assert Mode.choose(verbose=False, quiet=True, tty=False) is Mode.QUIET
    assert log_file(Path("job"), Path("x/results.jsonl")) == Path("job/crawl.log")
    assert log_file(None, Path("x/audit.jsonl")) == Path("x/audit.log")


def test_the_demo_on_a_terminal(tmp_path: Path) -> None:
    code, screen, stdout = _on_a_terminal(["demo"], tmp_path)
    assert code == 0, screen[-3000:] + stdout
    assert "16/16 rows" in screen and "[scrapy" not in screen
    assert stdout.splitlines()[-2] == f"The crawl's log: {tmp_path}/demo-job/crawl.log"
    assert "the demo ran as designed" in stdout.splitlines()[-1]
    assert "Dumping Scrapy stats" in (tmp_path / "demo-job" / "crawl.log").read_text("utf-8")
