"""Run the app on uvicorn: bind first (so ``--port 0`` and a taken port are known before
anything is printed), print the address to open, then serve until SIGINT or SIGTERM."""

from __future__ import annotations

import logging
import socket
import sys
from typing import TYPE_CHECKING, TextIO

import uvicorn

from urlcheck.serve.app import create_app

if TYPE_CHECKING:
    from urlcheck.serve.config import ServeConfig


def bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    sock.listen(2048)  # from now on a client waits in the backlog until uvicorn serves it
    # Not inheritable (Python's default, kept on purpose): the crawl supervisors are spawned
    # with every inheritable descriptor, and one holding the listening socket would keep the
    # port bound after the server stops, so the next server could not listen on it.
    return sock


def address(config: ServeConfig, port: int) -> str:
    host = config.host
    if host in ("0.0.0.0", "::"):  # noqa: S104 (listening on all addresses)
        host = socket.gethostname()
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/"


def run(config: ServeConfig, out: TextIO = sys.stdout) -> int:
    try:
        sock = bind(config.host, config.port)
    except OSError as exc:
        print(
            f"urlcheck: cannot listen on {config.host} port {config.port}: {exc}", file=sys.stderr
        )
        return 2
    port = sock.getsockname()[1]
    url = address(config, port)
    if config.token_generated:
        assert config.token is not None
        print(f"urlcheck serve: open {url}?token={config.token}", file=out)
        print(
            "  (a token made up for this run; set URLCHECK_SERVE_TOKEN_FILE to keep one)",
            file=out,
        )
    elif config.token:
        print(
            f"urlcheck serve: open {url}?token=<the token of URLCHECK_SERVE_TOKEN_FILE>", file=out
        )
    else:
        print(f"urlcheck serve: open {url}", file=out)
    print(f"  jobs in {config.jobs_root}; Ctrl-C stops the server, not the crawls", file=out)
    out.flush()
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s [%(name)s] %(levelname)s: %(message)s"
    )
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            log_config=None,
            access_log=False,  # request lines would carry ?token= to the log
            server_header=False,
            proxy_headers=True,  # X-Forwarded-Proto from a proxy on loopback: Secure cookies
            timeout_graceful_shutdown=5,
        )
    )
    server.run(sockets=[sock])
    return 0
