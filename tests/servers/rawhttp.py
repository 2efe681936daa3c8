"""A hostile HTTP server for the tests: it answers each request with exact bytes, chosen by the
request's path, and closes the connection.

No HTTP library stands between the test and the wire, so it can send what no well-behaved server
would: two Location headers, a 10 MB header line, a status of ``-301``, no status line at all.
It runs in a thread of the test process on a 127.0.0.x address and port 0, and counts the
requests each path received (to show a row was not retried).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Self

__all__ = ["RawHTTPServer", "answer"]

_MAX_HEAD = 64 * 1024


def answer(status_line: bytes, *headers: bytes, body: bytes = b"") -> bytes:
    """A response, byte for byte: the status line, each header line, a blank line, the body
    (a ``Content-Length`` and ``Connection: close`` are added)."""
    lines = [status_line, *headers, b"Content-Length: %d" % len(body), b"Connection: close"]
    return b"".join(line + b"\r\n" for line in lines) + b"\r\n" + body


class RawHTTPServer:
    """``with RawHTTPServer({"/path": b"HTTP/1.1 ..."}) as server:``; ``server.url("/path")``.

    A request is answered by its path, else by its path without the query, else with a 404.
    Each connection serves one request.
    """

    def __init__(self, answers: Mapping[str, bytes], host: str = "127.0.0.2") -> None:
        self.answers = dict(answers)
        self.host = host
        self.hits: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def port(self) -> int:
        if self._sock is None:
            raise RuntimeError("the server is not running")
        port: int = self._sock.getsockname()[1]
        return port

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def __enter__(self) -> Self:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        sock.listen(16)
        sock.settimeout(0.1)
        self._sock = sock
        self._thread = threading.Thread(target=self._accept, name="raw-http", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(5)
        if self._sock is not None:
            self._sock.close()

    def _accept(self) -> None:
        assert self._sock is not None
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        # Every error is the client's going away: a test server must never raise in a thread.
        with conn, contextlib.suppress(OSError):
            conn.settimeout(10)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < _MAX_HEAD:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            parts = head.split(b"\r\n", 1)[0].split(b" ")
            path = parts[1].decode("latin-1") if len(parts) == 3 else ""
            with self._lock:
                self.hits[path] += 1
            found = self.answers.get(path, self.answers.get(path.split("?", 1)[0]))
            conn.sendall(answer(b"HTTP/1.1 404 Not Found") if found is None else found)
            conn.shutdown(socket.SHUT_WR)
            # Read until the client closes, so the answer is not cut by a reset.
            while conn.recv(65536):
                pass
