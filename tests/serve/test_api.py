"""The API through Starlette's TestClient: every status the issue names, the headers, no server
path in any answer, concurrent control requests all applied, pages of results by offset."""

from __future__ import annotations

import gzip
import io
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openpyxl
import pytest

from tests.reports.reportrows import result
from tests.serve.conftest import BASE, Browserish, csrf_of
from urlcheck.jobs.files import CONTROL_FILE, Control, JobMeta, JobState
from urlcheck.jobs.landings import ManyToOneSeen
from urlcheck.jobs.lock import JobLock
from urlcheck.serve.config import ServeConfig
from urlcheck.serve.middleware import CSP
from urlcheck.serve.record import ServeRecord
from urlcheck.serve.server import address
from urlcheck.serve.sites import csv_sites

CSV = "url,expected\nhttp://127.0.0.2:9/a,http://127.0.0.2:9/b\nhttp://127.0.0.3:9/c,\n"


def result_line(row: int, **fields) -> str:
    """Row n: on 127.0.0.2 or .3 by parity, no final status (a timeout) every third row,
    failing every fourth."""
    url = f"http://127.0.0.{2 + row % 2}:9/r{row}"
    final = 200 if row % 3 else None
    line = result(
        row,
        url,
        status=301,
        final_status=final,
        error=None if final else "timeout",
        verdict="fail" if row % 4 == 0 else "pass",
        chain=[{"url": url, "status": 301, "location": "x"}],
    )
    line.update(fields)
    return json.dumps(line) + "\n"


def external_job(root: Path, name: str, rows: int) -> Path:
    """A job made by `urlcheck check --jobdir ROOT/NAME`: meta.json and results, no serve.json."""
    jobdir = root / name
    jobdir.mkdir(parents=True)
    results = jobdir / "results.jsonl"
    results.write_text("".join(result_line(r) for r in range(1, rows + 1)), encoding="utf-8")
    JobMeta(
        state=JobState.DONE,
        total_rows=rows,
        done_rows=rows,
        results_path=str(results),
        results_bytes=results.stat().st_size,
        created_at="2026-12-01T00:00:00.000Z",
        finished_at="2026-12-01T00:01:00.000Z",
        input_path="/srv/secret/place/urls.csv",
    ).save(jobdir)
    (jobdir / "input.csv").write_text(CSV, encoding="utf-8")
    return jobdir


def test_upload_creates_a_job_and_its_status_names_no_server_path(make_client, tmp_path):
    client = make_client()
    page = Browserish(client)
    answer = page.upload(
        CSV, filename="migration.csv", user_agent="googlebot", max_hops="4", name="Spring move"
    )
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert set(body) == {"id", "url"} and body["url"] == f"/jobs/{body['id']}"
    assert answer.headers["location"] == body["url"]
    status = client.get(f"/api/jobs/{body['id']}").json()
    assert status["state"] == "queued" and status["total_rows"] == 2
    assert status["name"] == "Spring move" and status["csv_name"] == "migration.csv"
    assert status["options"] == {
        "user_agent": "googlebot",
        "method": "GET",
        "max_hops": 4,
        "temporary_redirect": "fail",
        "sheet": "",
    }
    assert status["actions"] == {"pause": True, "resume": False, "cancel": True, "rerun": False}
    # The page's line of options leaves out one not given (a CSV has no sheet).
    shown = re.search(r'<span id="options">(.*?)</span>', client.get(body["url"]).text)
    assert (
        shown
        and shown[1] == "user_agent googlebot, method GET, max_hops 4, temporary_redirect fail"
    )
    listed = client.get("/api/jobs").json()["jobs"]
    assert [j["id"] for j in listed] == [body["id"]]
    external_job(tmp_path / "jobs", "nightly-1a2b3c4d", 5)
    answers = [
        client.get("/api/jobs").text,
        client.get(f"/api/jobs/{body['id']}").text,
        client.get("/api/jobs/nightly-1a2b3c4d").text,
        client.get("/api/jobs/nightly-1a2b3c4d/results").text,
        client.get("/").text,
        client.get("/jobs/nightly-1a2b3c4d").text,
    ]
    for text in answers:
        assert str(tmp_path) not in text and "/srv/secret" not in text
    assert "nightly-1a2b3c4d" in answers[0]
    record = json.loads((tmp_path / "jobs" / body["id"] / "serve.json").read_text())
    assert record["sites"] == ["127.0.0.2", "127.0.0.3"]


