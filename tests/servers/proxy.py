"""A real forward HTTP proxy for the tests and the benchmark, asyncio and the standard library only.

Run ``python -m tests.servers.proxy --listen 127.0.0.20 --port 0 [--egress 127.0.0.20]
[--auth user:pass] [--log FILE] [--mode ok|auth407|reset|hang]``; it prints ``READY <port>`` once
it listens. It forwards absolute-form requests (``GET http://127.0.0.2:8741/ok HTTP/1.1``) and
opens CONNECT tunnels, each time from a socket bound to the egress address, so the origin sees one
client address per proxy. It only ever connects to loopback origins. docs/test-site.md describes
it; `tests.servers.proxylauncher` runs it as a subprocess.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import contextlib
import hmac
import ipaddress
import logging
import os
import socket
import struct
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NotRequired, TypedDict, TypeVar, get_args
from urllib.parse import urlsplit

from urlcheck.demo.launcher import serve
from urlcheck.demo.serverlog import RequestLog
from urlcheck.demo.wire import BadRequestError, Head, encode_head, http_date, read_head, reason

__all__ = ["AUTH_ENV", "REALM", "Mode", "ProxyConfig", "ProxyLogRecord", "RunningProxy", "main"]

logger = logging.getLogger(__name__)

Mode = Literal["ok", "auth407", "reset", "hang"]
REALM = "urlcheck-test"
AUTH_ENV = (
    "URLCHECK_DEMO_PROXY_AUTH"  # user:pass, read when --auth is not given (keeps it out of ps)
)
SERVER = "urlcheck-demo-proxy"

_MAX_LINE = 64 * 1024
_CHUNK = 64 * 1024
_CONNECT_TIMEOUT = 10.0
_HEAD_TIMEOUT = 30.0  # for the first request head of a connection in reset and hang modes
_CLIENT_POLL = 0.1  # how often a wait on the origin checks that the client is still there

# RFC 9110 7.6.1: hop-by-hop fields, never forwarded; Proxy-Authorization above all, since the
# credentials are for this proxy and must not reach the origin.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
    }
)

T = TypeVar("T")


class ProxyLogRecord(TypedDict):
    client: str  # ip:port of the client
    method: str
    target: str  # the absolute URL, or host:port for CONNECT
    status: int | None  # status sent to the client; None when none was (reset, hang, errors)
    outcome: str  # forwarded, tunnel, auth, refused, bad_request, upstream_error, reset, hang
    had_proxy_auth: bool  # the request carried a Proxy-Authorization header
    auth_ok: bool  # ... with this proxy's credentials (always true when it needs none)
    t: float  # time.time() when the request head had been read
    egress: NotRequired[str]  # ip:port of the connection to the origin
    error: NotRequired[str]  # why the origin could not be reached


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    listen: str = "127.0.0.20"
    port: int = 0
    egress: str | None = None  # the address origin connections come from; None: `listen`
    auth: tuple[str, str] | None = None  # (user, password) clients must send
    mode: Mode = "ok"
    log_path: Path | None = None

    def __repr__(self) -> str:  # never the password
        auth = "set" if self.auth else "none"
        return (
            f"ProxyConfig(listen={self.listen!r}, port={self.port}, egress={self.egress!r},"
            f" mode={self.mode!r}, auth={auth}, log_path={self.log_path!r})"
        )


async def _body_pieces(
    reader: asyncio.StreamReader, head: Head, *, until_close: bool
) -> AsyncIterator[bytes]:
    """The raw body that follows `head` on `reader`, framing included (chunked stays chunked)."""
    encoding = head.get("transfer-encoding")
    length = head.get("content-length")
    if encoding is not None:
        if encoding.strip().lower() != "chunked":
            raise BadRequestError("unsupported transfer coding")
        while True:
            size_line = await reader.readuntil(b"\n")
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError as exc:
                raise BadRequestError("bad chunk size") from exc
            if size == 0:
                trailer = size_line
                while (line := await reader.readuntil(b"\n")) not in (b"\r\n", b"\n"):
                    trailer += line
                yield trailer + line
                return
            yield size_line
            remaining = size + 2  # the chunk and its CRLF
            while remaining:
                data = await reader.readexactly(min(remaining, _CHUNK))
                remaining -= len(data)
                yield data
    elif length is not None:
        if not length.strip().isdigit():
            raise BadRequestError("bad Content-Length")
        remaining = int(length)
        while remaining:
            data = await reader.readexactly(min(remaining, _CHUNK))
            remaining -= len(data)
            yield data
    elif until_close:
        while data := await reader.read(_CHUNK):
            yield data


def _client_keeps_alive(head: Head) -> bool:
    tokens = head.tokens("connection") | head.tokens("proxy-connection")
    if head.start[2] == "HTTP/1.1":
        return "close" not in tokens
    return "keep-alive" in tokens


def _without_userinfo(target: str) -> str:
    # Credentials never reach the log, even from a client that puts them in the URL.
    scheme, sep, rest = target.partition("://")
    authority, slash, path = rest.partition("/")
    if sep and "@" in authority:
        return f"{scheme}://***@{authority.rpartition('@')[2]}{slash}{path}"
    return target


def _loopback(host: str) -> bool:
    # A hard rule of the test environment: traffic never leaves loopback. Host names are refused
    # too (no DNS), so that nothing can resolve to another address.
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(slots=True)
class _Exchange:
    """One request from a client, the connection it came on, and its log record."""

    head: Head
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    record: ProxyLogRecord
    keep: bool  # the client wants the connection kept after this exchange

    async def skip_body(self) -> None:
        # Read a body that will not be forwarded: it must not be taken for the next request,
        # and closing with unread input makes the kernel send RST, which can destroy the answer.
        async for _ in _body_pieces(self.reader, self.head, until_close=False):
            pass


@dataclass(slots=True)
class _Proxy:
    config: ProxyConfig
    log: RequestLog | None
    clock: Callable[[], float]
    egress: str = field(init=False)
    _expected: bytes | None = field(init=False)

    def __post_init__(self) -> None:
        self.egress = self.config.egress or self.config.listen
        auth = self.config.auth
        self._expected = f"{auth[0]}:{auth[1]}".encode() if auth else None

    def _credentials_ok(self, value: str | None) -> bool:
        if value is None or self._expected is None:
            return False
        scheme, _, token = value.strip().partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            given = base64.b64decode(token.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        return hmac.compare_digest(given, self._expected)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        client = f"{peer[0]}:{peer[1]}"
        try:
            if self.config.mode in ("reset", "hang"):
                await self._misbehave(reader, writer, client)
                return
            while True:
                try:
                    head = await read_head(reader)
                except BadRequestError as exc:
                    await _answer(writer, 400, f"400 Bad Request: {exc}\n", keep=False)
                    return
                if head is None:
                    return
                exchange = _Exchange(
                    head, reader, writer, self._record(head, client), _client_keeps_alive(head)
                )
                if not await self._serve(exchange):
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # one side went away mid-exchange; nothing left to answer
        except BadRequestError:
            pass  # a request body that cannot be read: the connection cannot go on
        except asyncio.CancelledError:
            pass  # shutdown; not re-raised, as in the demo site (3.11 would report it on stderr)
        finally:
            writer.close()

    async def _misbehave(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: str
    ) -> None:
        try:
            async with asyncio.timeout(_HEAD_TIMEOUT):
                head = await read_head(reader)
        except (BadRequestError, TimeoutError):
            head = None
        if head is not None:
            record = self._record(head, client)
            record["outcome"] = self.config.mode
            self._write_log(record)
        if self.config.mode == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return
        with contextlib.suppress(ConnectionError):  # hang until the client gives up
            while await reader.read(_CHUNK):
                pass

    def _record(self, head: Head, client: str) -> ProxyLogRecord:
        sent = head.get("proxy-authorization")
        return {
            "client": client,
            "method": head.start[0],
            "target": _without_userinfo(head.start[1]),
            "status": None,
            "outcome": "",
            "had_proxy_auth": sent is not None,
            "auth_ok": self._expected is None or self._credentials_ok(sent),
            "t": self.clock(),
        }

    def _write_log(self, record: ProxyLogRecord) -> None:
        if self.log is not None:
            self.log.write(record)

    async def _serve(self, ex: _Exchange) -> bool:
        """Answer one request; True to read the next one from this client."""
        method, target, version = ex.head.start
        if version not in ("HTTP/1.0", "HTTP/1.1"):
            ex.keep = False
            return await self._refuse(ex, 505, "HTTP/1.0 or 1.1 only")
        if self.config.mode == "auth407" or not ex.record["auth_ok"]:
            await ex.skip_body()  # so that the connection can carry the retry
            return await self._refuse(ex, 407, "proxy authentication required")
        ex.keep = ex.keep and method != "CONNECT"
        if method == "CONNECT":
            parts = urlsplit(f"//{target}")
        else:
            parts = urlsplit(target)
            if parts.scheme != "http":
                await ex.skip_body()
                ex.keep = False
                return await self._refuse(ex, 400, "send an absolute http:// URL, or CONNECT")
        try:
            host, port = parts.hostname or "", parts.port or (80 if method != "CONNECT" else 0)
        except ValueError:
            host, port = "", 0
        if not host or not port:
            await ex.skip_body()
            ex.keep = False
            return await self._refuse(ex, 400, "no usable host and port in the target")
        if not _loopback(host):
            await ex.skip_body()
            ex.keep = False
            return await self._refuse(ex, 502, f"refused: {host} is not a loopback address")
        origin = await self._open(host, port, ex.record)
        if origin is None:
            await ex.skip_body()
            return await self._upstream_failed(ex)
        origin_reader, origin_writer = origin
        try:
            if method == "CONNECT":
                return await self._tunnel(ex, origin_reader, origin_writer)
            return await self._forward(ex, parts.netloc, origin_reader, origin_writer)
        finally:
            origin_writer.close()

    async def _refuse(self, ex: _Exchange, status: int, why: str) -> bool:
        ex.record["status"] = status
        ex.record["outcome"] = {400: "bad_request", 407: "auth", 502: "refused"}.get(
            status, "error"
        )
        self._write_log(ex.record)
        extra = (("Proxy-Authenticate", f'Basic realm="{REALM}"'),) if status == 407 else ()
        await _answer(ex.writer, status, f"{status} {reason(status)}: {why}\n", ex.keep, extra)
        return ex.keep

    async def _upstream_failed(self, ex: _Exchange) -> bool:
        """502, and the client's connection is closed."""
        ex.record["status"] = 502
        ex.record["outcome"] = "upstream_error"
        self._write_log(ex.record)
        why = ex.record.get("error", "the origin could not be reached")
        await _answer(ex.writer, 502, f"502 Bad Gateway: {why}\n", keep=False)
        return False

    async def _open(
        self, host: str, port: int, record: ProxyLogRecord
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            async with asyncio.timeout(_CONNECT_TIMEOUT):
                origin = await asyncio.open_connection(
                    host, port, local_addr=(self.egress, 0), limit=_MAX_LINE
                )
        except (OSError, TimeoutError) as exc:
            record["error"] = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return None
        local = origin[1].get_extra_info("sockname")
        record["egress"] = f"{local[0]}:{local[1]}"
        return origin

    async def _forward(
        self,
        ex: _Exchange,
        netloc: str,
        origin_reader: asyncio.StreamReader,
        origin_writer: asyncio.StreamWriter,
    ) -> bool:
        method, target, _ = ex.head.start
        parts = urlsplit(target)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        dropped = _HOP_BY_HOP | ex.head.tokens("connection")
        headers = [(k, v) for k, v in ex.head.fields if k.lower() not in dropped]
        if ex.head.get("host") is None:
            headers.insert(0, ("Host", netloc.rpartition("@")[2]))
        # One origin connection per request: the origin closes after answering.
        headers += [("Connection", "close"), ("Via", f"1.1 {SERVER}")]
        origin_writer.write(encode_head(f"{method} {path} HTTP/1.1", headers))
        async for piece in _body_pieces(ex.reader, ex.head, until_close=False):
            origin_writer.write(piece)
            await origin_writer.drain()
        await origin_writer.drain()
        try:
            response = await _unless_client_leaves(read_head(origin_reader), ex.reader)
            while response is not None and response.start[1].startswith("1"):
                ex.writer.write(encode_head(" ".join(response.start), response.fields))
                response = await _unless_client_leaves(read_head(origin_reader), ex.reader)
        except BadRequestError as exc:
            ex.record["error"] = f"bad response from the origin: {exc}"
            return await self._upstream_failed(ex)
        if response is None:
            ex.record["error"] = "the origin closed without answering, or the client left"
            return await self._upstream_failed(ex)
        return await self._relay(ex, response, origin_reader)

    async def _relay(
        self, ex: _Exchange, response: Head, origin_reader: asyncio.StreamReader
    ) -> bool:
        _, code, phrase = response.start
        status = int(code) if code.isdigit() else 502
        framed = response.get("content-length") is not None or (
            response.get("transfer-encoding") is not None and ex.head.start[2] == "HTTP/1.1"
        )
        bodyless = ex.head.start[0] == "HEAD" or status in (204, 304)
        keep = ex.keep and (framed or bodyless)
        dropped = (_HOP_BY_HOP - {"proxy-authenticate"}) | response.tokens("connection")
        headers = [(k, v) for k, v in response.fields if k.lower() not in dropped]
        headers.append(("Connection", "keep-alive" if keep else "close"))
        pending = encode_head(f"HTTP/1.1 {status} {phrase}", headers)
        ex.record["status"] = status
        ex.record["outcome"] = "broken"  # until the whole response has been relayed
        try:
            if not bodyless:
                # Lag one piece behind, so the log line is written before the last byte goes
                # out: a client holding its whole response can rely on the log, as on the site.
                async for piece in _body_pieces(origin_reader, response, until_close=True):
                    ex.writer.write(pending)
                    await ex.writer.drain()
                    pending = piece
            ex.record["outcome"] = "forwarded"
            self._write_log(ex.record)
            ex.writer.write(pending)
            await ex.writer.drain()
        except BaseException:
            if ex.record["outcome"] == "broken":  # one side left midway: still one line
                self._write_log(ex.record)
            raise
        return keep

    async def _tunnel(
        self,
        ex: _Exchange,
        origin_reader: asyncio.StreamReader,
        origin_writer: asyncio.StreamWriter,
    ) -> bool:
        ex.record["status"] = 200
        ex.record["outcome"] = "tunnel"
        self._write_log(ex.record)
        ex.writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await ex.writer.drain()
        await asyncio.gather(_pipe(ex.reader, origin_writer), _pipe(origin_reader, ex.writer))
        return False


async def _answer(
    writer: asyncio.StreamWriter,
    status: int,
    text: str,
    keep: bool,
    extra: Sequence[tuple[str, str]] = (),
) -> None:
    body = text.encode()
    headers = [
        ("Server", SERVER),
        ("Date", http_date()),
        *extra,
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Content-Length", str(len(body))),
        ("Connection", "keep-alive" if keep else "close"),
    ]
    writer.write(encode_head(f"HTTP/1.1 {status} {reason(status)}", headers) + body)
    await writer.drain()


async def _unless_client_leaves(waiting: Awaitable[T], client: asyncio.StreamReader) -> T | None:
    # While the origin thinks (/delay, /hang), a client that times out and closes should release
    # the origin connection too, as with a real proxy.
    task = asyncio.ensure_future(waiting)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=_CLIENT_POLL)
            if done:
                return task.result()
            if client.at_eof() or client.exception() is not None:
                return None
    finally:
        task.cancel()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then pass the half-close on."""
    try:
        while data := await source.read(_CHUNK):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except (ConnectionError, OSError):
        sink.close()


@dataclass(slots=True)
class RunningProxy:
    port: int
    server: asyncio.Server
    log: RequestLog | None

    def close(self) -> None:
        self.server.close()
        if self.log is not None:
            self.log.close()


async def start_proxy(config: ProxyConfig, clock: Callable[[], float] = time.time) -> RunningProxy:
    """Listen in the running event loop."""
    for name, address in (("listen", config.listen), ("egress", config.egress)):
        if address is not None and not _loopback(address):
            raise ValueError(f"--{name} must be a loopback address, got {address!r}")
    log = RequestLog(config.log_path) if config.log_path is not None else None
    proxy = _Proxy(config, log, clock)
    server = await asyncio.start_server(
        proxy.connection, config.listen, config.port, limit=_MAX_LINE, backlog=1024
    )
    return RunningProxy(server.sockets[0].getsockname()[1], server, log)


def _parse_args(argv: Sequence[str] | None) -> ProxyConfig:
    parser = argparse.ArgumentParser(prog="python -m tests.servers.proxy", description=__doc__)
    parser.add_argument("--listen", default="127.0.0.20", help="loopback address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port (0: any free one)")
    parser.add_argument(
        "--egress", help="loopback address origin connections come from (default: --listen)"
    )
    parser.add_argument(
        "--auth",
        metavar="USER:PASS",
        help=f"require these Basic credentials (default: ${AUTH_ENV} if set, else none)",
    )
    parser.add_argument("--log", type=Path, help="append one JSON line per request to this file")
    parser.add_argument(
        "--mode",
        default="ok",
        choices=get_args(Mode),
        help="ok: a working proxy; auth407: answer every request 407; reset: reset every "
        "connection after its first request head; hang: never answer",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error("--port must be between 0 and 65535")
    for name in ("listen", "egress"):
        value = getattr(args, name)
        if value is not None and not _loopback(value):
            parser.error(f"--{name} must be a loopback IP address, got {value!r}")
    raw_auth = args.auth if args.auth is not None else os.environ.get(AUTH_ENV)
    auth = None
    if raw_auth:
        user, colon, password = raw_auth.partition(":")
        if not colon:
            parser.error("--auth must be USER:PASS")
        auth = (user, password)
    return ProxyConfig(args.listen, args.port, args.egress, auth, args.mode, args.log)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT; exit status 0, or 1 when the address cannot be bound."""
    config = _parse_args(argv)
    return serve(start_proxy(config), f"tests.servers.proxy: cannot listen on {config.listen}")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
