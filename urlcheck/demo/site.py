"""The local demo and test site: one asyncio HTTP/1.1 server on the same port on several addresses.

Run ``python -m urlcheck.demo.site --hosts 127.0.0.2,127.0.0.3 --port 0 [--log FILE]
[--min-gap SECONDS]``; it prints ``READY <port>`` once every address listens. Endpoints are in
`urlcheck.demo.routes` and docs/test-site.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from urlcheck.demo import DEFAULT_HOSTS
from urlcheck.demo.launcher import serve
from urlcheck.demo.routes import HTML, Exchange, dispatch
from urlcheck.demo.serverlog import HostStats, LogRecord, RequestLog, host_stats, read_log
from urlcheck.demo.wire import (
    MAX_LINE,
    Abort,
    BadRequestError,
    Reply,
    Request,
    Response,
    body_allowed,
    encode_head,
    http_date,
    read_request,
    status_line,
)

__all__ = [
    "DEFAULT_HOSTS",
    "HostStats",
    "MinGapRule",
    "RunningSite",
    "SiteConfig",
    "bind_same_port",
    "host_stats",
    "main",
    "read_log",
    "start_site",
]

logger = logging.getLogger(__name__)

SERVER = "urlcheck-demo-site"
_BIND_ATTEMPTS = 50


@dataclass(frozen=True, slots=True)
class SiteConfig:
    hosts: tuple[str, ...] = DEFAULT_HOSTS
    port: int = 0
    log_path: Path | None = None
    min_gap: float | None = None  # strict mode: reject impolite clients with 429
    crawl_delay: float | None = None  # robots.txt's Crawl-delay


class MinGapRule:
    """Strict mode: a request is rejected when it arrives less than `min_gap` seconds after the
    previous arrival to its host, or while another request to that host is in flight.

    Rejected requests count as arrivals, as they do for the rate limiters this emulates.
    """

    def __init__(self, min_gap: float) -> None:
        self.min_gap = min_gap
        self._last_arrival: dict[str, float] = {}

    def verdict(self, host: str, now: float, busy: bool) -> str | None:
        """None to serve the request, else the reason it is rejected."""
        previous = self._last_arrival.get(host)
        self._last_arrival[host] = now
        if busy:
            return f"another request to {host} is in flight"
        if previous is not None and now - previous < self.min_gap:
            return (
                f"arrived {(now - previous) * 1000:.1f} ms after the previous request to {host};"
                f" the minimum gap is {self.min_gap * 1000:.0f} ms"
            )
        return None


@dataclass(slots=True)
class _Trace:
    """The log record of one request, finished exactly once."""

    site: _Site
    record: LogRecord
    done: bool = False

    def finish(self, status: int | None, outcome: str) -> None:
        if self.done:
            return
        self.done = True
        self.record["t_departure"] = self.site.clock()
        if status is not None:
            self.record["status"] = status
        self.record["outcome"] = outcome
        self.site.in_flight[self.record["host"]] -= 1
        if self.site.log is not None:
            self.site.log.write(self.record)


@dataclass(slots=True)
class _Site:
    config: SiteConfig
    clock: Callable[[], float]
    log: RequestLog | None
    rule: MinGapRule | None
    counters: dict[tuple[str, str], int] = field(default_factory=dict)
    in_flight: dict[str, int] = field(default_factory=dict)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        local = writer.get_extra_info("sockname")
        peer = writer.get_extra_info("peername")
        try:
            while True:
                try:
                    request = await read_request(reader)
                except BadRequestError as exc:
                    # Not logged: without a parsed request there is no host to charge it to.
                    body = f"{exc}\n".encode()
                    headers = self._headers(len(body), "close", "text/plain")
                    head = encode_head(status_line(exc.status), headers)
                    writer.write(head + body)
                    await _lingering_close(reader, writer)
                    return
                if request is None or not await self._exchange(
                    request, reader, writer, local, peer
                ):
                    return
        except ConnectionError:
            pass  # the client went away; nothing to answer
        except asyncio.CancelledError:
            # Only at shutdown. Not re-raised: Python 3.11's stream callback reports a cancelled
            # connection task as an unhandled error on stderr.
            pass
        finally:
            writer.close()

    async def _exchange(
        self,
        request: Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        local: tuple[str, int],
        peer: tuple[str, int],
    ) -> bool:
        """Serve one request; True to keep the connection for the next one."""
        now = self.clock()
        host = request.host or local[0]
        busy = self.in_flight.get(host, 0) > 0
        self.in_flight[host] = self.in_flight.get(host, 0) + 1
        record: LogRecord = {
            "host": host,
            "local": f"{local[0]}:{local[1]}",
            "client": f"{peer[0]}:{peer[1]}",
            "method": request.method,
            "path": request.target,
            "status": None,
            "outcome": "",
            "t_arrival": now,
            "t_departure": now,
            "in_flight_host": self.in_flight[host],
            "rejected": False,
            "absolute_form": request.authority is not None,
        }
        if (value := request.header("proxy-authorization")) is not None:
            record["proxy_authorization"] = value
        if (value := request.header("user-agent")) is not None:
            record["user_agent"] = value
        trace = _Trace(self, record)
        try:
            reply = await self._reply(request, local[1], busy, record)
            if isinstance(reply, Abort):
                await self._abort(reply, reader, writer, trace)
                return False
            return await self._respond(request, reply, writer, trace)
        except asyncio.CancelledError:
            trace.finish(None, "shutdown")
            raise
        finally:
            trace.finish(None, "client_gone")

    async def _reply(self, request: Request, port: int, busy: bool, record: LogRecord) -> Reply:
        host = record["host"]
        rejection = self.rule.verdict(host, record["t_arrival"], busy) if self.rule else None
        if rejection is not None:
            record["rejected"] = True
            body = f"429 rejected by the min-gap rule: {rejection}\n".encode()
            return Response(429, (("Content-Type", "text/plain"),), body)
        try:
            client = record["client"].rpartition(":")[0]
            exchange = Exchange(request, host, port, self.counters, client, self.config.crawl_delay)
            return await dispatch(exchange)
        except Exception:
            logger.exception("endpoint failed on %s %s", request.method, request.target)
            return Response(500, (("Content-Type", "text/plain"),), b"500 endpoint failed\n")

    async def _respond(
        self, request: Request, reply: Response, writer: asyncio.StreamWriter, trace: _Trace
    ) -> bool:
        keep = request.keep_alive
        has_body = body_allowed(reply.status) and request.method != "HEAD"
        content_type = next((v for k, v in reply.headers if k == "Content-Type"), None)
        headers = [("Server", SERVER), ("Date", http_date())]
        headers.extend((k, v) for k, v in reply.headers if k != "Content-Type")
        if body_allowed(reply.status):
            headers.append(("Content-Type", content_type or HTML))
        chunked = False
        if reply.stream is None:
            if body_allowed(reply.status):
                headers.append(("Content-Length", str(len(reply.body))))
        elif reply.length is not None:
            headers.append(("Content-Length", str(reply.length)))
        elif request.version >= (1, 1):
            chunked = True
            headers.append(("Transfer-Encoding", "chunked"))
        else:
            keep = False  # an HTTP/1.0 client learns the end of the body from the close
        headers.append(("Connection", "keep-alive" if keep else "close"))
        head = encode_head(status_line(reply.status), headers)
        pieces: Iterator[bytes]
        if not has_body:
            pieces = iter((head,))
        elif reply.stream is None:
            pieces = iter((head + reply.body,))
        else:
            pieces = _prepend(head, _chunked(reply.stream) if chunked else reply.stream)
        trace.record["status"] = reply.status
        await _write_all(writer, pieces, lambda: trace.finish(reply.status, "sent"))
        return keep

    async def _abort(
        self, how: Abort, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, trace: _Trace
    ) -> None:
        if how is Abort.HANG:
            with contextlib.suppress(ConnectionError):  # clients that time out often reset
                while await reader.read(64 * 1024):
                    pass
            trace.finish(None, how.value)
        elif how is Abort.RESET:
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            trace.finish(None, how.value)
            writer.transport.abort()
        else:
            trace.finish(None, how.value)

    def _headers(self, length: int, connection: str, content_type: str) -> list[tuple[str, str]]:
        return [
            ("Server", SERVER),
            ("Date", http_date()),
            ("Content-Type", content_type),
            ("Content-Length", str(length)),
            ("Connection", connection),
        ]


async def _lingering_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    # Closing with unread input makes the kernel send RST, which can destroy the 400 before the
    # client reads it; so stop writing, then swallow what the client still sends, briefly.
    await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(1.0):
            while await reader.read(64 * 1024):
                pass


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _chunked(stream: Iterator[bytes]) -> Iterator[bytes]:
    for chunk in stream:
        if chunk:
            yield b"%x\r\n%b\r\n" % (len(chunk), chunk)
    yield b"0\r\n\r\n"


async def _write_all(
    writer: asyncio.StreamWriter, pieces: Iterator[bytes], before_last: Callable[[], None]
) -> None:
    # The log line is written before the last piece goes out, so that a client holding its
    # complete response can rely on the log already containing the request.
    pending = next(pieces)
    for piece in pieces:
        writer.write(pending)
        await writer.drain()
        pending = piece
    before_last()
    writer.write(pending)
    await writer.drain()


def bind_same_port(hosts: Sequence[str], port: int = 0) -> list[socket.socket]:
    """Bound sockets, one per address in `hosts`, all on one port (`port`, or a free one if 0).

    With port 0 the first address gets a free port from the kernel and the others take the same
    port; if one of them has it in use, the whole set is retried.
    """
    for _ in range(_BIND_ATTEMPTS if port == 0 else 1):
        sockets: list[socket.socket] = []
        try:
            sockets.append(_bound(hosts[0], port))
            chosen = sockets[0].getsockname()[1]
            sockets.extend(_bound(host, chosen) for host in hosts[1:])
        except OSError as exc:
            for sock in sockets:
                sock.close()
            if exc.errno != errno.EADDRINUSE or port != 0:
                raise
            continue
        return sockets
    raise OSError(errno.EADDRINUSE, f"no port free on all of {', '.join(hosts)}")


def _bound(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # Listening now (not later, in asyncio) makes a port clash show up here, where the whole
        # set can still be retried: two SO_REUSEADDR sockets may bind one port if neither listens.
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


@dataclass(slots=True)
class RunningSite:
    port: int
    servers: list[asyncio.Server]
    log: RequestLog | None

    def close(self) -> None:
        """Stop listening and close the log (connections still open are left to the caller)."""
        for server in self.servers:
            server.close()
        if self.log is not None:
            self.log.close()


async def start_site(config: SiteConfig, clock: Callable[[], float] = time.time) -> RunningSite:
    """Listen on every address of `config` in the running event loop."""
    sockets = bind_same_port(config.hosts, config.port)
    log = RequestLog(config.log_path) if config.log_path is not None else None
    rule = MinGapRule(config.min_gap) if config.min_gap is not None else None
    site = _Site(config, clock, log, rule)
    servers = [
        await asyncio.start_server(site.connection, sock=sock, limit=MAX_LINE, backlog=1024)
        for sock in sockets
    ]
    return RunningSite(sockets[0].getsockname()[1], servers, log)


def _parse_args(argv: Sequence[str] | None) -> SiteConfig:
    parser = argparse.ArgumentParser(prog="python -m urlcheck.demo.site", description=__doc__)
    parser.add_argument(
        "--hosts",
        default=",".join(DEFAULT_HOSTS),
        help="comma-separated addresses to listen on (default: 127.0.0.2 to 127.0.0.9)",
    )
    parser.add_argument("--port", type=int, default=0, help="port for every address (0: any free)")
    parser.add_argument("--log", type=Path, help="append one JSON line per request to this file")
    parser.add_argument(
        "--min-gap",
        type=float,
        metavar="SECONDS",
        help="strict mode: answer 429 to requests closer than this to the previous one per host,"
        " or while another to that host is in flight",
    )
    parser.add_argument(
        "--crawl-delay",
        type=float,
        metavar="SECONDS",
        help="robots.txt asks every user agent for this Crawl-delay",
    )
    args = parser.parse_args(argv)
    hosts = tuple(h.strip() for h in args.hosts.split(",") if h.strip())
    if not hosts:
        parser.error("--hosts needs at least one address")
    if not 0 <= args.port <= 65535:
        parser.error("--port must be between 0 and 65535")
    if args.min_gap is not None and not args.min_gap >= 0:
        parser.error("--min-gap must be a number of seconds >= 0")
    if args.crawl_delay is not None and not args.crawl_delay > 0:
        parser.error("--crawl-delay must be a number of seconds > 0")
    return SiteConfig(hosts, args.port, args.log, args.min_gap, args.crawl_delay)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT; exit status 0, or 1 when the addresses cannot be bound."""
    config = _parse_args(argv)
    where = ",".join(config.hosts)
    return serve(start_site(config), f"urlcheck.demo.site: cannot listen on {where}")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
