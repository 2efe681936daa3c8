"""Real crawls through the real server (``urlcheck serve`` in a subprocess; its crawls are
`urlcheck job run` processes) against the demo site: every row reaches the API exactly once
across polls, results stop growing while paused, cancel ends the job, re-run keeps the old
results aside, a killed crawl and a restarted server lose nothing, two jobs on one host keep
it polite (measured at the site), and rows to private addresses are refused when asked."""

from __future__ import annotations

import html
import json
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import openpyxl
import pytest

from tests.jobs.crawls import assert_exact
from tests.serve.conftest import Poller
from tests.sitefixture import SiteServer, host_stats
from urlcheck.jobs.lock import lock_holder

if TYPE_CHECKING:
    from tests.serve.conftest import ServeProcess

pytestmark = pytest.mark.crawl

HOSTS = ("127.0.0.2", "127.0.0.3")


def rows_csv(site: SiteServer, tag: str, rows: int, hosts: tuple[str, ...] = HOSTS) -> str:
    """Row n's URL carries r=n (assert_exact checks every result is its row's)."""
    urls = [site.url(hosts[(n - 1) % len(hosts)], f"/ok?t={tag}&r={n}") for n in range(1, rows + 1)]
    return "url\n" + "".join(f"{url}\n" for url in urls)


def poll_until(poller: Poller, predicate, what: str, timeout: float = 90.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = poller.poll()
        if predicate(status):
            return status
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {status}"
        time.sleep(0.25)


def test_every_row_once_across_polls_pause_resume_and_download(serve, site, tmp_path):
    server: ServeProcess = serve()
    rows = 40
    job_id = server.upload(rows_csv(site, "serve-once", rows))
    poller = Poller(server, job_id)
    poll_until(poller, lambda s: s["done_rows"] >= 8, "8 rows")
    answer = server.post(f"/api/jobs/{job_id}/pause")
    assert answer.status_code == 202, answer.text
    paused = poll_until(poller, lambda s: s["state"] == "paused", "the paused state")
    assert paused["actions"] == {"pause": False, "resume": True, "cancel": True, "rerun": False}
    results = tmp_path / "jobs" / job_id / "results.jsonl"
    time.sleep(0.5)  # requests in flight when the pause came finish
    size = results.stat().st_size
    for _ in range(6):
        poller.poll()
        time.sleep(0.3)
    assert results.stat().st_size == size  # nothing new while paused
    assert server.post(f"/api/jobs/{job_id}/resume").status_code == 202
    done = poll_until(poller, lambda s: s["state"] == "done" and not s["more"], "done")
    assert done["done_rows"] == rows and done["counts"]["status"]["2xx"] == rows
    assert sorted(poller.rows) == list(range(1, rows + 1))  # each once
    assert poller.resets == 0
    assert_exact(results, rows)
    csv = server.client.get(f"/api/jobs/{job_id}/download/csv")
    assert csv.status_code == 200 and len(csv.text.splitlines()) == rows + 1


def test_a_workbook_upload_is_crawled(serve, site, tmp_path):
    # An .xlsx (as Excel saves it) without a header: sheet row n is row n (its URL carries r=n).
    # Rows 1-3, all of 127.0.0.2's, redirect to one page: many_to_one (the share rule).
    server: ServeProcess = serve()
    rows = 6
    landing = site.url("127.0.0.3", "/ok?t=serve-landing")
    urls = [
        site.url("127.0.0.2", f"/redirect/301?t=serve-xlsx&r={n}&to={quote(landing, safe='')}")
        for n in (1, 2, 3)
    ] + [site.url("127.0.0.3", f"/ok?t=serve-xlsx&r={n}") for n in (4, 5, 6)]
    # The URLs on the sheet the form names; the first sheet holds a URL nobody asked for.
    book = openpyxl.Workbook()
    decoy: Any = book.active
    decoy.title = "Notes"
    decoy.append([site.url("127.0.0.2", "/ok?t=serve-decoy")])
    sheet: Any = book.create_sheet("Redirects")
    for url in urls:
        sheet.append([url])
    book.save(tmp_path / "urls.xlsx")
    job_id = server.upload(
        (tmp_path / "urls.xlsx").read_bytes(), filename="urls.xlsx", sheet="Redirects"
    )
    done = server.wait(job_id, lambda s: s["state"] == "done", "the workbook job", 90)
    assert done["total_rows"] == rows and done["counts"]["status"]["2xx"] == rows
    assert_exact(tmp_path / "jobs" / job_id / "results.jsonl", rows)
    assert len([e for e in site.log() if "t=serve-xlsx" in e["path"]]) == rows
    assert not [e for e in site.log() if "t=serve-decoy" in e["path"]]
    assert done["many_to_one"]["urls"] == [{"url": landing, "rows": 3}]
    page = server.client.get(f"/jobs/{job_id}")
    assert f"<li>{landing} (3 rows)</li>" in page.text


def sitemap_index(sitemaps: list[str]) -> str:
    entries = "".join(f"<sitemap><loc>{html.escape(url)}</loc></sitemap>" for url in sitemaps)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}'
        "</sitemapindex>\n"
    )


