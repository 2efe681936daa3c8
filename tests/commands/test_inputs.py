"""Every input kind as a user gives it to `urlcheck check`: its kind found from the content, its
rows numbered as the input numbers them, and what is not an input refused in one line."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openpyxl

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

FAST = ["-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False", "-L", "WARNING"]


def urlcheck(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """``urlcheck ARGS`` as a user runs it in ``cwd``, ``stdin`` piped in (else no input)."""
    done = subprocess.run(
        [sys.executable, "-m", "urlcheck", *args],
        cwd=cwd,
        env=os.environ,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def results(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text("utf-8").splitlines()
    return sorted((json.loads(line) for line in lines), key=lambda r: r["row"])


def test_a_plain_list_with_comments_keeps_its_line_numbers(site: SiteServer, tmp_path):
    ok, moved = site.url("127.0.0.7", "/ok"), site.url("127.0.0.7", "/redirect/302?to=/ok")
    # a comma inside a URL: a list's line is the URL, whole
    text = f"# URLs to check\n{ok}\n\n  # the old one\n{moved}&x=1,2\n"
    (tmp_path / "urls.txt").write_text(text, encoding="utf-8")
    done = urlcheck("check", "urls.txt", "--jobdir", "job", *FAST, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = results(tmp_path / "job" / "results.jsonl")
    assert [(r["row"], r["url"], r["final_status"]) for r in rows] == [
        (2, ok, 200),
        (5, f"{moved}&x=1,2", 200),
    ]


def test_stdin_is_copied_into_the_job_and_resumes_from_it(site: SiteServer, tmp_path):
    ok = site.url("127.0.0.7", "/ok")
    piped = f"{ok}?a\n{ok}?b\n".encode()
    done = urlcheck("check", "-", "--jobdir", "job", *FAST, cwd=tmp_path, stdin=piped)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [r["row"] for r in results(tmp_path / "job" / "results.jsonl")] == [1, 2]
    assert (tmp_path / "job" / "input.csv").read_bytes() == piped
    # the job runs again from its own copy, whatever is (not) piped in
    again = urlcheck("check", "--jobdir", "job", *FAST, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert [r["row"] for r in results(tmp_path / "job" / "results.jsonl")] == [1, 2]
    # without --jobdir: the default job of standard input in this directory
    default = urlcheck("check", "-", *FAST, cwd=tmp_path, stdin=piped)
    assert default.returncode == 0, default.stderr[-2000:]
    (jobdir,) = (tmp_path / ".urlcheck" / "jobs").iterdir()
    assert jobdir.name.startswith("stdin-")
    assert len(results(jobdir / "results.jsonl")) == 2


def test_empty_stdin_is_refused_in_one_line(tmp_path):
    done = urlcheck("check", "-", "--no-job", *FAST, cwd=tmp_path, stdin=b"")
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == ["urlcheck: standard input: the file is empty"]
    assert "Traceback" not in done.stderr


def test_a_gzipped_sitemap_carries_lastmod_into_input(site: SiteServer, tmp_path):
    ok, moved = site.url("127.0.0.7", "/ok"), site.url("127.0.0.7", "/redirect/301?to=/ok")
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<url><loc>{ok}</loc><lastmod>2024-05-06</lastmod></url>\n"
        "<url><lastmod>2024-01-01</lastmod></url>\n"  # no <loc>
        f"<url><loc>{moved.replace('&', '&amp;')}</loc></url>\n"
        "</urlset>\n"
    )
    (tmp_path / "sitemap.xml.gz").write_bytes(gzip.compress(xml.encode()))
    done = urlcheck("check", "sitemap.xml.gz", "--jobdir", "job", *FAST, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = results(tmp_path / "job" / "results.jsonl")
    assert [(r["row"], r["error"], r["final_status"], r["input"]) for r in rows] == [
        (1, None, 200, {"lastmod": "2024-05-06"}),
        (2, "invalid_url", None, {"lastmod": "2024-01-01"}),
        (3, None, 200, {}),
    ]
    assert (rows[2]["status"], rows[2]["hops"]) == (301, 1)


def test_a_file_that_is_no_input_is_refused_in_one_line(tmp_path):
    (tmp_path / "page.xml").write_text("<html><body>not a sitemap</body></html>")
    done = urlcheck("check", "page.xml", "--no-job", *FAST, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "urlcheck: page.xml: an HTML page (its root is <html>), not a sitemap (<urlset> or "
        "<sitemapindex>) nor a list of URLs"
    ]


def test_a_named_sheet_of_a_workbook_keeps_the_sheets_row_numbers(site: SiteServer, tmp_path):
    ok, moved = site.url("127.0.0.7", "/ok"), site.url("127.0.0.7", "/redirect/301?to=/ok")
    wb = openpyxl.Workbook()
    wb.active.title = "Read me"
    wb.active["A1"] = "the links are on the next sheet"
    links = wb.create_sheet("Links")
    links.append(["Old URL", "New URL", "Owner"])
    links.append([ok, None, "web"])
    links.append([])  # a blank row keeps its number
    links.append([moved, ok, "seo"])
    wb.save(tmp_path / "redirects.xlsx")
    done = urlcheck(
        "check", "redirects.xlsx", "--sheet", "Links", "--jobdir", "job", *FAST, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = results(tmp_path / "job" / "results.jsonl")
    assert [(r["row"], r["url"], r["verdict"], r["input"]) for r in rows] == [
        (2, ok, None, {"Owner": "web"}),
        (4, moved, "pass", {"Owner": "seo"}),
    ]
    missing = urlcheck("check", "redirects.xlsx", "--sheet", "Nope", "--no-job", "-q", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        "urlcheck: redirects.xlsx: no sheet named 'Nope' (sheets: 'Read me', 'Links')"
    ]
