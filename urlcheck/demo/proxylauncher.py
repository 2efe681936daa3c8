"""Run demo proxies (``python -m urlcheck.demo.proxy``) as subprocesses, for tests and bench/."""

from __future__ import annotations

import base64
import contextlib
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

import urlcheck
from urlcheck.demo.proxy import AUTH_ENV, Mode
from urlcheck.demo.serverlog import read_log

__all__ = ["ProxyServer", "running_proxies", "unused_port"]


class ProxyServer:
    """One demo proxy as a context manager: started on enter, stopped on exit.

    `egress` defaults to `listen`, so each proxy reaches the origin from its own address. Every
    request is logged; without `log_path` the log goes to a temporary file removed on exit. The
    credentials never appear in the repr or on the child's command line.
    """

    def __init__(
        self,
        listen: str = "127.0.0.20",
        egress: str | None = None,
        auth: tuple[str, str] | None = None,
        mode: Mode = "ok",
        log_path: Path | None = None,
        *,
        port: int = 0,
        start_timeout: float = 20.0,
    ) -> None:
        self.listen = listen
        self.egress = egress or listen
        self.auth = auth
        self.mode = mode
        self._requested_port = port
        self._start_timeout = start_timeout
        self._log_path = log_path
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self.returncode: int | None = None  # the proxy's exit status once stopped

    def __repr__(self) -> str:
        state = f"port={self._port}" if self._port is not None else "stopped"
        auth = "set" if self.auth else "none"
        return (
            f"<ProxyServer {self.listen} {state} egress={self.egress} mode={self.mode} auth={auth}>"
        )

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("the proxy is not running")
        return self._process.pid

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the proxy is not running")
        return self._port

    @property
    def address(self) -> str:
        """``host:port``, as urlcheck reports a proxy."""
        return f"{self.listen}:{self.port}"

    @property
    def url(self) -> str:
        """``http://host:port``, without credentials."""
        return f"http://{self.address}"

    def url_with_auth(self) -> str:
        """``http://user:pass@host:port`` (percent-encoded), for a proxy list."""
        if self.auth is None:
            return self.url
        user, password = (quote(part, safe="") for part in self.auth)
        return f"http://{user}:{password}@{self.address}"

    def auth_header(self) -> str:
        """The ``Proxy-Authorization`` value this proxy accepts."""
        if self.auth is None:
            raise RuntimeError("this proxy needs no credentials")
        token = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
        return f"Basic {token}"

    @property
    def log_path(self) -> Path:
        if self._log_path is None:
            raise RuntimeError("the proxy is not running")
        return self._log_path

    def log(self) -> list[dict[str, Any]]:
        """The request log so far (a forwarded request is in it once its response was relayed)."""
        return read_log(self.log_path)

    def wait_log(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The log once it has at least `count` lines."""
        deadline = time.monotonic() + timeout
        while len(records := self.log()) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the proxy log has {len(records)} lines, expected {count}")
            time.sleep(0.01)
        return records

    def spawn(self) -> None:
        """Start the process without waiting for it (see `running_proxies`); `start` waits."""
        if self._log_path is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="urlcheck-proxy-")
            self._log_path = Path(self._tempdir.name) / "proxy.jsonl"
        command = [sys.executable, "-m", "urlcheck.demo.proxy", "--listen", self.listen]
        command += ["--egress", self.egress, "--port", str(self._requested_port)]
        command += ["--mode", self.mode, "--log", str(self._log_path)]
        # The child imports the same urlcheck as this process, installed or not; credentials go
        # through the environment, not the command line that `ps` shows.
        env = dict(os.environ)
        package_root = str(Path(urlcheck.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        env.pop(AUTH_ENV, None)
        if self.auth is not None:
            env[AUTH_ENV] = f"{self.auth[0]}:{self.auth[1]}"
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)

    def wait_ready(self) -> None:
        process = self._process
        if process is None or process.stdout is None:
            raise RuntimeError("the proxy was not spawned")
        try:
            ready, _, _ = select.select([process.stdout], [], [], self._start_timeout)
            line = process.stdout.readline() if ready else b""
            words = line.split()
            if len(words) != 2 or words[0] != b"READY" or not words[1].isdigit():
                status = process.poll()
                why = f"exited with status {status}" if status is not None else f"printed {line!r}"
                raise RuntimeError(f"the demo proxy did not start ({why}); see its stderr")
            self._port = int(words[1])
        except BaseException:
            self.stop()
            raise

    def start(self) -> None:
        self.spawn()
        self.wait_ready()

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


@contextlib.contextmanager
def running_proxies(proxies: Sequence[ProxyServer]) -> Iterator[Sequence[ProxyServer]]:
    """Start several proxies at once (in parallel: about 0.1 s in all rather than each), stop them
    all on exit."""
    try:
        for proxy in proxies:
            proxy.spawn()
        for proxy in proxies:
            proxy.wait_ready()
        yield proxies
    finally:
        for proxy in proxies:
            proxy.stop()


def unused_port(host: str = "127.0.0.1") -> int:
    """A port on `host` with nothing listening: a dead proxy for tests."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
    return port
