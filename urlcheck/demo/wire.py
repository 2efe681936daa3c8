"""HTTP/1.1 on the wire for the demo site and the test proxy: reading and writing heads.

Header values and query arguments are kept as latin-1 strings, so every byte maps to one code point
and a value the site echoes (a ``Location``) goes back out byte for byte.
"""

from __future__ import annotations

import asyncio
import email.utils
import enum
import http
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

MAX_LINE = 16 * 1024
MAX_HEADERS = 100
MAX_BODY = 10 * 1024 * 1024

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSIONS = {"HTTP/1.1": (1, 1), "HTTP/1.0": (1, 0)}


class BadRequestError(Exception):
    """The client sent something that is not HTTP/1.x; answered with `status`, then closed."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True)
class Request:
    method: str
    target: str  # path and query, as sent (absolute-form targets are reduced to this)
    version: tuple[int, int]
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    authority: str | None  # host[:port] from an absolute-form target (a client talking to a proxy)
    path: str = field(init=False)
    query: str = field(init=False)

    def __post_init__(self) -> None:
        self.path, _, self.query = self.target.partition("?")

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    def arg(self, name: str) -> str | None:
        """Query argument `name`, percent-decoded once (``+`` stays ``+``), latin-1 per byte."""
        for pair in self.query.split("&"):
            key, sep, value = pair.partition("=")
            if unquote(key, encoding="latin-1") == name:
                return unquote(value, encoding="latin-1") if sep else ""
        return None

    @property
    def host(self) -> str | None:
        """Host the request is for, lower-case, without the port (None when not given)."""
        raw = self.authority if self.authority is not None else self.headers.get("host")
        if not raw:
            return None
        return strip_port(raw.strip()).lower()

    @property
    def keep_alive(self) -> bool:
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        if self.version >= (1, 1):
            return "close" not in tokens
        return "keep-alive" in tokens


def strip_port(authority: str) -> str:
    if authority.startswith("["):  # IPv6 literal: [::1]:8080
        return authority.partition("]")[0] + "]"
    return authority.rpartition(":")[0] if ":" in authority else authority


@dataclass(slots=True)
class Head:
    """A request or response head as sent: the start line's three parts, and the header fields
    with the case of their names, their order and repeats kept (a proxy forwards them so)."""

    start: tuple[str, str, str]  # method, target, version / version, status, reason phrase
    fields: list[tuple[str, str]]

    def get(self, name: str) -> str | None:
        """The first value of field `name` (lower-case), else None."""
        return next((v for k, v in self.fields if k.lower() == name), None)

    def tokens(self, name: str) -> set[str]:
        """The comma-separated tokens of every `name` field, lower-case."""
        return {
            t.strip().lower() for k, v in self.fields if k.lower() == name for t in v.split(",")
        }

    def joined(self) -> dict[str, str]:
        """Lower-case names; repeated fields joined with ", "."""
        headers: dict[str, str] = {}
        for name, value in self.fields:
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        return headers


async def read_head(reader: asyncio.StreamReader) -> Head | None:
    """The next head on `reader`; None on a clean end of stream before it."""
    try:
        line = await reader.readuntil(b"\n")
        while line in (b"\r\n", b"\n"):  # RFC 9112 2.2: ignore empty lines before a request
            line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise BadRequestError("incomplete start line") from exc
        return None
    except asyncio.LimitOverrunError as exc:
        raise BadRequestError("start line too long", 414) from exc
    parts = line.rstrip(b"\r\n").decode("latin-1").split(" ", 2)
    if len(parts) != 3:
        raise BadRequestError("malformed start line")
    return Head((parts[0], parts[1], parts[2]), await _read_fields(reader))


async def _read_fields(reader: asyncio.StreamReader) -> list[tuple[str, str]]:
    fields: list[tuple[str, str]] = []
    for _ in range(MAX_HEADERS + 1):
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            raise BadRequestError("connection closed inside the head") from exc
        except asyncio.LimitOverrunError as exc:
            raise BadRequestError("header line too long", 431) from exc
        line = line.rstrip(b"\r\n")
        if not line:
            return fields
        if line[:1] in (b" ", b"\t"):
            raise BadRequestError("obsolete header line folding")
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            raise BadRequestError("malformed header line")
        if b"\r" in value or b"\0" in value:
            raise BadRequestError("control character in header value")
        fields.append((name.decode("ascii"), value.strip(b" \t").decode("latin-1")))
    raise BadRequestError("too many header lines", 431)


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """Read one request head and discard its body; None on a clean end of stream."""
    head = await read_head(reader)
    if head is None:
        return None
    method, target, version = _check_request_line(head.start)
    headers = head.joined()
    authority = None
    if not target.startswith("/"):
        if method == "OPTIONS" and target == "*":
            target = "*"
        elif "://" in target:
            parts = urlsplit(target)
            if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
                raise BadRequestError("bad absolute-form target")
            authority = parts.netloc.rpartition("@")[2]
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        elif method != "CONNECT":
            raise BadRequestError("bad request target")
    request = Request(method, target, version, headers, authority)
    if version >= (1, 1) and "host" not in headers:
        raise BadRequestError("HTTP/1.1 request without Host")  # RFC 9112 3.2: MUST answer 400
    await _discard_body(reader, headers)
    return request


def _check_request_line(start: tuple[str, str, str]) -> tuple[str, str, tuple[int, int]]:
    method, target, version = start
    if not _TOKEN.fullmatch(method.encode("latin-1")) or not target:
        raise BadRequestError("malformed request line")
    if version not in _VERSIONS:
        if re.fullmatch(r"HTTP/\d\.\d", version):
            raise BadRequestError("HTTP version not supported", 505)
        raise BadRequestError("malformed HTTP version")
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in target):
        raise BadRequestError("control character or space in request target")
    return method, target, _VERSIONS[version]


async def _discard_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> None:
    encoding = headers.get("transfer-encoding")
    length = headers.get("content-length")
    if encoding is not None:
        if length is not None:
            raise BadRequestError("both Content-Length and Transfer-Encoding")  # smuggling guard
        if encoding.strip().lower() != "chunked":
            raise BadRequestError("unsupported transfer coding", 501)
        await _discard_chunked(reader)
    elif length is not None:
        if not length.isdigit():
            raise BadRequestError("bad Content-Length")
        size = int(length)
        if size > MAX_BODY:
            raise BadRequestError("request body too large", 413)
        try:
            await reader.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            raise BadRequestError("connection closed inside the request body") from exc


async def _discard_chunked(reader: asyncio.StreamReader) -> None:
    total = 0
    try:
        while True:
            size_line = (await reader.readuntil(b"\n")).split(b";")[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError as exc:
                raise BadRequestError("bad chunk size") from exc
            total += size
            if total > MAX_BODY:
                raise BadRequestError("request body too large", 413)
            if size == 0:
                break
            await reader.readexactly(size + 2)
        while (await reader.readuntil(b"\n")).strip():  # trailer fields
            pass
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        raise BadRequestError("bad chunked request body") from exc


class Abort(enum.Enum):
    """Ways to end an exchange without a response."""

    DROP = "drop"  # close the connection (FIN)
    HANG = "hang"  # keep the connection open, never answer, until the client closes
    RESET = "reset"  # SO_LINGER 0 then close: the client sees a TCP RST


@dataclass(frozen=True, slots=True)
class Response:
    """A response: `body`, or a lazy `stream` of chunks (`length` bytes; None means chunked)."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    stream: Iterator[bytes] | None = None
    length: int | None = None


Reply = Response | Abort


def reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def body_allowed(status: int) -> bool:
    return status >= 200 and status not in (204, 304)


_date_cache: tuple[int, str] = (0, "")


def http_date() -> str:
    global _date_cache  # noqa: PLW0603 - one formatted Date per second is plenty
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache = (now, email.utils.formatdate(now, usegmt=True))
    return _date_cache[1]


def encode_head(start: str, headers: Iterable[tuple[str, str]]) -> bytes:
    """A head from its start line (``HTTP/1.1 200 OK``, ``GET / HTTP/1.1``) and fields."""
    lines = [start, *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def status_line(status: int) -> str:
    return f"HTTP/1.1 {status} {reason(status)}"
