"""The server as the tests meet it: an app per case through Starlette's TestClient, or the real
``urlcheck serve`` in a subprocess (its crawls are real `urlcheck job run` processes)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from starlette.testclient import TestClient

from urlcheck.jobs.lock import lock_holder
from urlcheck.serve.app import create_app
from urlcheck.serve.config import ServeConfig

BASE = "http://127.0.0.1:8080"
_CSRF = re.compile(r'<meta name="csrf-token" content="([0-9a-f]+)">')


def csrf_of(html: str) -> str:
    match = _CSRF.search(html)
    assert match, html[:500]
    return match[1]


class Browserish:
    """A TestClient used as a page would: the CSRF token of its session, a same-origin Origin."""

    def __init__(self, client: TestClient, origin: str = BASE) -> None:
        self.client = client
        self.origin = origin
        self.token = csrf_of(client.get("/").text)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        headers = {"X-CSRF-Token": self.token, "Origin": self.origin, **kwargs.pop("headers", {})}
        return self.client.post(url, headers=headers, **kwargs)

    def upload(self, csv: bytes | str, filename: str = "urls.csv", **fields: str) -> httpx.Response:
        data = csv.encode("utf-8") if isinstance(csv, str) else csv
        return self.post("/api/upload", files={"file": (filename, data, "text/csv")}, data=fields)


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    """A TestClient of an app built for this case (no crawl starts unless max_running is set)."""
    clients: list[TestClient] = []

    def make(**overrides: Any) -> TestClient:
        options: dict[str, Any] = {"jobs_root": tmp_path / "jobs", "max_running": 0}
        options.update(overrides)
        client = TestClient(create_app(ServeConfig(**options)), base_url=BASE)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


class ServeProcess:
    """``urlcheck serve --port 0`` in a subprocess; ``client`` talks to it as a page does."""

    def __init__(self, root: Path, *settings: str, port: int = 0) -> None:
        self.root = root
        self.settings = settings
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.err = root.parent / f"serve-{time.monotonic_ns()}.err"

    def start(self) -> ServeProcess:
        command = [
            sys.executable,
            "-m",
            "urlcheck",
            "serve",
            "--port",
            str(self.port),
            "--jobs",
            str(self.root),
        ]
        for setting in self.settings:
            command += ["-s", setting]
        out_path = self.err.with_suffix(".out")
        with self.err.open("ab") as err, out_path.open("wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=err)
        deadline = time.monotonic() + 60
        while not (match := re.search(r"(http://\S+/)", out_path.read_text("utf-8"))):
            assert self.process.poll() is None, self.stderr()
            assert time.monotonic() < deadline, "the server printed no address"
            time.sleep(0.05)
        self.url = match[1].rstrip("/")
        self.client = httpx.Client(base_url=self.url, timeout=30)
        self.token = csrf_of(self.client.get("/").text)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(30)
        if self.process is not None and self.url:
            self.client.close()
        self.process = None

    def stderr(self) -> str:
        return self.err.read_text("utf-8", "replace") if self.err.exists() else ""

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        headers = {"X-CSRF-Token": self.token, "Origin": self.url}
        return self.client.post(url, headers=headers, **kwargs)

    def upload(self, csv: str | bytes, filename: str = "urls.csv", **fields: str) -> str:
        data = csv.encode() if isinstance(csv, str) else csv
        answer = self.post(
            "/api/upload", files={"file": (filename, data, "text/csv")}, data=fields or None
        )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"])

    def status(self, job_id: str, **params: Any) -> dict[str, Any]:
        answer = self.client.get(f"/api/jobs/{job_id}", params=params)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def wait(
        self,
        job_id: str,
        predicate: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = 90.0,
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            status = self.status(job_id)
            if predicate(status):
                return status
            assert time.monotonic() < deadline, (
                f"timed out waiting for {what}: {status}\n{self.stderr()[-3000:]}"
            )
            time.sleep(0.3)


class Poller:
    """A page's view of a job: every poll asks for what follows its offset in its generation."""

    def __init__(self, server: ServeProcess, job_id: str) -> None:
        self.server, self.job_id = server, job_id
        self.after, self.generation = 0, None
        self.rows: list[int] = []
        self.resets = 0

    def poll(self) -> dict[str, Any]:
        params: dict[str, Any] = {"after": self.after}
        if self.generation is not None:
            params["gen"] = self.generation
        status = self.server.status(self.job_id, **params)
        if status["reset"]:
            self.rows, self.resets = [], self.resets + 1
        self.rows += [r["row"] for r in status["results"]]
        self.after, self.generation = status["next"], status["generation"]
        return status


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., ServeProcess]]:
    started: list[ServeProcess] = []

    def start(*settings: str, root: Path | None = None, port: int = 0) -> ServeProcess:
        server = ServeProcess(root or tmp_path / "jobs", *settings, port=port)
        started.append(server)  # stopped at the end even when its start fails
        return server.start()

    yield start
    for server in started:
        server.stop()
    # The crawls outlive a server by design: end this test's own, by their pids.
    for serve_json in (tmp_path / "jobs").glob("*/serve.json"):
        record = json.loads(serve_json.read_text("utf-8"))
        pid = record.get("supervisor_pid")
        if pid:
            with contextlib_suppress():
                os.kill(pid, signal.SIGTERM)
    for lock in (tmp_path / "jobs").glob("*/job.lock"):
        holder = lock_holder(lock.parent)
        if holder:
            with contextlib_suppress():
                os.kill(holder, signal.SIGKILL)


def contextlib_suppress() -> Any:
    import contextlib

    return contextlib.suppress(ProcessLookupError, PermissionError)
