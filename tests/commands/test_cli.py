"""The command line as users meet it: `urlcheck` from any directory, `scrapy` in the checkout;
bad input ends the run with one line and exit code 2; exit codes come through unchanged."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests import processes
from tests.processes import REPO, scrapy_argv
from urlcheck import cli
from urlcheck.cli import check_argv
from urlcheck.jobs.lock import JobLock

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

COMMANDS = sorted(
    p.stem for p in (REPO / "urlcheck" / "commands").glob("*.py") if p.stem not in ("__init__",)
)


def scrapy(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return run(scrapy_argv(*args), cwd)


def urlcheck(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``urlcheck ARGS`` (as ``python -m urlcheck``, the console script's code) run in `cwd`."""
    return run([sys.executable, "-m", "urlcheck", *args], cwd)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``argv`` as a user runs it: no project environment, only the directory it is run in."""
    return processes.run(argv, cwd=cwd, env=os.environ)


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


def test_scrapy_demo_in_the_checkout(tmp_path: Path) -> None:
    done = scrapy("demo", "--jobdir", str(tmp_path / "job"), "-s", "LOG_LEVEL=WARNING")
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]  # it fails rows on purpose
    assert "16 rows checked" in done.stdout
    assert "Rows 3, 6, 12, 14, 15 and 16 fail their verdicts on purpose" in done.stdout
    assert "[loop]" in done.stdout and "[temporary_redirect]" in done.stdout
    assert (tmp_path / "job" / "results.jsonl").read_text().count("\n") == 16


# --- urlcheck, the console script ----------------------------------------------------------------


def test_help_lists_every_command_with_examples(tmp_path: Path) -> None:
    done = urlcheck("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("usage: urlcheck <command> [options] [args]\n")
    # every module of urlcheck/commands is listed (crawl through `check`)
    for name in ["check", *(c for c in COMMANDS if c != "crawl")]:
        assert f"\n  {name} " in out, name
    assert "\nexamples:\n  urlcheck demo" in out
    assert "urlcheck check urls.csv --jobdir jobs/site" in out
    assert "6 the job is locked" in out
    assert "Warning" not in done.stderr
    nothing = urlcheck(cwd=tmp_path)
    assert nothing.returncode == 2 and nothing.stdout == out


def test_the_command_table_names_every_command_and_its_summary() -> None:
    listed = {*cli.COMMANDS.values(), *cli.HIDDEN.values()}
    assert {info.module for info in listed} == {f"urlcheck.commands.{c}" for c in COMMANDS}
    for name, info in cli.COMMANDS.items():
        if name != "check":  # `check` is `crawl check`, in its own words
            assert info.summary == cli.create_command(name).short_desc(), name


# What `urlcheck ARGS` loaded, run in a fresh process.
LOADED = """
import json, sys
from urlcheck.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("scrapy", "urlcheck"))))
"""


@pytest.mark.parametrize(
    ("args", "loaded"),
    [
        (["--help"], {"urlcheck", "urlcheck.cli"}),
        (["check", "--help"], {"urlcheck", "urlcheck.cli"}),
        (["--version"], {"urlcheck", "urlcheck.cli"}),
    ],
)
def test_help_imports_only_what_it_shows(tmp_path: Path, args: list[str], loaded: set[str]) -> None:
    done = run([sys.executable, "-c", LOADED, *args], tmp_path)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout.splitlines()[-1])) == loaded


def test_a_commands_help_imports_no_other_command(tmp_path: Path) -> None:
    done = run([sys.executable, "-c", LOADED, "demo", "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    assert "urlcheck.commands.demo" in modules and "urlcheck.commands.job" not in modules
    assert not any(m.startswith("urlcheck.cluster") for m in modules)


@pytest.mark.parametrize("name", ["check", "job", "demo"])
def test_command_help_is_in_urlcheck_terms(tmp_path: Path, name: str) -> None:
    done = urlcheck(name, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: urlcheck {name} "), done.stdout[:200]
    assert "scrapy " + name not in done.stdout.splitlines()[0]


def test_unknown_command_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    done = urlcheck("chek", "urls.csv", cwd=tmp_path)
    assert done.returncode == 2
    shown = ", ".join(["check", *(c for c in COMMANDS if c != "crawl")])
    assert done.stderr == f"urlcheck: unknown command 'chek'; the commands are: {shown}\n"


def test_check_arguments_become_scrapy_crawl_arguments() -> None:
    argv = check_argv([
        "in.csv", "--out", "r.jsonl", "--jobdir", "j", "-o", "r.csv", "-s", "A=1", "-a", "k=v",
        "-L", "WARNING", "--logfile", "log.txt", "-O", "over.json", "-q", "--config", "u.toml",
    ])  # fmt: skip
    assert argv == [
        "crawl", "check", "-a", "csv=in.csv", "-a", "out=r.jsonl", "-s", "JOBDIR=j",
        "-o", "r.csv", "-s", "A=1", "--config", "u.toml", "-a", "k=v", "--quiet", "-L", "WARNING",
        "--logfile", "log.txt", "-O", "over.json",
    ]  # fmt: skip
    with pytest.raises(SystemExit):
        check_argv(["--out", "r.jsonl"])  # no CSV and no job to resume
    assert check_argv(["--jobdir", "j"]) == ["crawl", "check", "-s", "JOBDIR=j"]


def test_check_refuses_what_it_would_otherwise_drop_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("url\nhttp://127.0.0.2:9/\n", encoding="utf-8")
    # `urlcheck check *.csv`: Scrapy's crawl printed its help only, saying nothing of the why
    done = urlcheck("check", "a.csv", "b.csv", "--no-job", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "urlcheck check: error: one INPUT at a time; unexpected argument(s): b.csv"
    )
    # --no-job won over --jobdir without a word: the results went elsewhere than asked
    done = urlcheck("check", "a.csv", "--jobdir", "job", "--no-job", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "urlcheck check: error: --jobdir and --no-job exclude each other"
    )
    assert check_argv(["a.csv", "--no-job", "-O", "o.json", "--nolog"]) == [
        "crawl", "check", "-a", "csv=a.csv", "--no-job", "-O", "o.json", "--nolog",
    ]  # fmt: skip
    # scrapy crawl itself names the extra argument too
    done = scrapy("crawl", "check", "-a", f"csv={tmp_path / 'a.csv'}", "b.csv")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith(
        "error: one spider at a time; unexpected argument(s): b.csv (the input is -a csv=PATH)"
    )
    assert not (tmp_path / "results.jsonl").exists()


def test_check_from_any_directory_keeps_the_exit_codes(site: SiteServer, tmp_path: Path) -> None:
    ok, moved = site.url("127.0.0.7", "/ok"), site.url("127.0.0.7", "/redirect/302?to=/ok")
    (tmp_path / "urls.csv").write_text(f"url,expected\n{ok},\n{moved},{ok}\n", encoding="utf-8")
    fast = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False", "-L", "WARNING"]
    done = urlcheck("check", "urls.csv", "--jobdir", "job", "-o", "out.csv", *fast, cwd=tmp_path)
    assert done.returncode == 3, done.stderr[-2000:]  # finished with a failed verdict
    rows = read_jsonl(tmp_path / "job" / "results.jsonl")
    assert sorted((r["row"], r["verdict"]) for r in rows) == [(1, None), (2, "fail")]
    with (tmp_path / "out.csv").open(newline="") as exported:
        assert len(list(csv.DictReader(exported))) == 2

    status = urlcheck("job", "status", "job", "--json", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["state"] == "done"
    report = urlcheck("job", "report", "job", "-o", "report.md", cwd=tmp_path)  # added later
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "report.md").read_text("utf-8").startswith("#")
    pause = urlcheck("job", "pause", "job", cwd=tmp_path)
    assert pause.returncode == 7  # no crawl is running it
    assert pause.stderr.startswith("urlcheck: no crawl is running job job")

    again = urlcheck("check", "urls.csv", "--out", "plain.jsonl", *fast, cwd=tmp_path)
    assert again.returncode == 3, again.stderr[-2000:]
    assert len((tmp_path / "plain.jsonl").read_text().splitlines()) == 2


def test_a_cancelled_check_is_exit_code_5(site: SiteServer, tmp_path: Path) -> None:
    urls = "".join(f"{site.url('127.0.0.8', f'/delay/0.5?r={row}')}\n" for row in range(40))
    (tmp_path / "urls.csv").write_text(f"url\n{urls}", encoding="utf-8")
    argv = [sys.executable, "-m", "urlcheck", "check", "urls.csv", "--jobdir", "job", "-L", "INFO"]
    with (tmp_path / "err.txt").open("wb") as err:
        crawl = processes.start(argv, cwd=tmp_path, env=os.environ, stderr=err)
    try:
        deadline = time.monotonic() + 60
        while not _results_lines(tmp_path / "job" / "results.jsonl"):  # it is checking
            assert crawl.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        cancel = urlcheck("job", "cancel", "job", cwd=tmp_path)
        assert cancel.returncode == 0, cancel.stderr
        assert crawl.wait(timeout=60) == 5, (tmp_path / "err.txt").read_text()[-3000:]
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
    assert 1 <= _results_lines(tmp_path / "job" / "results.jsonl") < 40


def _results_lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def test_check_of_a_locked_job_is_exit_code_6(tmp_path: Path) -> None:
    (tmp_path / "urls.csv").write_text("url\nhttp://127.0.0.2:9/\n", encoding="utf-8")
    (tmp_path / "job").mkdir()
    with JobLock(tmp_path / "job"):
        done = urlcheck("check", "urls.csv", "--jobdir", "job", cwd=tmp_path)
    assert done.returncode == 6, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("urlcheck: ")]
    assert len(lines) == 1 and "is in use by process" in lines[0], done.stderr[-2000:]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.csv", "missing.csv: no such file"),
        (lambda d: _write(d / "e.csv", b""), "e.csv: the file is empty"),
    ],
)
def test_check_bad_input_is_exit_code_2(
    tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    done = urlcheck("check", str(make(tmp_path)), cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("urlcheck: ")]
    assert len(lines) == 1 and message in lines[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_urlcheck_demo_runs_from_any_directory(tmp_path: Path) -> None:
    done = urlcheck("demo", "-s", "LOG_LEVEL=WARNING", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "the demo ran as designed" in done.stdout.splitlines()[-1]
    assert "Demo site on 127.0.0.1 port " in done.stdout
    assert "16 rows checked" in done.stdout
    rows = read_jsonl(tmp_path / "demo-job" / "results.jsonl")
    assert {r["url"].split("/")[2].split(":")[0] for r in rows if r["status"]} == {
        "old.localhost",
        "new.localhost",
        "busy.localhost",
    }


def test_check_resumes_a_job_from_its_directory_alone(site: SiteServer, tmp_path: Path) -> None:
    ok, moved = site.url("127.0.0.7", "/ok"), site.url("127.0.0.7", "/redirect/302?to=/ok")
    (tmp_path / "urls.csv").write_text(f"url,expected\n{ok},\n{moved},{ok}\n", encoding="utf-8")
    fast = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False", "-L", "WARNING"]
    first = urlcheck("check", "urls.csv", "--jobdir", "job", *fast, cwd=tmp_path)
    assert first.returncode == 3, first.stderr[-2000:]
    (tmp_path / "urls.csv").unlink()  # the job keeps its own copy of the input
    again = urlcheck("check", "--jobdir", "job", *fast, cwd=tmp_path)
    assert again.returncode == 3, again.stderr[-2000:]
    rows = read_jsonl(tmp_path / "job" / "results.jsonl")
    assert sorted((r["row"], r["verdict"]) for r in rows) == [(1, None), (2, "fail")]
    missing = urlcheck("check", cwd=tmp_path)
    assert missing.returncode == 2
    assert "name the CSV to check, or --jobdir DIR" in missing.stderr


# A crawl loaded these only to leave them unused: 40 MB resident and 1,146 modules against 908
# for `urlcheck check urls.csv -o results.csv`, which the million-row figure (100 MB) and the
# resume's start-up (2 s) pay for. Each comes with what needs it (-o x.xlsx, -o x.md, metrics).
ON_DEMAND = """
import json, sys
from urlcheck.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
heavy = ("openpyxl", "jinja2", "prometheus_client")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def test_a_crawl_imports_no_workbook_template_or_metrics_library_it_does_not_use(
    tmp_path: Path,
) -> None:
    (tmp_path / "urls.csv").write_text("url\nhttp://127.0.0.2:9/\n")  # refused at once
    args = ["check", "urls.csv", "-o", "results.csv", "-s", "LOG_LEVEL=ERROR"]
    done = run([sys.executable, "-c", ON_DEMAND, *args], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
    assert "row,url" in (tmp_path / "results.csv").read_text()[:200]
    workbook = run([sys.executable, "-c", ON_DEMAND, *args[:2], "-o", "r.xlsx"], tmp_path)
    assert json.loads(workbook.stdout.splitlines()[-1]) == ["openpyxl"], workbook.stderr