@pytest.mark.parametrize(
    ("csv", "fields", "message"),
    [
        (b"", {}, "bad.csv: the file is empty"),
        (
            b"\x89PNG\r\n\x1a\n\0\0\0\0",
            {},
            "bad.csv: not a CSV text file, it looks like a PNG image",
        ),
        (b"url\n", {}, "bad.csv: the file has a header but no data rows"),
        (CSV.encode(), {"user_agent": "evil/1.0"}, "user_agent must be one of"),
        (CSV.encode(), {"method": "POST"}, "method must be GET or HEAD"),
        (CSV.encode(), {"max_hops": "-1"}, "max_hops must be a whole number 0-30"),
        (CSV.encode(), {"max_hops": "99"}, "max_hops must be a whole number 0-30"),
        (CSV.encode(), {"temporary_redirect": "ignore"}, "temporary_redirect must be fail or warn"),
        (CSV.encode(), {"s": "URLCHECK_ADDRESS_GUARD_ENABLED=0"}, "unknown form fields: 's'"),
        (CSV.encode(), {"sheet": "URLs"}, "bad.csv: a sheet was named ('URLs') but this is no"),
        (CSV.encode(), {"sheet": "x" * 32}, "sheet: a sheet's name is at most 31 characters"),
        (CSV.encode(), {"settings": "x"}, "unknown form fields: 'settings'"),
    ],
)
def test_a_bad_upload_is_a_400_in_words_and_leaves_no_job(
    make_client, tmp_path, csv, fields, message
):
    client = make_client()
    answer = Browserish(client).upload(csv, filename="bad.csv", **fields)
    assert answer.status_code == 400, answer.text
    assert message in answer.json()["error"]
    assert str(tmp_path) not in answer.text
    assert client.get("/api/jobs").json()["jobs"] == []
    assert [p for p in (tmp_path / "jobs").iterdir() if p.is_dir()] == []


def test_a_sitemaps_url_instead_of_a_file_makes_a_job_that_fetches_nothing_yet(
    make_client, tmp_path
):
    client = make_client()
    page = Browserish(client)
    url = "https://www.example.co.uk/sitemap_index.xml"
    answer = page.post(
        "/api/upload",
        files={"file": ("", b"", "application/octet-stream")},  # no file chosen, as a browser
        data={"sitemap_url": f"  {url} ", "method": "HEAD"},
    )
    assert answer.status_code == 201, answer.text
    job_id = answer.json()["id"]
    record = json.loads((tmp_path / "jobs" / job_id / "serve.json").read_text())
    assert (record["input_url"], record["csv_name"], record["rows"]) == (url, url, 0)
    assert record["sites"] == ["example.co.uk"] and record["options"]["method"] == "HEAD"
    assert not (tmp_path / "jobs" / job_id / "input.csv").exists()
    assert client.get(f"/api/jobs/{job_id}").json()["csv_name"] == url
    # The URL is the user's, but shown as text: no markup from it reaches a page.
    hostile = 'http://x.example/"><img/src=x/onerror=alert(1)>'
    answer = page.post(
        "/api/upload",
        files={"file": ("", b"", "application/octet-stream")},
        data={"sitemap_url": hostile},
    )
    assert answer.status_code == 201, answer.text
    shown = answer.json()["id"]
    for html_page in (client.get(f"/jobs/{shown}").text, client.get("/").text):
        assert "<img" not in html_page
        assert "http://x.example/&#34;&gt;&lt;img/src=x/onerror=alert(1)&gt;" in html_page


@pytest.mark.parametrize(
    ("files", "fields", "message"),
    [
        (
            {"file": ("urls.csv", CSV.encode(), "text/csv")},
            {"sitemap_url": "http://127.0.0.2:9/s.xml"},
            "give an input file or a sitemap's URL, not both",
        ),
        ({}, {"name": "x"}, "no input file in the form"),
        ({}, {"sitemap_url": "ftp://127.0.0.2/s.xml"}, "sitemap_url must be an http(s) URL"),
        ({}, {"sitemap_url": "/etc/passwd"}, "sitemap_url must be an http(s) URL"),
        ({}, {"sitemap_url": "javascript:alert(1)"}, "sitemap_url must be an http(s) URL"),
        ({}, {"sitemap_url": "http://a b.example/"}, "sitemap_url must be an http(s) URL"),
        ({}, {"sitemap_url": "http://x.example/\x1b[31m"}, "sitemap_url must be an http(s) URL"),
    ],
    ids=["both", "neither", "ftp", "path", "javascript", "space", "control"],
)
def test_a_bad_sitemaps_url_is_a_400_and_leaves_no_job(
    make_client, tmp_path, files, fields, message
):
    client = make_client()
    no_file = {"file": ("", b"", "application/octet-stream")}  # as a browser sends it
    answer = Browserish(client).post("/api/upload", files=files or no_file, data=fields)
    assert answer.status_code == 400, answer.text
    assert message in answer.json()["error"]
    assert [p for p in (tmp_path / "jobs").iterdir() if p.is_dir()] == []