def test_a_sitemap_index_upload_is_crawled_and_held_to_the_row_cap(serve, site, tmp_path):
    # Nothing is fetched at the upload: the job's crawl fetches the index's two sitemaps (3 rows
    # each), politely, then checks their rows. The server's row cap holds for the rows the crawl
    # counts: the same index under a cap of 5 fails in words, before any row is requested.
    server: ServeProcess = serve()
    parts = [f"/sitemap.xml?n=3&part={j}&t=serve-index" for j in (0, 1)]
    sitemaps = [site.url("127.0.0.2", part) for part in parts]
    before = len(site.log())
    job_id = server.upload(sitemap_index(sitemaps), filename="sitemap_index.xml")
    record = json.loads((tmp_path / "jobs" / job_id / "serve.json").read_text("utf-8"))
    assert record["rows"] == 0 and record["sites"] == ["127.0.0.2"]
    done = server.wait(job_id, lambda s: s["state"] == "done", "the index job", 90)
    assert done["total_rows"] == done["done_rows"] == 6, done
    assert done["counts"]["status"]["2xx"] == 6
    assert_exact(tmp_path / "jobs" / job_id / "results.jsonl", 6)
    paths = [e["path"] for e in site.log()[before:]]
    assert sorted(p for p in paths if p.startswith("/sitemap.xml")) == parts
    assert len([p for p in paths if p.startswith("/ok")]) == 6

    capped: ServeProcess = serve("URLCHECK_SERVE_MAX_ROWS=5", root=tmp_path / "capped")
    before = len(site.log())
    job_id = capped.upload(sitemap_index(sitemaps), filename="sitemap_index.xml")
    failed = capped.wait(job_id, lambda s: s["state"] == "failed", "the capped index job", 90)
    assert failed["failed"] == (
        "sitemap_index.xml: more than 5 rows, the most URLCHECK_MAX_ROWS allows"
    ), failed
    assert failed["done_rows"] == 0
    assert not [e for e in site.log()[before:] if e["path"].startswith("/ok")]


def test_a_sitemaps_url_is_fetched_by_the_job_and_kept_for_its_resume(serve, site, tmp_path):
    # The server fetches nothing: the job's crawl fetches the index and its 2 sitemaps (2 rows
    # each) through its own downloader and keeps them, the index as the job's input.
    server: ServeProcess = serve()
    index = site.url("127.0.0.5", "/sitemap-index.xml?parts=2&n=2&t=serve-url")
    before = len(site.log())
    no_file = {"file": ("", b"", "application/octet-stream")}  # the form, as a browser sends it
    answer = server.post("/api/upload", files=no_file, data={"sitemap_url": index})
    assert answer.status_code == 201, answer.text
    job_id = answer.json()["id"]
    done = server.wait(job_id, lambda s: s["state"] == "done", "the sitemap URL job", 90)
    assert done["total_rows"] == done["done_rows"] == 4 and done["csv_name"] == index, done
    assert_exact(tmp_path / "jobs" / job_id / "results.jsonl", 4)
    paths = [e["path"].split("?")[0] for e in site.log()[before:] if e["host"] == "127.0.0.5"]
    assert paths.count("/sitemap-index.xml") == 1 and paths.count("/sitemap.xml") == 2, paths
    assert b"<sitemapindex" in (tmp_path / "jobs" / job_id / "input.csv").read_bytes()

    gone = site.url("127.0.0.5", "/status/404?t=serve-url-gone")
    answer = server.post("/api/upload", files=no_file, data={"sitemap_url": gone})
    assert answer.status_code == 201, answer.text
    job_id = answer.json()["id"]
    failed = server.wait(job_id, lambda s: s["state"] == "failed", "the missing sitemap", 90)
    assert failed["failed"] == f"{gone}: the sitemap could not be fetched (HTTP 404)", failed
    # A re-run tries the URL again (the job has no copy of it).
    asked = [e for e in site.log() if "t=serve-url-gone" in e["path"]]
    assert len(asked) == 1
    assert server.post(f"/api/jobs/{job_id}/rerun").status_code == 202
    again = server.wait(
        job_id,
        lambda s: (
            s["state"] == "failed"
            and len([e for e in site.log() if "t=serve-url-gone" in e["path"]]) == 2
        ),
        "the re-run of the missing sitemap",
        90,
    )
    assert again["failed"] == failed["failed"]


