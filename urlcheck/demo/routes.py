"""The demo site's endpoints: behaviour is chosen by the URL path, as in Scrapy's mock server.

Adding an endpoint is one decorated function: ``@route("/name/{param}")`` on an async handler
that takes the `Exchange` and the path parameters as keyword strings and returns a `Reply`. The
first line of its docstring is what the index page (``/``) shows.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import gzip
import hashlib
import html
import ipaddress
import re
import struct
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from urllib.parse import quote

from urlcheck.demo.pages import NORMAL_PAGE, PAGES, DemoPage, down_page
from urlcheck.demo.wire import Abort, Reply, Request, Response, reason

MIB = 1024 * 1024
CHUNK = 64 * 1024
HTML = "text/html; charset=utf-8"

_PADDING = (b"<!-- padding -->\n" * (CHUNK // 17 + 1))[:CHUNK]


@dataclass(slots=True)
class Exchange:
    """One request as a handler sees it, with the site state it may read or change."""

    request: Request
    host: str  # Host header without port, lower-case (the local address when there is none)
    port: int  # the local port the request arrived on
    counters: dict[tuple[str, str], int]
    client: str = ""  # IP address of the TCP peer: through a proxy, the proxy's egress address
    crawl_delay: float | None = None  # what robots.txt asks for (the site's --crawl-delay)

    def hit(self) -> int:
        """Count this request against (host, path+query); returns the count including it."""
        key = (self.host, self.request.target)
        self.counters[key] = count = self.counters.get(key, 0) + 1
        return count

    def url(self, target: str, host: str | None = None) -> str:
        """An absolute URL on this site, on the port the request arrived on."""
        return f"http://{host or self.host}:{self.port}{target}"

    def keep_query(self, path: str) -> str:
        query = self.request.query
        return f"{path}?{query}" if query else path


Handler = Callable[..., Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class Route:
    pattern: str
    regex: re.Pattern[str]
    handler: Handler

    @property
    def summary(self) -> str:
        return (self.handler.__doc__ or "").strip().splitlines()[0]


ROUTES: list[Route] = []


def route(pattern: str) -> Callable[[Handler], Handler]:
    """Register `handler` for paths matching `pattern`; ``{name}`` matches one path segment."""
    regex = re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(pattern)))

    def register(handler: Handler) -> Handler:
        ROUTES.append(Route(pattern, regex, handler))
        return handler

    return register


class BadParamError(Exception):
    """A path or query parameter is unusable; the client gets a 400 naming it."""


async def dispatch(exchange: Exchange) -> Reply:
    if exchange.request.method == "CONNECT":
        return page(501, "this site is not a tunnelling proxy")
    for candidate in ROUTES:
        match = candidate.regex.fullmatch(exchange.request.path)
        if match:
            try:
                return await candidate.handler(exchange, **match.groupdict())
            except BadParamError as exc:
                return page(400, str(exc))
    return page(404, f"no endpoint matches {exchange.request.path}; see / for the list")


def page(status: int, text: str = "", headers: tuple[tuple[str, str], ...] = ()) -> Response:
    title = f"{status} {reason(status)}"
    body = (
        f"<!doctype html>\n<title>{title}</title>\n<h1>{title}</h1>\n<p>{html.escape(text)}</p>\n"
    )
    return Response(status, (("Content-Type", HTML), *headers), body.encode("latin-1", "replace"))


def _int(value: str | None, name: str, low: int, high: int, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    try:
        number = int(value or "")
    except ValueError:
        raise BadParamError(f"{name} must be an integer, got {value!r}") from None
    if not low <= number <= high:
        raise BadParamError(f"{name} must be between {low} and {high}, got {number}")
    return number


def _float(value: str | None, name: str, low: float, high: float, default: float) -> float:
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise BadParamError(f"{name} must be a number, got {value!r}") from None
    if not low <= number <= high:  # also rejects nan
        raise BadParamError(f"{name} must be between {low} and {high}, got {value}")
    return number


def _status(value: str | None, name: str = "status") -> int:
    return _int(value, name, 200, 599)


def _header_safe(value: str, name: str) -> str:
    if any(c in value for c in "\r\n\0"):
        raise BadParamError(f"{name} must not contain CR, LF or NUL")
    return value


def _retry_after(exchange: Exchange) -> tuple[tuple[str, str], ...]:
    value = exchange.request.arg("retry_after")
    return () if value is None else (("Retry-After", _header_safe(value, "retry_after")),)


def _redirect(status: int, location: str) -> Response:
    return page(status, f"moved to {location}", (("Location", location),))


def _repeat(total: int) -> Iterator[bytes]:
    full, rest = divmod(total, CHUNK)
    for _ in range(full):
        yield _PADDING
    if rest:
        yield _PADDING[:rest]


@route("/")
async def index(exchange: Exchange) -> Reply:
    """This list of endpoints."""
    items = "".join(
        f"<li><code>{html.escape(r.pattern)}</code> {html.escape(r.summary)}</li>\n" for r in ROUTES
    )
    body = f"<!doctype html>\n<title>urlcheck demo site</title>\n<ul>\n{items}</ul>\n"
    return Response(200, (("Content-Type", HTML),), body.encode())


@route("/ok")
async def ok(exchange: Exchange) -> Reply:
    """200 with a small HTML page."""
    return page(200, "ok")


@route("/robots.txt")
async def robots(exchange: Exchange) -> Reply:
    """robots.txt that disallows /robots-disallowed/ to every user agent (all else allowed), with
    the site's Crawl-delay when it has one."""
    text = "User-agent: *\nDisallow: /robots-disallowed/\n"
    if exchange.crawl_delay is not None:
        text += f"Crawl-delay: {exchange.crawl_delay:g}\n"
    return Response(200, (("Content-Type", "text/plain"),), text.encode("ascii"))


