"""Run the demo site (or the tests' proxy) in a subprocess, for the demo command, the tests and
the benchmark; both ends of their ``READY <port>`` start-up protocol."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Protocol, Self

import urlcheck
from urlcheck.demo import DEFAULT_HOSTS
from urlcheck.demo.serverlog import read_log


class _Listening(Protocol):
    port: int

    def close(self) -> None: ...


def serve(start: Awaitable[_Listening], cannot_listen: str) -> int:
    """Run `start`'s server, print ``READY <port>`` and serve until SIGTERM or SIGINT.

    Exit status 0, or 1 after printing `cannot_listen` and why when the address cannot be bound.
    """
    try:
        asyncio.run(_serve_until_signal(start))
    except OSError as exc:
        print(f"{cannot_listen}: {exc}", file=sys.stderr)
        return 1
    return 0


async def _serve_until_signal(start: Awaitable[_Listening]) -> None:
    running = await start
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    print(f"READY {running.port}", flush=True)
    try:
        await stop.wait()
    finally:
        running.close()


class ServerProcess:
    """``python -m <module>`` as a context manager: started on enter, stopped on exit.

    Every request is logged; without `log_path` the log goes to a temporary file removed on exit.
    """

    module: ClassVar[str]  # the module to run
    kind: ClassVar[str]  # its name in messages

    def __init__(self, log_path: Path | None, port: int, start_timeout: float) -> None:
        self._requested_port = port
        self._start_timeout = start_timeout
        self._log_path = log_path
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self.returncode: int | None = None  # the server's exit status once stopped

    def _arguments(self) -> list[str]:
        """The command-line options other than --port and --log."""
        raise NotImplementedError

    def _environment(self) -> dict[str, str]:
        # The child imports the same urlcheck as this process, installed or not.
        env = dict(os.environ)
        package_root = str(Path(urlcheck.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        return env

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError(f"the {self.kind} is not running")
        return self._process.pid

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"the {self.kind} is not running")
        return self._port

    @property
    def log_path(self) -> Path:
        if self._log_path is None:
            raise RuntimeError(f"the {self.kind} is not running")
        return self._log_path

    def log(self) -> list[dict[str, Any]]:
        """The request log so far (a request is in it once its response has been sent)."""
        return read_log(self.log_path)

    def wait_log(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The log once it has at least `count` lines (for requests that end without a response,
        such as the site's /hang, whose line is written when the client closes)."""
        deadline = time.monotonic() + timeout
        while len(records := self.log()) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the {self.kind} log has {len(records)} lines, expected {count}"
                )
            time.sleep(0.01)
        return records

    def spawn(self) -> None:
        """Start the process without waiting for it (see `running_proxies`); `start` waits."""
        if self._log_path is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix=f"urlcheck-{self.kind}-")
            self._log_path = Path(self._tempdir.name) / "requests.jsonl"
        command = [sys.executable, "-m", self.module, *self._arguments()]
        command += ["--port", str(self._requested_port), "--log", str(self._log_path)]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, env=self._environment())

    def wait_ready(self) -> None:
        process = self._process
        if process is None or process.stdout is None:
            raise RuntimeError(f"the {self.kind} was not spawned")
        try:
            ready, _, _ = select.select([process.stdout], [], [], self._start_timeout)
            line = process.stdout.readline() if ready else b""
            words = line.split()
            if len(words) != 2 or words[0] != b"READY" or not words[1].isdigit():
                status = process.poll()
                why = f"exited with status {status}" if status is not None else f"printed {line!r}"
                raise RuntimeError(f"the demo {self.kind} did not start ({why}); see its stderr")
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


class SiteServer(ServerProcess):
    """``python -m urlcheck.demo.site`` as a context manager: started on enter, stopped on exit.

    Every request is logged; without `log_path` the log goes to a temporary file removed on exit.
    """

    module = "urlcheck.demo.site"
    kind = "site"

    def __init__(
        self,
        hosts: Sequence[str] = DEFAULT_HOSTS,
        *,
        log_path: Path | None = None,
        min_gap: float | None = None,
        crawl_delay: float | None = None,
        port: int = 0,
        start_timeout: float = 20.0,
    ) -> None:
        super().__init__(log_path, port, start_timeout)
        self.hosts = tuple(hosts)
        self.min_gap = min_gap
        self.crawl_delay = crawl_delay

    def url(self, host: str, path: str) -> str:
        """``http://<host>:<port><path>``."""
        return f"http://{host}:{self.port}{path if path.startswith('/') else '/' + path}"

    def _arguments(self) -> list[str]:
        arguments = ["--hosts", ",".join(self.hosts)]
        if self.min_gap is not None:
            arguments += ["--min-gap", repr(self.min_gap)]
        if self.crawl_delay is not None:
            arguments += ["--crawl-delay", repr(self.crawl_delay)]
        return arguments