def test_cancel_ends_the_job_and_a_rerun_keeps_the_old_results_aside(serve, site, tmp_path):
    server: ServeProcess = serve()
    rows = 16
    job_id = server.upload(rows_csv(site, "serve-cancel", rows, hosts=("127.0.0.4",)))
    poller = Poller(server, job_id)
    poll_until(poller, lambda s: s["done_rows"] >= 4, "4 rows")
    assert server.post(f"/api/jobs/{job_id}/cancel").status_code == 202
    cancelled = poll_until(
        poller, lambda s: s["state"] == "cancelled" and not s["running"], "cancelled"
    )
    assert cancelled["done_rows"] < rows
    assert cancelled["actions"]["rerun"] and not cancelled["actions"]["cancel"]
    before = sorted(poller.rows)
    jobdir = tmp_path / "jobs" / job_id
    assert server.post(f"/api/jobs/{job_id}/rerun").status_code == 202
    done = poll_until(poller, lambda s: s["state"] == "done" and not s["more"], "the re-run", 120)
    assert done["done_rows"] == rows and poller.resets >= 1
    assert sorted(poller.rows) == list(range(1, rows + 1))
    assert_exact(jobdir / "results.jsonl", rows)
    [kept] = jobdir.glob("results.*Z.jsonl")  # the cancelled run's, renamed with its time
    assert sorted(json.loads(line)["row"] for line in kept.read_text().splitlines()) == before


def test_a_killed_crawl_and_a_restarted_server_lose_nothing(serve, site, tmp_path):
    settings = ("URLCHECK_SERVE_RECOVER_AFTER=1", "URLCHECK_SERVE_RESTART_DELAY=0.5")
    server: ServeProcess = serve(*settings)
    rows = 50
    job_id = server.upload(rows_csv(site, "serve-kill", rows))
    jobdir = tmp_path / "jobs" / job_id
    poller = Poller(server, job_id)
    poll_until(poller, lambda s: s["done_rows"] >= 8, "8 rows")
    # kill -9 of the crawl and of its supervisor: nothing of the job runs any more.
    crawl = lock_holder(jobdir)
    supervisor = json.loads((jobdir / "serve.json").read_text())["supervisor_pid"]
    assert crawl and supervisor
    os.kill(supervisor, signal.SIGKILL)
    os.kill(crawl, signal.SIGKILL)
    poll_until(
        poller,
        lambda s: lock_holder(jobdir) not in (None, crawl) and s["state"] == "processing",
        "the server to start the job again",
    )
    assert "its crawl is gone" in server.stderr()
    poll_until(poller, lambda s: s["done_rows"] >= 24, "24 rows")
    # The server stops; its crawl does not. The next server, on the same port (as a restart
    # of the service has it), adopts it and sees it end.
    running = lock_holder(jobdir)
    port = int(server.url.rpartition(":")[2])
    server.stop()
    assert lock_holder(jobdir) == running
    second: ServeProcess = serve(*settings, port=port)
    poller.server = second
    adopted = second.status(job_id)
    assert adopted["running"] and adopted["state"] in ("processing", "done")
    done = poll_until(poller, lambda s: s["state"] == "done" and not s["more"], "done", 120)
    assert done["done_rows"] == rows
    assert sorted(poller.rows) == list(range(1, rows + 1))
    assert_exact(jobdir / "results.jsonl", rows)
    assert "started its crawl" not in second.stderr()  # adopted, never started twice


@pytest.fixture(scope="module")
def strict_site(tmp_path_factory):
    """429s a request to a host < 250 ms after the previous one, or overlapping it."""
    log = tmp_path_factory.mktemp("strict") / "requests.jsonl"
    with SiteServer(("127.0.0.5", "127.0.0.6"), log_path=log, min_gap=0.25) as server:
        yield server