@route("/status/{code}")
async def status(exchange: Exchange, code: str) -> Reply:
    """That status (200-599), with a small HTML body (none for 204 and 304)."""
    return page(_status(code, "code"))


@route("/redirect/{code}")
async def redirect(exchange: Exchange, code: str) -> Reply:
    """That status with Location exactly `to` (decoded once; no `to`: no Location at all)."""
    target = exchange.request.arg("to")
    if target is None:
        return page(_status(code, "code"), "no Location on purpose")
    return _redirect(_status(code, "code"), _header_safe(target, "to"))


@route("/raw-location/{code}")
async def raw_location(exchange: Exchange, code: str) -> Reply:
    """That status with the Location header set to the raw bytes given as `hex`."""
    try:
        raw = bytes.fromhex(exchange.request.arg("hex") or "")
    except ValueError:
        raise BadParamError("hex must be pairs of hexadecimal digits") from None
    return _redirect(_status(code, "code"), _header_safe(raw.decode("latin-1"), "hex"))


@route("/chain/{n}")
async def chain(exchange: Exchange, n: str) -> Reply:
    """301 to /chain/<n-1> (query kept); /chain/0 answers 200, so /chain/3 is a 3-hop chain."""
    hops = _int(n, "n", 0, 10_000)
    if hops == 0:
        return page(200, "end of the chain")
    return _redirect(301, exchange.url(exchange.keep_query(f"/chain/{hops - 1}")))


@route("/loop/{name}")
async def loop(exchange: Exchange, name: str) -> Reply:
    """/loop/a 301 to /loop/b, /loop/b 301 to /loop/a (query kept)."""
    other = {"a": "b", "b": "a"}.get(name)
    if other is None:
        return page(404, "only /loop/a and /loop/b exist")
    return _redirect(301, exchange.url(exchange.keep_query(f"/loop/{other}")))


@route("/self")
async def self_redirect(exchange: Exchange) -> Reply:
    """301 to itself (query kept)."""
    return _redirect(301, exchange.url(exchange.request.target))


@route("/301-redirect-to-host")
async def redirect_to_host(exchange: Exchange) -> Reply:
    """301 to http://<host>:<same port><path> (`path` defaults to /ok): a cross-host hop."""
    host = exchange.request.arg("host")
    if not host:
        raise BadParamError("host is required")
    target = exchange.request.arg("path") or "/ok"
    return _redirect(301, _header_safe(exchange.url(target, host=host), "host or path"))


