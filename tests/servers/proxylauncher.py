"""Run test proxies (``python -m tests.servers.proxy``) as subprocesses, for tests and bench/."""

from __future__ import annotations

import base64
import contextlib
import os
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

from tests.servers.proxy import AUTH_ENV, Mode
from urlcheck.demo.launcher import ServerProcess

__all__ = ["ProxyServer", "running_proxies", "unused_port"]

REPO = Path(__file__).resolve().parents[2]


class ProxyServer(ServerProcess):
    """One test proxy as a context manager: started on enter, stopped on exit.

    `egress` defaults to `listen`, so each proxy reaches the origin from its own address. Every
    request is logged; without `log_path` the log goes to a temporary file removed on exit. The
    credentials never appear in the repr or on the child's command line.
    """

    module = "tests.servers.proxy"
    kind = "proxy"

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
        super().__init__(log_path, port, start_timeout)
        self.listen = listen
        self.egress = egress or listen
        self.auth = auth
        self.mode = mode

    def __repr__(self) -> str:
        state = f"port={self._port}" if self._port is not None else "stopped"
        auth = "set" if self.auth else "none"
        return (
            f"<ProxyServer {self.listen} {state} egress={self.egress} mode={self.mode} auth={auth}>"
        )

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

    def _arguments(self) -> list[str]:
        return ["--listen", self.listen, "--egress", self.egress, "--mode", self.mode]

    def _environment(self) -> dict[str, str]:
        env = super()._environment()
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env["PYTHONPATH"]])  # for tests.servers
        # Credentials go through the environment, not the command line that `ps` shows.
        env.pop(AUTH_ENV, None)
        if self.auth is not None:
            env[AUTH_ENV] = f"{self.auth[0]}:{self.auth[1]}"
        return env


@contextlib.contextmanager
def running_proxies(proxies: Sequence[ProxyServer]) -> Iterator[Sequence[ProxyServer]]:
    """Start several proxies, all spawned before any is waited for; stop them all on exit."""
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
