"""Every input kind as a user gives it to `urlcheck check`: its kind found from the content, its
rows numbered as the input numbers them, and what is not an input refused in one line."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openpyxl
import pytest

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


def test_other_stdin_for_a_job_is_refused_in_terms_of_stdin(site: SiteServer, tmp_path):
    ok = site.url("127.0.0.7", "/ok")
    done = urlcheck("check", "-", "--jobdir", "job", *FAST, cwd=tmp_path, stdin=f"{ok}\n".encode())
    assert done.returncode == 0, done.stderr[-2000:]
    # a re-check goes on with the same job, so it must be the same input
    again = urlcheck(
        "check", "-", "--jobdir", "job", "-a", "recheck=2xx", *FAST, cwd=tmp_path,
        stdin=f"{ok}?other\n".encode(),
    )  # fmt: skip
    assert again.returncode == 2, again.stderr[-2000:]
    (line,) = again.stderr.strip().splitlines()
    # it named job/stdin.input, a file the user never gave, and said to leave out -a csv
    assert line.startswith("urlcheck: standard input is not the input job job was started with")
    assert line.endswith(
        "To go on with the job's own copy of its input, leave out - (--jobdir job alone); to "
        "check what is piped in, cancel the job first (scrapy job cancel job) or use another "
        "--jobdir"
    )


def test_job_status_finds_the_default_job_of_stdin_and_of_a_sitemap_url(site: SiteServer, tmp_path):
    ok, sitemap = site.url("127.0.0.7", "/ok"), site.url("127.0.0.7", "/sitemap.xml?n=2")
    for given, piped in (("-", f"{ok}\n".encode()), (sitemap, None)):
        done = urlcheck("check", given, *FAST, cwd=tmp_path, stdin=piped)
        assert done.returncode == 0, done.stderr[-2000:]
        # "-: no such job directory", and "https:/127.0.0.7:.../sitemap.xml?n=2" for the URL
        status = urlcheck("job", "status", given, "--json", cwd=tmp_path)
        assert status.returncode == 0, status.stderr[-2000:]
        shown = json.loads(status.stdout)
        assert (shown["state"], shown["done_rows"]) == ("done", 2 if piped is None else 1)
        assert Path(shown["jobdir"]).parent == tmp_path / ".urlcheck" / "jobs"


def test_empty_stdin_is_refused_in_one_line(tmp_path):
    done = urlcheck("check", "-", "--no-job", *FAST, cwd=tmp_path, stdin=b"")
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == ["urlcheck: standard input: the file is empty"]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("name", "encoding"),
    [("sitemap.xml.gz", "UTF-8"), ("sitemap.xml", "UTF-16")],
    ids=["gzip", "utf16"],  # UTF-16: what Windows tools save as "Unicode"
)
def test_a_sitemap_carries_lastmod_into_input(site: SiteServer, tmp_path, name, encoding):
    ok, moved = site.url("127.0.0.7", "/ok"), site.url("127.0.0.7", "/redirect/301?to=/ok")
    xml = (
        f'<?xml version="1.0" encoding="{encoding}"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<url><loc>{ok}</loc><lastmod>2024-05-06</lastmod></url>\n"
        "<url><lastmod>2024-01-01</lastmod></url>\n"  # no <loc>
        f"<url><loc>{moved.replace('&', '&amp;')}</loc></url>\n"
        "</urlset>\n"
    )
    data = xml.encode(encoding.lower())
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    done = urlcheck("check", name, "--jobdir", "job", *FAST, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = results(tmp_path / "job" / "results.jsonl")
    assert [(r["row"], r["error"], r["final_status"], r["input"]) for r in rows] == [
        (1, None, 200, {"lastmod": "2024-05-06"}),
        (2, "invalid_url", None, {"lastmod": "2024-01-01"}),
        (3, None, 200, {}),
    ]
    assert (rows[2]["status"], rows[2]["hops"]) == (301, 1)


def test_a_sitemap_of_which_no_entry_can_be_read_is_an_input_error(tmp_path):
    # blank lines before <?xml, as some CMS plugins write: the run ended "finished", exit 0
    xml = '\n\n<?xml version="1.0" encoding="UTF-8"?>\n<urlset><url><loc>http://127.0.0.2:9/</loc></url></urlset>'
    (tmp_path / "sitemap.xml").write_text(xml, encoding="utf-8")
    done = urlcheck("check", "sitemap.xml", "--no-job", *FAST, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "urlcheck: sitemap.xml: not well-formed XML at line 3 (XML declaration allowed only at "
        "the start of the document, line 3, column 6); no <url> entry could be read"
    ]


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
    # an unfinished job (as a Ctrl-C leaves it) resumes on its sheet, and on no other
    meta = json.loads((tmp_path / "job" / "meta.json").read_text())
    assert meta["input_sheet"] == "Links"
    (tmp_path / "job" / "meta.json").write_text(json.dumps({**meta, "state": "paused"}))
    lines = (tmp_path / "job" / "results.jsonl").read_text().splitlines()
    (tmp_path / "job" / "results.jsonl").write_text(lines[0] + "\n")
    other = urlcheck("check", "--jobdir", "job", "--sheet", "Read me", "-q", cwd=tmp_path)
    assert other.returncode == 2, other.stderr[-2000:]
    assert "was started on the sheet 'Links', not 'Read me'" in other.stderr
    again = urlcheck("check", "--jobdir", "job", *FAST, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert [r["row"] for r in results(tmp_path / "job" / "results.jsonl")] == [2, 4]
    missing = urlcheck("check", "redirects.xlsx", "--sheet", "Nope", "--no-job", "-q", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        "urlcheck: redirects.xlsx: no sheet named 'Nope' (sheets: 'Read me', 'Links')"
    ]


def test_a_sitemap_index_by_url_is_fetched_politely_and_kept_in_the_job(site: SiteServer, tmp_path):
    tag = f"t{os.getpid()}x{time.monotonic_ns()}"  # this test's requests in the shared site log
    index = site.url("127.0.0.9", f"/sitemap-index.xml?parts=2&n=2&gzip=1&tag={tag}")
    polite = ["-s", "ROBOTSTXT_OBEY=True", "-s", "DOWNLOAD_DELAY=0.2"]
    done = urlcheck("check", index, "--jobdir", "job", *FAST, *polite, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = results(tmp_path / "job" / "results.jsonl")
    # rows numbered across the index's sitemaps, in its order; lastmod carried into input
    assert [(r["row"], r["url"].split(":", 2)[2], r["final_status"], r["input"]) for r in rows] == [
        (1, f"{site.port}/ok?r=1", 200, {"lastmod": "2024-01-02"}),
        (2, f"{site.port}/ok?r=2", 200, {"lastmod": "2024-01-03"}),
        (3, f"{site.port}/ok?r=3", 200, {"lastmod": "2024-01-04"}),
        (4, f"{site.port}/ok?r=4", 200, {"lastmod": "2024-01-05"}),
    ]
    # the index and its sitemaps are kept in the job; its copy of the input is the index
    assert len(list((tmp_path / "job" / "sitemaps").glob("*.xml"))) == 3
    assert gzip.decompress((tmp_path / "job" / "input.csv").read_bytes()).count(b"<sitemap>") == 2
    # fetched by the crawl: robots.txt first, one request at a time, the delay kept
    log = [r for r in site.log() if r["host"] == "127.0.0.9"]
    paths = [r["path"] for r in log]
    first = paths.index(f"/sitemap-index.xml?parts=2&n=2&gzip=1&tag={tag}")
    assert "/robots.txt" in paths[:first]
    fetched = [r for r in log if r["path"].startswith("/sitemap")][-3:]
    assert [r["path"].split("?")[0] for r in fetched] == [
        "/sitemap-index.xml",
        *["/sitemap.xml"] * 2,
    ]
    assert all(b["t_arrival"] - a["t_departure"] >= 0.1 for a, b in itertools.pairwise(fetched))
    # the job runs again from its own directory alone
    again = urlcheck("check", "--jobdir", "job", *FAST, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert [r["row"] for r in results(tmp_path / "job" / "results.jsonl")] == [1, 2, 3, 4]


def test_a_sitemap_url_that_cannot_be_fetched_is_one_line(site: SiteServer, tmp_path):
    gone = site.url("127.0.0.9", "/status/404")
    done = urlcheck("check", gone, "--no-job", "-q", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{gone}: the sitemap could not be fetched (HTTP 404)" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("job", [["--no-job"], ["--jobdir", "job"]], ids=["no-job", "job"])
def test_a_sitemap_url_answering_a_page_is_one_line_naming_the_url(site: SiteServer, tmp_path, job):
    # it named the fetched file ("/tmp/urlcheck-sitemaps-.../07bd....xml" or "job/input.csv")
    # and called the page "XML" (its <!doctype html> hid its <html> root)
    page = site.url("127.0.0.9", "/ok")
    done = urlcheck("check", page, *job, "-q", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert (
        f"{page}: an HTML page (its root is <html>), not a sitemap (<urlset> or <sitemapindex>) "
        "nor a list of URLs"
    ) in done.stderr
    assert "Traceback" not in done.stderr


def test_more_rows_than_the_cap_end_the_run_before_a_request(site: SiteServer, tmp_path):
    # A sitemap index's rows are counted once its sitemaps are fetched: the cap holds there too.
    tag = f"t{os.getpid()}x{time.monotonic_ns()}"
    index = site.url("127.0.0.9", f"/sitemap-index.xml?parts=2&n=3&tag={tag}")
    before = len(site.log())
    done = urlcheck("check", index, "--no-job", *FAST, "-s", "URLCHECK_MAX_ROWS=5", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{index}: more than 5 rows, the most URLCHECK_MAX_ROWS allows" in done.stderr
    fetched = [r["path"].split("?")[0] for r in site.log()[before:]]
    assert fetched.count("/sitemap.xml") == 2 and "/ok" not in fetched, fetched
    (tmp_path / "urls.txt").write_text(
        "".join(site.url("127.0.0.9", f"/ok?cap={tag}&r={n}\n") for n in range(1, 7))
    )
    capped = urlcheck(
        "check", "urls.txt", "--no-job", *FAST, "-s", "URLCHECK_MAX_ROWS=5", cwd=tmp_path
    )
    assert capped.returncode == 2
    assert "urls.txt: more than 5 rows, the most URLCHECK_MAX_ROWS allows" in capped.stderr
    assert not [r for r in site.log() if f"cap={tag}" in r["path"]]
    # Six rows under a cap of six: checked.
    fits = urlcheck(
        "check", "urls.txt", "--no-job", *FAST, "-s", "URLCHECK_MAX_ROWS=6", cwd=tmp_path
    )
    assert fits.returncode == 0, fits.stderr[-2000:]
    assert len(results(tmp_path / "results.jsonl")) == 6


def test_an_index_of_which_no_sitemap_can_be_read_ends_as_an_input_error(
    site: SiteServer, tmp_path
):
    missing = [site.url("127.0.0.9", f"/status/404?part={j}") for j in (1, 2)]
    (tmp_path / "index.xml").write_text(
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in missing)
        + "</sitemapindex>"
    )
    done = urlcheck("check", "index.xml", "--no-job", "-q", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "the sitemap could not be fetched (HTTP 404)" in done.stderr
    assert "index.xml: none of the 2 sitemaps it names could be read" in done.stderr
    assert "Traceback" not in done.stderr
