"""The server's parts on their own: settings and token files, uploads that break off, filters,
record files, key files, downloads' edges, the listening socket and what it prints."""

from __future__ import annotations

import io
import json
import os
import socket
import time

import pytest
from scrapy.settings import Settings

from tests.serve.conftest import Browserish
from urlcheck.config.reader import ConfigError
from urlcheck.jobs.errors import JobFileError
from urlcheck.serve import cluster, downloads, processes, server
from urlcheck.serve.app import KEY_FILE, load_key
from urlcheck.serve.config import ServeConfig, is_loopback, read_token_file
from urlcheck.serve.record import RECORD_FILE, ServeRecord
from urlcheck.serve.results import FilterError, Filters, ResultsIndex, read_after
from urlcheck.serve.sites import site_of, site_of_url
from urlcheck.serve.upload import UploadError, clean_text, inspect_csv


def test_loopback_names_and_sites():
    assert is_loopback("localhost") and is_loopback("127.0.0.9") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("urlcheck.example.com")
    assert site_of("www.example.co.uk") == "example.co.uk"
    assert site_of("WWW.Example.COM.") == "example.com"
    assert site_of("127.0.0.2") == "127.0.0.2" and site_of("old.localhost") == "old.localhost"
    assert site_of("") == "" and site_of_url("https://a.b.example.org:8443/x") == "example.org"


def test_token_files_and_bad_settings(tmp_path):
    with pytest.raises(ConfigError, match="cannot read it"):
        read_token_file(tmp_path / "missing")
    short = tmp_path / "short"
    short.write_text("abc\n")
    short.chmod(0o600)
    with pytest.raises(ConfigError, match="at least 16 characters"):
        read_token_file(short)
    with pytest.raises(ConfigError, match="is not a host name"):
        ServeConfig.from_settings(
            Settings({"URLCHECK_SERVE_ALLOWED_HOSTS": "a.example/x"}), jobs=tmp_path
        )
    with pytest.raises(ConfigError, match="URLCHECK_SERVE_MAX_ROWS"):
        ServeConfig.from_settings(Settings({"URLCHECK_SERVE_MAX_ROWS": "0"}), jobs=tmp_path)
    config = ServeConfig.from_settings(
        Settings({"REDIS_URL": "redis://127.0.0.1:1/0", "REDIS_PARAMS": {"socket_timeout": 1}}),
        jobs=tmp_path,
        port=0,
    )
    assert config.redis_url == "redis://127.0.0.1:1/0" and config.redis_params == {
        "socket_timeout": 1
    }


def test_filters_refuse_what_they_cannot_apply():
    for query, message in [
        ({"verdict": "x" * 9}, "verdict: at most 8"),
        ({"host": "h" * 256}, "host: at most 255"),
        ({"text": "t" * 201}, "text: at most 200"),
        ({"error": "e" * 41}, "error: at most 40"),
    ]:
        with pytest.raises(FilterError, match=message):
            Filters.from_query(query)
    assert Filters.from_query({"host": " Example.COM "}).host == "example.com"
    # what a user pastes: a host with its port, a URL, a name in Unicode (rows are IDNA-keyed)
    for given in ("127.0.0.5:46643", "http://127.0.0.5:46643/a?b", "[::1]:80", "bücher.example"):
        assert Filters.from_query({"host": given}).host == {
            "[::1]:80": "::1",
            "bücher.example": "xn--bcher-kva.example",
        }.get(given, "127.0.0.5")
    assert Filters().empty and not Filters(text="x").empty


def test_reading_results_skips_what_is_not_a_result_line(tmp_path):
    path = tmp_path / "results.jsonl"
    assert read_after(path, 0, 10, Filters()).results == []  # no file yet
    path.write_text('{"row": 1}\nnot json\n[1]\n{"row": 2}\n{"row": 3', encoding="utf-8")
    page = read_after(path, 0, 10, Filters())
    assert [r["row"] for r in page.results] == [1, 2] and not page.more
    assert page.next == path.stat().st_size - len('{"row": 3')
    index = ResultsIndex(path)
    assert [r["row"] for r in index.page(0, 10, Filters(verdict="none")).results] == [1, 2]
    path.unlink()
    index.catch_up()
    assert index.lines == 0


def test_records_and_keys_that_are_not_what_they_should_be(tmp_path):
    (tmp_path / RECORD_FILE).write_text('{"id": "x", "options": []}')
    with pytest.raises(JobFileError, match="is not a urlcheck serve file"):
        ServeRecord.load(tmp_path)
    with pytest.raises(ValueError, match="not an object"):
        ServeRecord.from_dict([1])
    (tmp_path / KEY_FILE).write_bytes(b"short")
    key = load_key(tmp_path)
    assert len(key) == 32 and load_key(tmp_path) == key
    assert oct((tmp_path / KEY_FILE).stat().st_mode & 0o777) == "0o600"


def test_inspecting_a_csv_names_the_file_as_the_user_knows_it(tmp_path):
    path = tmp_path / "input.csv"
    path.write_bytes(b"url\nhttp://a.example/\n")
    assert inspect_csv(path, "mine.csv", 10) == (1, ["a.example"])
    with pytest.raises(UploadError, match=r"mine\.csv"):
        inspect_csv(tmp_path / "gone.csv", "mine.csv", 10)
    assert clean_text("a\u202eb\x00c\n", 10) == "abc"