def test_a_serve_json_naming_a_local_path_as_its_sitemap_is_refused(tmp_path):
    for value in ("/etc/passwd", "file:///etc/passwd", "http://x.example/\n-a", 7):
        with pytest.raises(ValueError, match="input_url must be an http"):
            ServeRecord.from_dict({"id": "a", "input_url": value})
    assert ServeRecord.from_dict({"id": "a"}).input_url == ""


SITEMAP_NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
URLSET = (
    f"<?xml version='1.0'?>\n<urlset {SITEMAP_NS}>"
    "<url><loc>http://127.0.0.2:9/a</loc><lastmod>2026-01-02</lastmod></url>"
    "<url><loc>http://shop.example.co.uk/c</loc></url></urlset>\n"
).encode()


def _workbook(tmp_path: Path) -> bytes:
    book = openpyxl.Workbook()
    sheet: Any = book.active
    for cells in (["url", "expected"], ["http://127.0.0.2:9/a", "http://www.example.co.uk/b"]):
        sheet.append(cells)
    sheet.append(["http://127.0.0.3:9/c", None])
    book.save(tmp_path / "urls.xlsx")
    return (tmp_path / "urls.xlsx").read_bytes()


@pytest.mark.parametrize(
    ("kind", "filename", "rows", "sites"),
    [
        ("list", "urls.txt", 2, ["127.0.0.2", "127.0.0.3"]),
        ("sitemap", "sitemap.xml", 2, ["127.0.0.2", "example.co.uk"]),
        ("sitemap.gz", "export.dat", 2, ["127.0.0.2", "example.co.uk"]),
        ("xlsx", "urls.xlsx", 2, ["127.0.0.2", "127.0.0.3", "example.co.uk"]),
    ],
)
def test_every_kind_of_input_file_is_an_upload(make_client, tmp_path, kind, filename, rows, sites):
    data = {
        "list": b"# from the old site\nhttp://127.0.0.2:9/a\nhttp://127.0.0.3:9/c\n",
        "sitemap": URLSET,
        "sitemap.gz": gzip.compress(URLSET, mtime=0),
        "xlsx": _workbook(tmp_path) if kind == "xlsx" else b"",
    }[kind]
    client = make_client()
    answer = Browserish(client).upload(data, filename=filename)  # the name says nothing
    assert answer.status_code == 201, answer.text
    job_id = answer.json()["id"]
    status = client.get(f"/api/jobs/{job_id}").json()
    assert status["total_rows"] == rows and status["csv_name"] == filename
    # The cross-job politeness reads the sites of any kind (here, as the upload found them) ...
    record = json.loads((tmp_path / "jobs" / job_id / "serve.json").read_text())
    assert record["sites"] == sites
    # ... and again from the job's input after a restart (serve.sites.csv_sites).
    assert csv_sites(tmp_path / "jobs" / job_id / "input.csv") == (rows, set(sites))


def test_a_workbook_upload_reads_the_sheet_it_names(make_client, tmp_path):
    book = openpyxl.Workbook()
    notes: Any = book.active
    notes.title = "Notes"
    notes.append(["written by the SEO team"])
    urls: Any = book.create_sheet("Redirects")
    for cells in (
        ["url"],
        ["http://127.0.0.4:9/a"],
        ["http://127.0.0.5:9/b"],
        ["http://127.0.0.5:9/c"],
    ):
        urls.append(cells)
    book.save(tmp_path / "urls.xlsx")
    client = make_client()
    page = Browserish(client)
    answer = page.upload(
        (tmp_path / "urls.xlsx").read_bytes(), filename="urls.xlsx", sheet="Redirects"
    )
    assert answer.status_code == 201, answer.text
    job_id = answer.json()["id"]
    status = client.get(f"/api/jobs/{job_id}").json()
    assert status["total_rows"] == 3 and status["options"]["sheet"] == "Redirects"
    record = json.loads((tmp_path / "jobs" / job_id / "serve.json").read_text())
    assert record["sites"] == ["127.0.0.4", "127.0.0.5"]
    missing = page.upload((tmp_path / "urls.xlsx").read_bytes(), filename="urls.xlsx", sheet="URLs")
    assert missing.status_code == 400
    assert "urls.xlsx: no sheet named 'URLs' (sheets: " in missing.json()["error"]
    assert "Notes" in missing.json()["error"] and str(tmp_path) not in missing.text