@route("/steps/{codes}")
async def steps(exchange: Exchange, codes: str) -> Reply:
    """/steps/301.302 answers 301 to /steps/302, which answers 302 to /steps/end, a 200 page:
    a chain of the redirect statuses named (query kept)."""
    first, _, rest = codes.partition(".")
    if first == "end":
        return page(200, "end of the steps")
    status = _status(first, "codes")
    return _redirect(status, exchange.url(exchange.keep_query(f"/steps/{rest or 'end'}")))


@route("/round-trip")
async def round_trip(exchange: Exchange) -> Reply:
    """301 to host `via` (same port), which sends the client back here to `path` (default /ok):
    a chain that leaves a host and comes back to it."""
    via = exchange.request.arg("via")
    if not via:
        raise BadParamError("via is required")
    path = exchange.request.arg("path") or "/ok"
    back = f"/301-redirect-to-host?host={quote(exchange.host)}&path={quote(path, safe='/')}"
    return _redirect(301, _header_safe(exchange.url(back, host=via), "via or path"))


@route("/indexing")
async def indexing(exchange: Exchange) -> Reply:
    """200 HTML saying what `meta` (robots), `googlebot`, `canonical` and `title` give in its
    head, and `header` (X-Robots-Tag) and `link` (a canonical Link header) in its headers."""
    arg = exchange.request.arg
    head = [f"<title>{html.escape(arg('title') or 'indexing')}</title>"]
    for name in ("robots", "googlebot"):
        value = arg("meta" if name == "robots" else name)
        if value is not None:
            head.append(f'<meta name="{name}" content="{html.escape(value)}">')
    canonical = arg("canonical")
    if canonical is not None:
        head.append(f'<link rel="canonical" href="{html.escape(canonical)}">')
    headers = [("Content-Type", HTML)]
    if (value := arg("header")) is not None:
        headers.append(("X-Robots-Tag", _header_safe(value, "header")))
    if (value := arg("link")) is not None:
        headers.append(("Link", f'<{_header_safe(value, "link")}>; rel="canonical"'))
    body = f"<!doctype html>\n<html><head>{''.join(head)}</head><body><p>a page</p></body></html>\n"
    return Response(200, tuple(headers), body.encode("utf-8"))


@route("/ratelimit/{n}")
async def ratelimit(exchange: Exchange, n: str) -> Reply:
    """The first n requests to this host+path+query answer `status` (429), with Retry-After."""
    limit = _int(n, "n", 0, 1_000_000)
    code = _status(exchange.request.arg("status") or "429")
    if exchange.hit() <= limit:
        return page(code, f"rate limited ({limit} times)", _retry_after(exchange))
    return page(200, "ok after the rate limit")


@route("/always/{code}")
async def always(exchange: Exchange, code: str) -> Reply:
    """Always that status, with Retry-After if `retry_after` is given."""
    return page(_status(code, "code"), "always", _retry_after(exchange))


@route("/delay/{seconds}")
async def delay(exchange: Exchange, seconds: str) -> Reply:
    """200 after that many seconds (other requests are served meanwhile)."""
    await asyncio.sleep(_float(seconds, "seconds", 0.0, 3600.0, 0.0))
    return page(200, f"answered after {seconds} s")


# host -> arrival times (monotonic) of its /busy requests, for the latency that grows with load
_BUSY: dict[str, list[float]] = {}


@route("/busy")
async def busy(exchange: Exchange) -> Reply:
    """200 after `base` + `per` s for every /busy request to this host in the last `window` s:
    a server that answers slower the faster it is asked."""
    base = _float(exchange.request.arg("base"), "base", 0.0, 60.0, 0.2)
    per = _float(exchange.request.arg("per"), "per", 0.0, 60.0, 0.5)
    window = _float(exchange.request.arg("window"), "window", 0.0, 600.0, 2.0)
    now = asyncio.get_running_loop().time()
    recent = [t for t in _BUSY.get(exchange.host, ()) if t > now - window]
    _BUSY[exchange.host] = [*recent, now]
    wait = base + per * len(recent)
    await asyncio.sleep(wait)
    return page(
        200, f"answered after {wait:.3f} s ({len(recent)} requests in the last {window:g} s)"
    )


