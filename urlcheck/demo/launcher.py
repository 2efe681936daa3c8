"""Run the demo site in a subprocess, for the demo command, the tests and the benchmark."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import urlcheck
from urlcheck.demo import DEFAULT_HOSTS
from urlcheck.demo.serverlog import read_log


class SiteServer:
    """``python -m urlcheck.demo.site`` as a context manager: started on enter, stopped on exit.

    Every request is logged; without `log_path` the log goes to a temporary file removed on exit.
    """

    def __init__(
        self,
        hosts: Sequence[str] = DEFAULT_HOSTS,
        *,
        log_path: Path | None = None,
        min_gap: float | None = None,
        port: int = 0,
        start_timeout: float = 20.0,
    ) -> None:
        self.hosts = tuple(hosts)
        self.min_gap = min_gap
        self._requested_port = port
        self._start_timeout = start_timeout
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self.returncode: int | None = None  # the server's exit status once stopped

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("the site is not running")
        return self._process.pid

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the site is not running")
        return self._port

    @property
    def log_path(self) -> Path:
        if self._log_path is None:
            raise RuntimeError("the site is not running")
        return self._log_path

    def url(self, host: str, path: str) -> str:
        """``http://<host>:<port><path>``."""
        return f"http://{host}:{self.port}{path if path.startswith('/') else '/' + path}"

    def log(self) -> list[dict[str, Any]]:
        """The request log so far (a request is in it once its response has been sent)."""
        return read_log(self.log_path)

    def wait_log(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The log once it has at least `count` lines (for requests that end without a response,
        such as /hang, whose line is written when the client closes)."""
        deadline = time.monotonic() + timeout
        while len(records := self.log()) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the site log has {len(records)} lines, expected {count}")
            time.sleep(0.01)
        return records

    def start(self) -> None:
        if self._log_path is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="urlcheck-site-")
            self._log_path = Path(self._tempdir.name) / "requests.jsonl"
        command = [sys.executable, "-m", "urlcheck.demo.site", "--hosts", ",".join(self.hosts)]
        command += ["--port", str(self._requested_port), "--log", str(self._log_path)]
        if self.min_gap is not None:
            command += ["--min-gap", repr(self.min_gap)]
        # The child imports the same urlcheck as this process, installed or not.
        env = dict(os.environ)
        package_root = str(Path(urlcheck.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)
        try:
            self._port = self._read_ready(self._process)
        except BaseException:
            self.stop()
            raise

    def _read_ready(self, process: subprocess.Popen[bytes]) -> int:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], self._start_timeout)
        line = process.stdout.readline() if ready else b""
        words = line.split()
        if len(words) != 2 or words[0] != b"READY" or not words[1].isdigit():
            status = process.poll()
            why = f"exited with status {status}" if status is not None else f"printed {line!r}"
            raise RuntimeError(f"the demo site did not start ({why}); see its stderr")
        return int(words[1])

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            self.returncode = process.returncode
            if process.stdout is not None:
                process.stdout.close()
        self._port = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None
            self._log_path = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