def test_a_sitemap_index_upload_names_its_sitemaps_sites_and_fetches_nothing(make_client, tmp_path):
    # Its rows are counted by its crawl, once that has fetched the sitemaps (0 until then);
    # the sites are those of the sitemaps it names, for politeness across jobs.
    index = (
        f"<sitemapindex {SITEMAP_NS}>"
        "<sitemap><loc>http://www.example.com:9/sitemap-1.xml</loc></sitemap>"
        "<sitemap><loc>http://127.0.0.6:9/sitemap-2.xml.gz</loc></sitemap>"
        "<sitemap><loc>relative.xml</loc></sitemap></sitemapindex>"
    )
    client = make_client()
    answer = Browserish(client).upload(index, filename="sitemap_index.xml")
    assert answer.status_code == 201, answer.text
    job_id = answer.json()["id"]
    record = json.loads((tmp_path / "jobs" / job_id / "serve.json").read_text())
    assert (record["rows"], record["sites"]) == (0, ["127.0.0.6", "example.com"])
    assert csv_sites(tmp_path / "jobs" / job_id / "input.csv") == (0, {"127.0.0.6", "example.com"})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b"<rss version='2.0'><channel/></rss>",
            "bad.xml: XML (its root is <rss>), not a sitemap (<urlset> or <sitemapindex>) nor a "
            "list of URLs",
        ),
        (
            b"<!DOCTYPE x [<!ENTITY a 'b'>]><urlset/>",
            "bad.xml: an XML document with a DTD; a sitemap has none, refused",
        ),
        (gzip.compress(b"just text", mtime=0), "bad.xml: a gzip archive that holds no sitemap"),
        (b"PK\x03\x04 not really a zip", "bad.xml:"),
        (
            f"<sitemapindex {SITEMAP_NS}><sitemap><loc>file:///etc/passwd</loc></sitemap>"
            "<sitemap><loc>part-1.xml</loc></sitemap></sitemapindex>".encode(),
            "bad.xml: a sitemap index that names no http(s) sitemap",
        ),
    ],
    ids=["rss", "dtd", "gzip-of-text", "broken-zip", "index-of-nothing"],
)
def test_an_upload_that_is_no_input_is_a_400_in_the_readers_words(
    make_client, tmp_path, data, message
):
    client = make_client()
    answer = Browserish(client).upload(data, filename="bad.xml")
    assert answer.status_code == 400, answer.text
    assert message in answer.json()["error"]
    assert str(tmp_path) not in answer.text
    assert [p for p in (tmp_path / "jobs").iterdir() if p.is_dir()] == []


def test_uploads_over_the_caps_are_413(make_client, tmp_path):
    client = make_client(max_upload_bytes=2000, max_rows=10)
    page = Browserish(client)
    big = "url\n" + "".join(f"http://127.0.0.2:9/{'x' * 50}{i}\n" for i in range(60))
    assert page.upload(big).status_code == 413
    many = "url\n" + "".join(f"http://127.0.0.2:9/{i}\n" for i in range(11))
    answer = page.upload(many)
    assert answer.status_code == 413 and "more than 10 rows" in answer.json()["error"]
    # A declared length over the cap is refused before the body is read.
    answer = page.post(
        "/api/upload",
        content=b"x" * 10,
        headers={"Content-Type": "multipart/form-data; boundary=b", "Content-Length": "99999999"},
    )
    assert answer.status_code == 413
    # A body of no declared length is cut off as it streams, in the words of the setting.
    answer = page.post(
        "/api/upload",
        content=iter([b"--b\r\n", b"x" * 70_000]),
        headers={"Content-Type": "multipart/form-data; boundary=b"},
    )
    assert answer.status_code == 413
    assert answer.json()["error"] == "the upload is over the limit of 2,000 bytes"
    assert (
        page.upload("url\n" + "".join(f"http://127.0.0.2:9/{i}\n" for i in range(10))).status_code
        == 201
    )
    assert len([p for p in (tmp_path / "jobs").iterdir() if p.is_dir()]) == 1