@route("/meta-refresh")
async def meta_refresh(exchange: Exchange) -> Reply:
    """200 HTML with <meta http-equiv="refresh" content="<delay>;url=<to>">."""
    target = exchange.request.arg("to")
    wait = exchange.request.arg("delay") or "0"
    content = wait if target is None else f"{wait};url={target}"
    body = (
        '<!doctype html>\n<html><head><meta charset="utf-8">\n'
        f'<meta http-equiv="refresh" content="{html.escape(content)}">\n'
        "<title>meta refresh</title></head><body><p>refreshing</p></body></html>\n"
    )
    return Response(200, (("Content-Type", HTML),), body.encode("latin-1"))


@route("/big")
async def big(exchange: Exchange) -> Reply:
    """200 HTML of `mb` MiB (default 1024) with Content-Length, generated as it is sent."""
    size = int(_float(exchange.request.arg("mb"), "mb", 0.0, float(MIB), 1024.0) * MIB)
    return Response(200, (("Content-Type", HTML),), stream=_repeat(size), length=size)


@route("/big-chunked")
async def big_chunked(exchange: Exchange) -> Reply:
    """The same as /big, in chunked transfer encoding (no Content-Length)."""
    size = int(_float(exchange.request.arg("mb"), "mb", 0.0, float(MIB), 1024.0) * MIB)
    return Response(200, (("Content-Type", HTML),), stream=_repeat(size))


@route("/gzip-bomb")
async def gzip_bomb(exchange: Exchange) -> Reply:
    """200, Content-Encoding gzip: ~1 MB that inflates to `mb` MiB (default 1024) of zeros."""
    data = await asyncio.to_thread(_bomb, _int(exchange.request.arg("mb"), "mb", 1, 4096, 1024))
    chunks = (data[i : i + CHUNK] for i in range(0, len(data), CHUNK))
    headers = (("Content-Type", HTML), ("Content-Encoding", "gzip"))
    return Response(200, headers, stream=chunks, length=len(data))