def test_two_jobs_on_one_host_keep_it_polite(serve, strict_site):
    server: ServeProcess = serve()
    first = server.upload(rows_csv(strict_site, "polite-a", 8, hosts=("127.0.0.5",)))
    server.wait(first, lambda s: s["state"] == "processing", "the first job to run")
    second = server.upload(rows_csv(strict_site, "polite-b", 8, hosts=("127.0.0.5",)))
    elsewhere = server.upload(rows_csv(strict_site, "polite-c", 6, hosts=("127.0.0.6",)))
    waiting = server.status(second)
    assert waiting["state"] == "queued" and "127.0.0.5" in waiting["waiting"]
    server.wait(elsewhere, lambda s: s["state"] in ("processing", "done"), "a job on another host")
    for job_id, rows in ((first, 8), (second, 8), (elsewhere, 6)):
        done = server.wait(job_id, lambda s: s["state"] == "done", f"job {job_id}", 120)
        assert done["done_rows"] == rows and done["counts"]["status"]["2xx"] == rows
    log = [e for e in strict_site.log() if "t=polite-" in e["path"]]
    stats = host_stats(log)["127.0.0.5"]
    assert stats.count == 16 and stats.rejected == 0
    assert stats.max_in_flight == 1
    assert stats.min_gap is not None and stats.min_gap >= 0.29, stats.min_gap


def test_rows_to_private_addresses_are_refused_when_asked(serve, site):
    server: ServeProcess = serve("URLCHECK_BLOCK_PRIVATE_INPUT=True")
    job_id = server.upload(rows_csv(site, "serve-private", 2))
    poller = Poller(server, job_id)
    done = poll_until(poller, lambda s: s["state"] == "done" and not s["more"], "done")
    assert done["counts"]["status"]["error"] == 2
    page = server.client.get(f"/api/jobs/{job_id}/results").json()
    assert {r["error"] for r in page["results"]} == {"blocked_address"}
    assert [e for e in site.log() if "t=serve-private" in e["path"]] == []


def test_a_stuck_crawl_is_killed_and_a_job_that_cannot_run_fails_in_words(serve, site, tmp_path):
    """A crawl started by hand in the jobs root (no supervisor to restart it) hangs on a row:
    the server adopts it, sees it stuck, and kills it URLCHECK_SERVE_RECOVER_AFTER later. (A
    crawl the server started is restarted by its supervisor, as test_supervise.py shows.)"""
    server: ServeProcess = serve("URLCHECK_SERVE_RECOVER_AFTER=1")
    urls = [site.url("127.0.0.4", f"/ok?t=serve-stuck&r={n}") for n in (1, 2)]
    urls.append(site.url("127.0.0.4", "/hang?t=serve-stuck&r=3"))  # never answers
    csv = tmp_path / "stuck.csv"
    csv.write_text("url\n" + "".join(f"{u}\n" for u in urls), encoding="utf-8")
    jobdir = server.root / "by-hand"
    command = [sys.executable, "-m", "urlcheck", "check", str(csv), "--jobdir", str(jobdir)]
    for setting in (
        "URLCHECK_JOB_STUCK_AFTER=3",
        "URLCHECK_JOB_HEARTBEAT_INTERVAL=1",
        "DOWNLOAD_TIMEOUT=600",
    ):
        command += ["-s", setting]
    with (tmp_path / "by-hand.log").open("wb") as log:
        crawl = subprocess.Popen(command, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while not (jobdir / "meta.json").exists():
            assert time.monotonic() < deadline and crawl.poll() is None, "the crawl did not start"
            time.sleep(0.1)
        server.wait("by-hand", lambda s: s["done_rows"] == 2 and s["running"], "two rows")
        server.wait("by-hand", lambda s: s["state"] == "stuck", "the stuck state")
        assert crawl.wait(60) == -signal.SIGKILL
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
    assert "still stuck; killing its crawl" in server.stderr()
    gone = server.wait("by-hand", lambda s: not s["running"], "the crawl gone")
    assert gone["state"] == "stuck"  # not the server's to start again, until someone asks

    bad: ServeProcess = serve("URLCHECK_MAX_HOPS=ten", root=tmp_path / "bad")
    job_id = bad.upload("url\n" + urls[0] + "\n")
    failed = bad.wait(job_id, lambda s: s["state"] == "failed", "the failed state")
    assert failed["failed"].startswith("setting URLCHECK_MAX_HOPS: expected a whole number")
    assert str(bad.root) not in failed["failed"]
    assert failed["actions"] == {"pause": False, "resume": False, "cancel": False, "rerun": True}