def test_uploads_that_break_off(make_client):
    client = make_client(max_upload_bytes=1000)
    page = Browserish(client)
    answer = page.post(
        "/api/upload", content=b"url\nhttp://a/\n", headers={"Content-Type": "text/csv"}
    )
    assert answer.status_code == 400 and "multipart/form-data" in answer.json()["error"]
    answer = page.post(
        "/api/upload",
        content=b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n",
        headers={"Content-Type": "multipart/form-data; boundary=b"},
    )
    assert answer.status_code == 400 and "could not be read" in answer.json()["error"]
    answer = page.post("/api/upload", data={"name": "no file"}, files={"other": ("x", b"")})
    assert answer.status_code == 400
    answer = page.post("/api/upload", data={"name": "no file", "method": "GET"})
    assert answer.status_code == 400
    # No Content-Length: the body is counted as it streams.
    body = b'--b\r\nContent-Disposition: form-data; name="file"; filename="u.csv"\r\n\r\n'
    body += b"x" * 70_000 + b"\r\n--b--\r\n"

    def chunks():
        for i in range(0, len(body), 4096):
            yield body[i : i + 4096]

    answer = page.post(
        "/api/upload", content=chunks(), headers={"Content-Type": "multipart/form-data; boundary=b"}
    )
    assert answer.status_code == 413


def test_pages_for_what_is_not_there(make_client):
    client = make_client()
    assert client.get("/jobs/nope").status_code == 404
    assert "404" in client.get("/nope").text
    assert client.get("/api/jobs/nope/results").status_code == 404
    assert client.get("/api/jobs/nope/download/csv").status_code == 404
    assert client.get("/api/jobs/nope", params={"after": "x"}).status_code == 400
    assert client.get("/", headers={"Cookie": 'urlcheck_session="\\x"; ;;=='}).status_code == 200
    assert "64 MiB" in client.get("/new").text
    small = make_client(max_upload_bytes=500)
    assert "500 bytes" in small.get("/new").text


def test_downloads_edges(tmp_path):
    assert downloads.whole_lines_end(tmp_path / "missing") == 0
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(b'{"row": 1')
    assert downloads.whole_lines_end(torn) == 0
    assert list(downloads.csv_rows(torn)) == [b""]
    assert downloads.disposition("Été 2026", "csv") == (
        'attachment; filename="Ete_2026-results.csv"; '
        "filename*=UTF-8''%C3%89t%C3%A9%202026-results.csv"
    )
    assert downloads.disposition("Ωμέγα", "md").startswith('attachment; filename="report.md"')


def test_the_cluster_of_a_job_whose_redis_does_not_answer(tmp_path):
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    assert cluster.workers(jobdir, "redis://127.0.0.1:1/0", {}) is None  # not distributed
    (jobdir / "cluster.json").write_text("{broken")
    assert cluster.workers(jobdir, "redis://127.0.0.1:1/0", {}) == {
        "error": "the job's cluster file cannot be read"
    }
    (jobdir / "cluster.json").write_text(json.dumps({"job": "j"}))
    params = {"socket_timeout": 0.2, "socket_connect_timeout": 0.2}
    assert cluster.workers(jobdir, "redis://127.0.0.1:1/0", params) == {
        "error": "Redis did not answer"
    }
    assert cluster.steer(jobdir, "pause", "redis://127.0.0.1:1/0", params) is False
    assert cluster.steer(jobdir, "pause", None, params) is False


def test_processes_that_are_not_ours(tmp_path):
    assert processes.reap(os.getpid()) is None  # not a child
    assert not processes.alive(0, None)
    assert processes.start_time(2**22 + 12345) is None
    processes.kill(2**22 + 12345)  # gone already: nothing to do


def test_the_socket_and_what_is_printed(tmp_path, monkeypatch):
    taken = server.bind("127.0.0.1", 0)
    port = taken.getsockname()[1]
    config = ServeConfig(jobs_root=tmp_path, port=port)
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    assert server.run(config, out=io.StringIO()) == 2
    assert f"cannot listen on 127.0.0.1 port {port}" in err.getvalue()
    taken.close()
    wide = ServeConfig(jobs_root=tmp_path, host="0.0.0.0")
    assert server.address(wide, 8080) == f"http://{socket.gethostname()}:8080/"
    assert server.address(ServeConfig(jobs_root=tmp_path, host="::1"), 81) == "http://[::1]:81/"


def test_a_failing_look_at_the_jobs_is_logged_and_tried_again(make_client, tmp_path, caplog):
    client = make_client(tick=0.01)
    manager = client.app.state.manager
    calls = []

    def broken() -> None:
        calls.append(1)
        raise OSError("disk gone")

    manager.tick = broken
    deadline = time.monotonic() + 10
    while len(calls) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert "the job manager's look at the jobs failed" in caplog.text
    assert client.get("/api/jobs").status_code == 200
    assert (tmp_path / "jobs").is_dir()