def test_a_host_header_outside_the_allowlist_is_400(make_client):
    client = make_client()
    for host in ("evil.example", "evil.example:8080", "127.0.0.1.evil.example", ""):
        answer = client.get("/", headers={"Host": host})
        assert answer.status_code == 400, host
        assert answer.headers["content-security-policy"] == CSP
    for host in ("127.0.0.1:8080", "localhost", "[::1]:8080"):
        assert client.get("/api/jobs", headers={"Host": host}).status_code == 200, host
    named = make_client(allowed_hosts=("localhost", "urlcheck.example.com"))
    assert named.get("/api/jobs", headers={"Host": "urlcheck.example.com"}).status_code == 200


def test_beyond_loopback_a_token_is_needed(make_client, tmp_path):
    token = "t0ken-" + "x" * 30
    client = make_client(host="0.0.0.0", token=token, allowed_hosts=("127.0.0.1",))
    for path in ("/", "/api/jobs", "/jobs/abc", "/api/jobs/abc"):
        answer = client.get(path)
        assert answer.status_code == 403, path
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert client.get("/static/app.js").status_code == 200  # the same file for everyone
    assert client.get("/api/jobs", headers={"Authorization": "Bearer wrong"}).status_code == 403
    assert client.get("/api/jobs", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert client.get("/?token=wrong").status_code == 403
    # The first visit exchanges the token for a cookie and takes it out of the address.
    answer = client.get(f"/jobs?token={token}&x=1", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/jobs?x=1"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token not in cookie
    assert client.get("/api/jobs").status_code == 200  # the cookie, from now on
    # A Bearer client needs no CSRF token (a browser never sends the header by itself).
    bearer = make_client(host="0.0.0.0", token=token, allowed_hosts=("127.0.0.1",))
    answer = bearer.post(
        "/api/upload",
        files={"file": ("u.csv", CSV.encode(), "text/csv")},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 201, answer.text


def test_posts_need_the_same_origin_and_the_csrf_token(make_client):
    client = make_client()
    page = Browserish(client)
    job_id = page.upload(CSV).json()["id"]
    url = f"/api/jobs/{job_id}/pause"
    cases = {
        "no origin": {"X-CSRF-Token": page.token},
        "other origin": {"X-CSRF-Token": page.token, "Origin": "http://evil.example"},
        "other port": {"X-CSRF-Token": page.token, "Origin": "http://127.0.0.1:9999"},
        "null origin": {"X-CSRF-Token": page.token, "Origin": "null"},
        "no token": {"Origin": BASE},
        "wrong token": {"Origin": BASE, "X-CSRF-Token": "0" * 64},
    }
    for case, headers in cases.items():
        answer = client.post(url, headers=headers)
        assert answer.status_code == 403, case
        assert "refused" in answer.json()["error"]
    # The token of another session is no good either.
    other = make_client()
    theirs = csrf_of(other.get("/").text)
    assert client.post(url, headers={"Origin": BASE, "X-CSRF-Token": theirs}).status_code == 403
    assert page.post(url).status_code == 202


def test_unknown_ids_traversals_and_actions_are_404(make_client, tmp_path):
    client = make_client()
    page = Browserish(client)
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "meta.json").write_text("{}")
    for path in (
        "/api/jobs/00000000-0000-0000-0000-000000000000",
        "/api/jobs/..",
        "/api/jobs/..%2Fsecret",
        "/api/jobs/%2e%2e",
        "/api/jobs/.hidden",
        "/api/jobs/..%2F..%2Fetc%2Fpasswd/results",
        "/api/jobs/..%2Fsecret/download/jsonl",
        "/jobs/..%2Fsecret",
        "/static/..%2F..%2Fmanager.py",
    ):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert str(tmp_path) not in answer.text
    job_id = page.upload(CSV).json()["id"]
    assert page.post(f"/api/jobs/{job_id}/explode").status_code == 404
    assert client.get(f"/api/jobs/{job_id}/download/exe").status_code == 404
    assert page.post("/api/jobs/nope/pause").status_code == 404


def test_every_answer_carries_the_csp_and_nosniff(make_client):
    client = make_client()
    page = Browserish(client)
    job_id = page.upload(CSV).json()["id"]
    for path in (
        "/",
        "/new",
        f"/jobs/{job_id}",
        "/api/jobs",
        f"/api/jobs/{job_id}",
        "/static/app.js",
        "/static/style.css",
        "/api/jobs/nope",
        "/nope",
    ):
        answer = client.get(path)
        assert answer.headers["content-security-policy"] == CSP, path
        assert answer.headers["x-content-type-options"] == "nosniff", path
        assert answer.headers["x-frame-options"] == "DENY", path
        assert answer.headers["referrer-policy"] == "no-referrer", path
    assert client.get("/static/app.js").headers["content-type"].startswith("text/javascript")


def test_gets_change_nothing(make_client, tmp_path):
    client = make_client()
    page = Browserish(client)
    job_id = page.upload(CSV).json()["id"]
    before = {p.name: p.read_bytes() for p in (tmp_path / "jobs" / job_id).iterdir()}
    for action in ("pause", "resume", "cancel", "rerun"):
        assert client.get(f"/api/jobs/{job_id}/{action}").status_code == 405
    assert client.get("/api/upload").status_code == 405
    after = {p.name: p.read_bytes() for p in (tmp_path / "jobs" / job_id).iterdir()}
    assert after == before


def test_concurrent_control_requests_are_all_applied(make_client, tmp_path):
    """Twenty pause/resume requests at once on a running job: twenty control requests, each
    with its own seq (issue 22 point 10)."""
    client = make_client()
    page = Browserish(client)
    job_id = page.upload(CSV).json()["id"]
    jobdir = tmp_path / "jobs" / job_id
    JobMeta(state=JobState.PROCESSING, total_rows=2).save(jobdir)
    lock = JobLock(jobdir)
    lock.acquire()  # this process plays the running crawl
    try:
        start = threading.Barrier(20)

        def send(i: int) -> int:
            start.wait()
            return page.post(f"/api/jobs/{job_id}/{'pause' if i % 2 else 'resume'}").status_code

        with ThreadPoolExecutor(20) as pool:
            codes = list(pool.map(send, range(20)))
    finally:
        lock.release()
    assert codes == [202] * 20
    control = Control.load(jobdir)
    assert control is not None and control.seq == 20
    assert (jobdir / CONTROL_FILE).exists()


def test_control_by_state(make_client, tmp_path):
    client = make_client()
    page = Browserish(client)
    job_id = page.upload(CSV).json()["id"]
    answer = page.post(f"/api/jobs/{job_id}/pause")
    assert answer.status_code == 202 and answer.json()["state"] == "paused"
    assert page.post(f"/api/jobs/{job_id}/resume").json()["state"] == "queued"
    answer = page.post(f"/api/jobs/{job_id}/rerun")
    assert answer.status_code == 409 and "cancel it before" in answer.json()["error"]
    answer = page.post(f"/api/jobs/{job_id}/cancel")
    assert answer.status_code == 202 and answer.json()["state"] == "cancelled"
    meta = JobMeta.load(tmp_path / "jobs" / job_id)
    assert meta is not None and meta.state is JobState.CANCELLED and meta.total_rows == 2
    for action in ("pause", "resume", "cancel"):
        answer = page.post(f"/api/jobs/{job_id}/{action}")
        assert answer.status_code == 409 and "cancelled" in answer.json()["error"]
    answer = page.post(f"/api/jobs/{job_id}/rerun")
    assert answer.status_code == 202 and answer.json()["state"] == "queued"


def test_pages_of_results_by_offset_every_line_once(make_client, tmp_path):
    client = make_client()
    external_job(tmp_path / "jobs", "big", 103)
    seen: list[int] = []
    after = 0
    while True:
        page = client.get("/api/jobs/big/results", params={"after": after, "limit": 10}).json()
        seen += [r["row"] for r in page["results"]]
        after = page["next"]
        assert page["total"] == 103
        if not page["more"]:
            break
    assert seen == list(range(1, 104))
    for filters, expected in [
        ({"verdict": "fail"}, [r for r in range(1, 104) if r % 4 == 0]),
        ({"status": "error"}, [r for r in range(1, 104) if r % 3 == 0]),
        ({"error": "timeout", "verdict": "fail"}, [r for r in range(1, 104) if r % 12 == 0]),
        ({"host": "127.0.0.3"}, [r for r in range(1, 104) if r % 2]),
        ({"host": "http://127.0.0.3:8080/x"}, [r for r in range(1, 104) if r % 2]),
        ({"text": "/r1"}, [r for r in range(1, 104) if str(r).startswith("1")]),
        ({"text": "/R10", "verdict": "pass"}, [10, 101, 102, 103]),
    ]:
        rows, after, pages = [], 0, 0
        while True:
            page = client.get(
                "/api/jobs/big/results", params={"after": after, "limit": 4, **filters}
            ).json()
            rows += [r["row"] for r in page["results"]]
            after, pages = page["next"], pages + 1
            if not page["more"]:
                break
        assert rows == expected, filters
        if len(filters) == 1 and "text" not in filters:
            assert page["total"] == len(expected)
    for bad in ({"verdict": "maybe"}, {"status": "6xx"}, {"error": "<b>"}, {"after": "-1"}):
        assert client.get("/api/jobs/big/results", params=bad).status_code == 400, bad


def test_the_status_poll_carries_new_lines_once_and_says_when_the_file_was_replaced(
    make_client, tmp_path
):
    client = make_client()
    jobdir = external_job(tmp_path / "jobs", "live", 5)
    results = jobdir / "results.jsonl"
    first = client.get("/api/jobs/live", params={"after": 0}).json()
    assert [r["row"] for r in first["results"]] == [1, 2, 3, 4, 5]
    tag = client.get("/api/jobs/live", params={"after": first["next"]}).headers["etag"]
    same = client.get(
        "/api/jobs/live", params={"after": first["next"]}, headers={"If-None-Match": tag}
    )
    assert same.status_code == 304 and same.content == b""
    with results.open("a", encoding="utf-8") as out:
        out.write(result_line(6))
        out.write(result_line(7)[:40])  # a line still being written
    then = client.get("/api/jobs/live", params={"after": first["next"], "gen": first["generation"]})
    assert then.status_code == 200 and then.headers["etag"] != tag
    body = then.json()
    assert [r["row"] for r in body["results"]] == [6] and not body["reset"]
    with results.open("a", encoding="utf-8") as out:
        out.write(result_line(7)[40:])
    body = client.get(
        "/api/jobs/live", params={"after": body["next"], "gen": body["generation"]}
    ).json()
    assert [r["row"] for r in body["results"]] == [7]
    # A re-check rewrites the file (a new inode): the next poll starts again from 0.
    replaced = jobdir / "results.new"
    replaced.write_text(result_line(2) + result_line(3), encoding="utf-8")
    replaced.replace(results)
    body = client.get(
        "/api/jobs/live", params={"after": body["next"], "gen": body["generation"]}
    ).json()
    assert body["reset"] and [r["row"] for r in body["results"]] == [2, 3]


def test_hostile_strings_are_escaped_and_bounded(make_client, tmp_path):
    client = make_client()
    page = Browserish(client)
    name = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    job_id = page.upload(CSV, filename="<b>x</b>.csv", name=name).json()["id"]
    html = client.get(f"/jobs/{job_id}").text
    assert "<script>alert" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>x</b>" not in client.get("/").text
    jobdir = external_job(tmp_path / "jobs", "hostile", 1)
    with (jobdir / "results.jsonl").open("a", encoding="utf-8") as out:
        out.write(
            result_line(
                2,
                chain=[{"url": "http://127.0.0.2:9/", "status": 301, "location_raw": "j" * 70000}],
            )
        )
    rows = client.get("/api/jobs/hostile/results").json()["results"]
    raw = rows[1]["chain"][0]["location_raw"]
    assert len(raw) == 4097 and raw.endswith("…")


def test_downloads(make_client, tmp_path):
    client = make_client()
    jobdir = external_job(tmp_path / "jobs", "done", 3)
    with (jobdir / "results.jsonl").open("a", encoding="utf-8") as out:
        out.write(result_line(4, url='=HYPERLINK("http://evil.example")'))
        out.write(result_line(5)[:30])  # torn: not part of any download
    jsonl = client.get("/api/jobs/done/download/jsonl")
    assert jsonl.status_code == 200
    assert [json.loads(line)["row"] for line in jsonl.text.splitlines()] == [1, 2, 3, 4]
    assert jsonl.headers["content-disposition"].startswith(
        'attachment; filename="done-results.jsonl"'
    )
    csv = client.get("/api/jobs/done/download/csv")
    lines = csv.text.splitlines()
    assert lines[0].startswith("row,url,") and len(lines) == 5
    assert "'=HYPERLINK" in lines[4]  # neutralised for spreadsheets
    xlsx = client.get("/api/jobs/done/download/xlsx")
    assert xlsx.headers["content-disposition"].startswith(
        'attachment; filename="done-results.xlsx"'
    )
    sheet: Any = openpyxl.load_workbook(io.BytesIO(xlsx.content))["results"]
    cells = list(sheet.iter_rows(min_row=2))
    assert [row[0].value for row in cells] == [1, 2, 3, 4]
    hostile = cells[3][1]
    assert (hostile.value, hostile.data_type) == ('=HYPERLINK("http://evil.example")', "s")
    html = client.get("/api/jobs/done/download/html")
    assert html.headers["content-disposition"].startswith("attachment;")
    assert html.headers["content-security-policy"].startswith("sandbox")
    assert "<script" in html.text and str(tmp_path) not in html.text
    markdown = client.get("/api/jobs/done/download/md")
    assert markdown.status_code == 200 and str(tmp_path) not in markdown.text
    junit = client.get("/api/jobs/done/download/junit")
    assert junit.text.startswith("<?xml") and str(tmp_path) not in junit.text


def test_the_config_beyond_loopback(tmp_path):
    from scrapy.settings import Settings

    wide = ServeConfig.from_settings(Settings(), host="0.0.0.0", jobs=tmp_path)
    assert wide.token and wide.token_generated and len(wide.token) >= 40
    # The address printed at start (the machine's name) is one the server answers.
    printed = urlsplit(address(wide, 8080)).hostname
    assert printed in wide.allowed_hosts
    assert wide.block_private_input is True
    local = ServeConfig.from_settings(Settings(), jobs=tmp_path)
    assert local.token is None and local.block_private_input is False
    assert local.allowed_hosts == ("localhost", "127.0.0.1", "::1")
    chosen = ServeConfig.from_settings(
        Settings(
            {"URLCHECK_BLOCK_PRIVATE_INPUT": "False", "URLCHECK_SERVE_ALLOWED_HOSTS": "a.example"}
        ),
        host="10.1.2.3",
        jobs=tmp_path,
        crawl_settings=("DOWNLOAD_TIMEOUT=5", "REDIS_URL=redis://:pw@10.0.0.1/0"),
    )
    assert chosen.block_private_input is False
    assert "a.example" in chosen.allowed_hosts and "10.1.2.3" in chosen.allowed_hosts
    assert chosen.crawl_settings == ("DOWNLOAD_TIMEOUT=5",)
    token_file = tmp_path / "token"
    token_file.write_text("s" * 32 + "\n")
    token_file.chmod(0o644)
    with pytest.raises(
        ValueError, match="URLCHECK_SERVE_TOKEN_FILE: the file may be read by others"
    ):
        ServeConfig.from_settings(
            Settings({"URLCHECK_SERVE_TOKEN_FILE": str(token_file)}), jobs=tmp_path
        )
    token_file.chmod(0o600)
    config = ServeConfig.from_settings(
        Settings({"URLCHECK_SERVE_TOKEN_FILE": str(token_file)}), jobs=tmp_path
    )
    assert config.token == "s" * 32 and not config.token_generated
    with pytest.raises(ValueError, match="URLCHECK_SERVE_PORT"):
        ServeConfig.from_settings(Settings({"URLCHECK_SERVE_PORT": "70000"}), jobs=tmp_path)


def test_a_landing_url_from_a_site_is_shown_as_text(make_client, tmp_path):
    """many_to_one's landing URLs come from the sites' answers: the job page shows them escaped
    (static/app.js sets them as text the same way)."""
    hostile = 'https://new.test/"><img src=x onerror=alert(1)>'
    jobdir = external_job(tmp_path / "jobs", "landing-1a2b3c4d", 3)
    meta = JobMeta.load(jobdir)
    assert meta is not None
    meta.many_to_one = ManyToOneSeen([(hostile, 12)], landings=1, rows=12, read_rows=3)
    meta.save(jobdir)
    client = make_client()
    status = client.get("/api/jobs/landing-1a2b3c4d").json()
    assert status["many_to_one"]["urls"] == [{"url": hostile, "rows": 12}]
    page = client.get("/jobs/landing-1a2b3c4d").text
    assert "<img src=x" not in page
    assert "https://new.test/&#34;&gt;&lt;img src=x onerror=alert(1)&gt; (12 rows)" in page