@functools.lru_cache(maxsize=4)
def _bomb(mib: int) -> bytes:
    # One MiB of zeros deflated on its own, flushed to a byte boundary, repeated: each copy is
    # ~1 KB and needs no earlier data, so building a 1 GiB bomb costs one CRC pass (~0.4 s)
    # instead of deflating 1 GiB (~5 s).
    block = bytes(MIB)
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = deflater.compress(block) + deflater.flush(zlib.Z_SYNC_FLUSH)
    last = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty final block
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(block, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    trailer = struct.pack("<II", crc, (mib * MIB) & 0xFFFFFFFF)
    return header + piece * mib + last + trailer


@route("/sitemap.xml")
async def sitemap(exchange: Exchange) -> Reply:
    """A sitemap (urlset) of `n` URLs on this site (or on `host`), `path?r=<i>`, each with a
    lastmod; gzip=1."""
    n = _int(exchange.request.arg("n"), "n", 0, 1_000_000, 3)
    part = _int(exchange.request.arg("part"), "part", 0, 1_000_000, 0)
    path = _header_safe(exchange.request.arg("path") or "/ok", "path")
    host = _host_arg(exchange)
    entries = "".join(
        f"<url><loc>{html.escape(exchange.url(f'{path}?r={part * n + i}', host))}</loc>"
        f"<lastmod>2024-01-{(part * n + i) % 28 + 1:02d}</lastmod></url>\n"
        for i in range(1, n + 1)
    )
    return _xml(exchange, f"<urlset {_SITEMAP_NS}>\n{entries}</urlset>\n")


@route("/sitemap-index.xml")
async def sitemap_index(exchange: Exchange) -> Reply:
    """A sitemap index of `parts` sitemaps of `n` URLs each (/sitemap.xml?part=<j>), on this
    site or on `host` (and listing URLs there); gzip=1."""
    parts = _int(exchange.request.arg("parts"), "parts", 0, 50_000, 2)
    n = _int(exchange.request.arg("n"), "n", 0, 1_000_000, 3)
    gz = "&amp;gzip=1" if exchange.request.arg("gzip") == "1" else ""
    host = _host_arg(exchange)
    also = f"&host={quote(host, safe='')}" if host else ""
    entries = "".join(
        "<sitemap><loc>"
        f"{html.escape(exchange.url(f'/sitemap.xml?n={n}&part={j}{also}', host))}{gz}</loc>"
        "</sitemap>\n"
        for j in range(parts)
    )
    return _xml(exchange, f"<sitemapindex {_SITEMAP_NS}>\n{entries}</sitemapindex>\n")


_HOST = re.compile(r"[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\]")


def _host_arg(exchange: Exchange) -> str | None:
    """The `host` a sitemap's URLs point at (an address or a name), else None (this site)."""
    host = exchange.request.arg("host")
    if host is None:
        return None
    if not _HOST.fullmatch(host):
        raise BadParamError("host must be a host name or an address")
    return host


_SITEMAP_NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def _xml(exchange: Exchange, body: str) -> Response:
    data = b'<?xml version="1.0" encoding="UTF-8"?>\n' + body.encode()
    if exchange.request.arg("gzip") == "1":  # a .xml.gz file: gzip as the body, not an encoding
        return Response(200, (("Content-Type", "application/gzip"),), gzip.compress(data, mtime=0))
    return Response(200, (("Content-Type", "application/xml"),), data)


@route("/drop")
async def drop(exchange: Exchange) -> Reply:
    """Closes the connection without any response."""
    return Abort.DROP


@route("/hang")
async def hang(exchange: Exchange) -> Reply:
    """Never answers; the connection stays open until the client closes it."""
    return Abort.HANG


@route("/reset")
async def reset(exchange: Exchange) -> Reply:
    """Resets the connection (TCP RST) instead of answering."""
    return Abort.RESET


@route("/no-head")
async def no_head(exchange: Exchange) -> Reply:
    """200 to GET; 405 (Allow: GET) to HEAD."""
    if exchange.request.method == "HEAD":
        return page(405, "HEAD is not allowed here", (("Allow", "GET"),))
    return page(200, "ok, but not to HEAD")


@route("/no-head-501")
async def no_head_501(exchange: Exchange) -> Reply:
    """200 to GET; 501 to HEAD."""
    if exchange.request.method == "HEAD":
        return page(501, "HEAD is not implemented here")
    return page(200, "ok, but not to HEAD")


def _demo_page(name: str) -> DemoPage:
    page = PAGES.get(name)
    if page is None:
        raise BadParamError(f"no page named {name!r}; there are: {', '.join(sorted(PAGES))}")
    return page


def _serve_page(page: DemoPage) -> Response:
    # The site sends its own Server header; a second one from the page would only confuse.
    headers = tuple((k, v) for k, v in page.headers if k.lower() != "server")
    return Response(page.status, headers, page.body)


@route("/captcha/{name}")
async def captcha(exchange: Exchange, name: str) -> Reply:
    """A vendor's captcha, challenge or block page, with its status and headers (see pages.py)."""
    return _serve_page(_demo_page(name))


@route("/by-client")
async def by_client(exchange: Exchange) -> Reply:
    """The `as` page (default cloudflare) to clients in `blocked` (IPs or CIDRs), else 200."""
    page = _demo_page(exchange.request.arg("as") or "cloudflare")
    networks = []
    for entry in (exchange.request.arg("blocked") or "").split(","):
        if entry.strip():
            try:
                networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                raise BadParamError(f"blocked must list IP addresses, got {entry!r}") from None
    try:
        client = ipaddress.ip_address(exchange.client)
    except ValueError:
        client = None
    if client is not None and any(client in network for network in networks):
        return _serve_page(page)
    return Response(200, (("Content-Type", HTML),), NORMAL_PAGE)


@route("/down")
async def down(exchange: Exchange) -> Reply:
    """503 (or `status`, 500-599) to everyone, nginx's error page, no Retry-After."""
    code = _int(exchange.request.arg("status"), "status", 500, 599, 503)
    return Response(code, (("Content-Type", "text/html"),), down_page(code))


# --- What a site asks of its visitors: credentials, a cookie, a header (issue 25) ---------------


@route("/require/{what}")
async def require(exchange: Exchange, what: str) -> Reply:
    """200 when the request carries `what`: auth (`user`, `password`), cookie or header (`name`,
    `value`), or any of them given as `sha256` of its value; else 401 (auth) or 403."""
    request, arg = exchange.request, exchange.request.arg
    digest = arg("sha256")

    def same(sent: str | None, expected: str) -> bool:
        if sent is None:
            return False
        if digest is not None:  # the value kept out of the URL (and so out of logs)
            return hashlib.sha256(sent.encode("latin-1")).hexdigest() == digest.lower()
        return sent == expected

    if what == "auth":
        sent = request.header("authorization") or ""
        try:
            pair = base64.b64decode(sent[6:], validate=True).decode("latin-1")
        except ValueError:
            pair = None
        expected = f"{arg('user') or ''}:{arg('password') or ''}"
        if sent.startswith("Basic ") and same(pair, expected):
            return page(200, "welcome")
        challenge = (("WWW-Authenticate", 'Basic realm="urlcheck-test"'),)
        return page(401, "these credentials are not the ones asked for", challenge)
    name, value = arg("name") or "", arg("value") or ""
    if not name:
        raise BadParamError("name must be given")
    if what == "cookie":
        pairs = [p.strip().partition("=") for p in (request.header("cookie") or "").split(";")]
        ok = any(key == name and same(got, value) for key, _, got in pairs)
    elif what == "header":
        ok = same(request.header(name.lower()), value)
    else:
        raise BadParamError(f"what must be auth, cookie or header, got {what!r}")
    return page(200, f"{what} {name} as asked") if ok else page(403, f"{what} {name} is missing")


# --- Locations that browsers read differently from how they look (issue 14) ---------------------
# Every form leads to `host`, which must be a loopback address: never a Location off this machine.

LOCATION_FORMS = (
    "backslash",
    "backslashes",
    "http-one-slash",
    "http-no-slash",
    "https-one-slash",
    "https-no-slash",
    "three-slashes",
    "ipv4-hex",
    "ipv4-int",
    "ipv4-short",
    "ipv4-octal",
    "userinfo",
    "percent",
    "empty",
)


def surprising_location(form: str, exchange: Exchange, ip: ipaddress.IPv4Address, path: str) -> str:
    a, b, c, d = ip.packed
    port = exchange.port
    match form:
        case "backslash":
            return f"/\\{ip}:{port}{path}"
        case "backslashes":
            return f"\\\\{ip}:{port}{path.replace('/', chr(92))}"
        case "http-one-slash" | "https-one-slash":
            return f"{form.partition('-')[0]}:/{ip}:{port}{path}"
        case "http-no-slash" | "https-no-slash":
            return f"{form.partition('-')[0]}:{ip}:{port}{path}"
        case "three-slashes":
            return f"///{ip}:{port}{path}"
        case "ipv4-hex":
            return f"http://0x{a:x}.{b}.{c}.{d}:{port}{path}"
        case "ipv4-int":
            return f"http://{int(ip)}:{port}{path}"
        case "ipv4-short":
            return f"http://{a}.{(b << 16) | (c << 8) | d}:{port}{path}"
        case "ipv4-octal":
            return f"http://0{a:o}.{b}.{c}.{d}:{port}{path}"
        case "userinfo":
            return f"http://{exchange.host}:{port}@{ip}:{port}{path}"
        case "percent":
            return f"{path}?discount=100%"
        case "empty":
            return ""
    raise BadParamError(f"form must be one of {', '.join(LOCATION_FORMS)}, got {form!r}")


@route("/location/{form}")
async def location_form(exchange: Exchange, form: str) -> Reply:
    """301 whose Location is written in `form` (backslash, ipv4-hex, ...) for `host` and `path`."""
    try:
        ip = ipaddress.IPv4Address(exchange.request.arg("host") or exchange.host)
    except ValueError:
        raise BadParamError("host must be an IPv4 address") from None
    if not ip.is_loopback:
        raise BadParamError(f"host must be a loopback address, got {ip}")
    path = _header_safe(exchange.request.arg("path") or "/ok", "path")
    if not path.startswith("/"):
        raise BadParamError(f"path must start with '/', got {path!r}")
    return _redirect(301, surprising_location(form, exchange, ip, path))
