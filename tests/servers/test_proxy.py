"""The demo forward proxy, and the site's endpoints for proxy tests, over loopback only."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers.proxy import _loopback, _parse_args
from tests.servers.proxylauncher import ProxyServer, running_proxies, unused_port
from tests.sitefixture import SiteServer
from urlcheck.check.detection import NOT_DETECTED, Detection, detect, header_map
from urlcheck.demo.pages import DOWN_PAGES, NORMAL_PAGE, PAGES

SITE_A, SITE_B = "127.0.0.2", "127.0.0.3"
CAPTURE_HOST = "127.0.0.5"
ECHO_HOST = "127.0.0.6"
SECRET = ("alice", "s3cr:et@x")


@pytest.fixture(scope="module")
def site() -> Iterator[SiteServer]:
    with SiteServer((SITE_A, SITE_B)) as running:
        yield running


@pytest.fixture(scope="module")
def proxies() -> Iterator[dict[str, ProxyServer]]:
    named = {
        "p20": ProxyServer("127.0.0.20"),
        "p21": ProxyServer("127.0.0.21"),
        "auth": ProxyServer("127.0.0.22", auth=SECRET),
        "always407": ProxyServer("127.0.0.23", mode="auth407"),
        "reset": ProxyServer("127.0.0.24", mode="reset"),
        "hang": ProxyServer("127.0.0.26", mode="hang"),
    }
    with running_proxies(list(named.values())):
        yield named


def unique() -> str:
    return uuid.uuid4().hex[:12]


def via(
    proxy: ProxyServer,
    url: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection(proxy.listen, proxy.port, timeout=5)
    try:
        conn.request(method, url, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def site_lines(site: SiteServer, marker: str) -> list[dict[str, Any]]:
    return [r for r in site.log() if marker in str(r["path"])]


def proxy_lines(proxy: ProxyServer, marker: str) -> list[dict[str, Any]]:
    return [r for r in proxy.log() if marker in str(r["target"])]


class CaptureOrigin:
    """An origin that answers each request with the raw bytes of that request, then closes."""

    def __init__(self, host: str = CAPTURE_HOST) -> None:
        self.sock = socket.create_server((host, 0))
        self.host, self.port = host, self.sock.getsockname()[1]
        self.peers: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            with conn:
                self.peers.append(peer[0])
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, rest = data.partition(b"\r\n\r\n")
                if b"\r\ncontent-length:" in head.lower():
                    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                    while len(rest) < length:
                        rest += conn.recv(65536)
                elif b"chunked" in head.lower():
                    while not rest.endswith(b"0\r\n\r\n"):
                        rest += conn.recv(65536)
                raw = head + b"\r\n\r\n" + rest
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%b" % (len(raw), raw))

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def capture() -> Iterator[CaptureOrigin]:
    origin = CaptureOrigin()
    yield origin
    origin.close()


# --- forwarding ----------------------------------------------------------------------------------


def test_the_origin_sees_each_proxys_own_address(
    site: SiteServer, proxies: dict[str, ProxyServer]
) -> None:
    marker = unique()
    for name in ("p20", "p21"):
        status, _, _ = via(proxies[name], site.url(SITE_A, f"/ok?{marker}"))
        assert status == 200
    clients = sorted(r["client"].rpartition(":")[0] for r in site_lines(site, marker))
    assert clients == ["127.0.0.20", "127.0.0.21"]
    for name, address in (("p20", "127.0.0.20"), ("p21", "127.0.0.21")):
        (line,) = proxy_lines(proxies[name], marker)
        assert line["egress"].startswith(f"{address}:")
        assert (line["method"], line["status"], line["outcome"]) == ("GET", 200, "forwarded")
        assert line["target"] == site.url(SITE_A, f"/ok?{marker}")


def test_one_client_connection_carries_many_requests(
    site: SiteServer, proxies: dict[str, ProxyServer]
) -> None:
    marker = unique()
    proxy = proxies["p20"]
    conn = http.client.HTTPConnection(proxy.listen, proxy.port, timeout=5)
    try:
        answers = []
        for method, path in (("GET", "/ok"), ("HEAD", "/ok"), ("GET", "/chain/1"), ("GET", "/x")):
            conn.request(method, site.url(SITE_B, f"{path}?{marker}"))
            response = conn.getresponse()
            answers.append((response.status, len(response.read())))
            assert response.headers["Connection"] == "keep-alive"
    finally:
        conn.close()
    assert [status for status, _ in answers] == [200, 200, 301, 404]
    assert answers[1][1] == 0  # HEAD: no body
    lines = proxy_lines(proxy, marker)
    assert len(lines) == 4
    assert len({line["client"] for line in lines}) == 1  # one client connection
    assert len({line["egress"] for line in lines}) == 4  # a fresh origin connection each


def test_request_bodies_and_headers_reach_the_origin_as_a_proxy_should_send_them(
    proxies: dict[str, ProxyServer], capture: CaptureOrigin
) -> None:
    proxy = proxies["auth"]
    headers = {
        "Proxy-Authorization": proxy.auth_header(),
        "Proxy-Connection": "keep-alive",
        "X-Marker": "kept",
        "Content-Type": "application/octet-stream",
    }
    body = bytes(range(256)) * 300
    status, _, echoed = via(proxy, capture.url("/form?a=1"), "POST", headers, body)
    assert status == 200
    head, _, forwarded_body = echoed.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /form?a=1 HTTP/1.1"  # origin-form, not the absolute URL
    names = [line.split(b":")[0].lower() for line in lines[1:]]
    assert b"proxy-authorization" not in names
    assert b"proxy-connection" not in names
    assert b"x-marker: kept" in head.lower()
    assert b"connection: close" in head.lower()
    assert b"via: 1.1 urlcheck-demo-proxy" in head.lower()
    assert forwarded_body == body
    assert capture.peers == ["127.0.0.22"]


def test_chunked_request_bodies_are_forwarded(
    proxies: dict[str, ProxyServer], capture: CaptureOrigin
) -> None:
    proxy = proxies["p20"]
    conn = http.client.HTTPConnection(proxy.listen, proxy.port, timeout=5)
    try:
        conn.request(
            "POST", capture.url("/upload"), body=iter([b"hello ", b"world"]), encode_chunked=True
        )
        response = conn.getresponse()
        echoed = response.read()
    finally:
        conn.close()
    assert response.status == 200
    assert echoed.endswith(b"\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n")


def test_large_and_chunked_responses_stream_through(
    site: SiteServer, proxies: dict[str, ProxyServer]
) -> None:
    proxy = proxies["p21"]
    conn = http.client.HTTPConnection(proxy.listen, proxy.port, timeout=10)
    try:
        conn.request("GET", site.url(SITE_A, "/big?mb=8"))
        response = conn.getresponse()
        assert response.headers["Content-Length"] == str(8 * 1024 * 1024)
        assert len(response.read()) == 8 * 1024 * 1024
        conn.request("GET", site.url(SITE_A, "/big-chunked?mb=2"))
        response = conn.getresponse()
        assert response.headers["Transfer-Encoding"] == "chunked"
        assert len(response.read()) == 2 * 1024 * 1024
        conn.request("GET", site.url(SITE_A, "/ok"))  # the connection is still usable
        assert conn.getresponse().status == 200
    finally:
        conn.close()


def test_an_unreachable_origin_is_a_502(proxies: dict[str, ProxyServer]) -> None:
    marker = unique()
    dead = f"http://127.0.0.2:{unused_port('127.0.0.2')}/ok?{marker}"
    status, _, body = via(proxies["p20"], dead)
    assert status == 502
    assert b"ConnectionRefusedError" in body
    (line,) = proxy_lines(proxies["p20"], marker)
    assert (line["status"], line["outcome"]) == (502, "upstream_error")


def test_a_client_that_gives_up_releases_the_origin_connection(
    site: SiteServer, proxies: dict[str, ProxyServer]
) -> None:
    marker = unique()
    conn = http.client.HTTPConnection(proxies["p20"].listen, proxies["p20"].port, timeout=0.3)
    conn.request("GET", site.url(SITE_A, f"/hang?{marker}"))
    with pytest.raises(TimeoutError):
        conn.getresponse()
    conn.close()
    deadline = time.monotonic() + 5
    while not site_lines(site, marker):  # the site logs /hang when its client closes
        assert time.monotonic() < deadline, "the proxy kept the origin connection"
        time.sleep(0.02)
    assert site_lines(site, marker)[0]["outcome"] == "hang"


# --- credentials ---------------------------------------------------------------------------------


def test_credentials_are_checked_and_never_passed_on(
    site: SiteServer, proxies: dict[str, ProxyServer]
) -> None:
    proxy = proxies["auth"]
    marker = unique()
    url = site.url(SITE_A, f"/ok?{marker}")
    conn = http.client.HTTPConnection(proxy.listen, proxy.port, timeout=5)
    try:
        conn.request("GET", url)
        missing = conn.getresponse()
        missing.read()
        conn.request("GET", url, headers={"Proxy-Authorization": "Basic YWxpY2U6d3Jvbmc="})
        wrong = conn.getresponse()
        wrong.read()
        # A 407 keeps the connection, so that the client can retry with credentials on it.
        conn.request("GET", url, headers={"Proxy-Authorization": proxy.auth_header()})
        right = conn.getresponse()
        right.read()
    finally:
        conn.close()
    assert (missing.status, wrong.status, right.status) == (407, 407, 200)
    assert missing.headers["Proxy-Authenticate"] == 'Basic realm="urlcheck-test"'
    lines = proxy_lines(proxy, marker)
    assert [(r["status"], r["had_proxy_auth"], r["auth_ok"]) for r in lines] == [
        (407, False, False),
        (407, True, False),
        (200, True, True),
    ]
    assert len({r["client"] for r in lines}) == 1
    (arrived,) = site_lines(site, marker)
    assert "proxy_authorization" not in arrived
    raw_log = proxy.log_path.read_bytes()
    assert SECRET[1].encode() not in raw_log
    assert proxy.auth_header().split()[1].encode() not in raw_log
    assert SECRET[1] not in repr(proxy)


def test_url_with_auth_is_percent_encoded(proxies: dict[str, ProxyServer]) -> None:
    proxy = proxies["auth"]
    assert proxy.url == f"http://127.0.0.22:{proxy.port}"
    assert proxy.url_with_auth() == f"http://alice:s3cr%3Aet%40x@127.0.0.22:{proxy.port}"
    assert proxies["p20"].url_with_auth() == proxies["p20"].url


def test_auth407_mode_refuses_everyone(site: SiteServer, proxies: dict[str, ProxyServer]) -> None:
    marker = unique()
    headers = {"Proxy-Authorization": "Basic YWxpY2U6czNjcjpldEB4"}
    status, answer_headers, _ = via(
        proxies["always407"], site.url(SITE_A, f"/ok?{marker}"), headers=headers
    )
    assert status == 407
    assert answer_headers["Proxy-Authenticate"] == 'Basic realm="urlcheck-test"'
    assert site_lines(site, marker) == []
    (line,) = proxy_lines(proxies["always407"], marker)
    assert (line["status"], line["outcome"], line["had_proxy_auth"]) == (407, "auth", True)


def test_reset_mode_resets_without_answering(
    site: SiteServer, proxies: dict[str, ProxyServer]
) -> None:
    marker = unique()
    proxy = proxies["reset"]
    with socket.create_connection((proxy.listen, proxy.port), timeout=5) as sock:
        sock.sendall(
            f"GET {site.url(SITE_A, f'/ok?{marker}')} HTTP/1.1\r\nHost: a\r\n\r\n".encode()
        )
        with pytest.raises(ConnectionResetError):
            sock.recv(1024)
    proxy.wait_log(1)
    (line,) = proxy_lines(proxy, marker)
    assert (line["status"], line["outcome"]) == (None, "reset")
    assert site_lines(site, marker) == []


def test_hang_mode_never_answers(site: SiteServer, proxies: dict[str, ProxyServer]) -> None:
    marker = unique()
    proxy = proxies["hang"]
    conn = http.client.HTTPConnection(proxy.listen, proxy.port, timeout=0.3)
    try:
        conn.request("GET", site.url(SITE_A, f"/ok?{marker}"))
        with pytest.raises(TimeoutError):
            conn.getresponse()
    finally:
        conn.close()
    (line,) = proxy_lines(proxy, marker)
    assert (line["status"], line["outcome"]) == (None, "hang")
    assert site_lines(site, marker) == []


def test_command_line_credentials() -> None:
    config = _parse_args(["--listen", "127.0.0.30", "--auth", "bob:pa:ss"])
    assert config.auth == ("bob", "pa:ss")
    assert "pa:ss" not in repr(config)
    with pytest.raises(SystemExit):
        _parse_args(["--auth", "no-colon"])


# --- CONNECT -------------------------------------------------------------------------------------


def read_head(sock: socket.socket) -> bytes:
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = sock.recv(1)
        if not byte:
            raise ConnectionError(f"closed after {head!r}")
        head += byte
    return head


def test_connect_tunnels_to_a_tcp_echo_server(proxies: dict[str, ProxyServer]) -> None:
    echo = socket.create_server((ECHO_HOST, 0))
    peers: list[str] = []

    def serve() -> None:
        conn, peer = echo.accept()
        peers.append(peer[0])
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = echo.getsockname()[1]
    try:
        proxy = proxies["p21"]
        with socket.create_connection((proxy.listen, proxy.port), timeout=5) as sock:
            sock.sendall(
                f"CONNECT {ECHO_HOST}:{port} HTTP/1.1\r\nHost: {ECHO_HOST}:{port}\r\n\r\n".encode()
            )
            assert read_head(sock).startswith(b"HTTP/1.1 200 ")
            payload = bytes(range(256)) * 64
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)  # the half-close travels through the tunnel
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
        assert received == payload
        assert peers == ["127.0.0.21"]
    finally:
        echo.close()
        thread.join(timeout=5)
    line = next(r for r in proxy.log() if r["target"] == f"{ECHO_HOST}:{port}")
    assert (line["method"], line["status"], line["outcome"]) == ("CONNECT", 200, "tunnel")


def test_connect_tunnel_to_the_site_with_credentials(
    site: SiteServer, proxies: dict[str, ProxyServer]
) -> None:
    marker = unique()
    proxy = proxies["auth"]
    conn = http.client.HTTPConnection(proxy.listen, proxy.port, timeout=5)
    conn.set_tunnel(SITE_B, site.port, headers={"Proxy-Authorization": proxy.auth_header()})
    try:
        conn.request("GET", f"/ok?{marker}")
        response = conn.getresponse()
        response.read()
    finally:
        conn.close()
    assert response.status == 200
    (arrived,) = site_lines(site, marker)
    assert arrived["client"].startswith("127.0.0.22:")
    assert "proxy_authorization" not in arrived
    assert arrived["absolute_form"] is False


def test_connect_without_credentials_is_refused(
    site: SiteServer, proxies: dict[str, ProxyServer]
) -> None:
    conn = http.client.HTTPConnection(proxies["auth"].listen, proxies["auth"].port, timeout=5)
    conn.set_tunnel(SITE_B, site.port)
    try:
        with pytest.raises(OSError, match="407"):
            conn.request("GET", "/ok")
    finally:
        conn.close()


# --- loopback only -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "http://192.0.2.1/ok",  # TEST-NET-1: refused before any connection is tried
        "http://localhost:8741/ok",  # host names are refused: no DNS, nothing can resolve away
        "http://10.0.0.1:80/ok",
    ],
)
def test_origins_outside_loopback_are_refused(proxies: dict[str, ProxyServer], target: str) -> None:
    marker = unique()
    status, _, body = via(proxies["p20"], f"{target}?{marker}")
    assert status == 502
    assert b"not a loopback address" in body
    (line,) = proxy_lines(proxies["p20"], marker)
    assert (line["outcome"], "egress" in line) == ("refused", False)


def test_connect_outside_loopback_is_refused(proxies: dict[str, ProxyServer]) -> None:
    proxy = proxies["p20"]
    with socket.create_connection((proxy.listen, proxy.port), timeout=5) as sock:
        sock.sendall(b"CONNECT 192.0.2.1:443 HTTP/1.1\r\nHost: 192.0.2.1:443\r\n\r\n")
        assert read_head(sock).startswith(b"HTTP/1.1 502 ")


def test_loopback_rule() -> None:
    assert _loopback("127.0.0.1") and _loopback("127.255.0.9") and _loopback("::1")
    for host in ("128.0.0.1", "0.0.0.0", "::ffff:127.0.0.1", "localhost", "10.1.2.3", "::"):
        assert not _loopback(host), host


def test_origin_form_requests_are_not_proxied(proxies: dict[str, ProxyServer]) -> None:
    status, _, body = via(proxies["p20"], "/ok")
    assert status == 400
    assert b"absolute http:// URL" in body


def test_the_command_refuses_a_non_loopback_listen_address() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.servers.proxy", "--listen", "0.0.0.0"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert b"must be a loopback IP address" in result.stderr


def test_proxy_stops_cleanly() -> None:
    with ProxyServer("127.0.0.25") as proxy:
        assert proxy.port > 0
    assert proxy.returncode == 0


# --- the site's proxy-test endpoints -------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["cloudflare", "recaptcha", "block403", "turnstile", "datadome", "akamai"]
)
def test_by_client_blocks_only_the_listed_proxy(
    site: SiteServer, proxies: dict[str, ProxyServer], name: str
) -> None:
    page = PAGES[name]
    url = site.url(SITE_A, f"/by-client?blocked=127.0.0.20,127.0.0.99&as={name}&id={unique()}")
    status, headers, body = via(proxies["p20"], url)
    assert (status, body) == (page.status, page.body)
    found = detect(status, header_map(headers.items()), body, url)
    assert found == Detection(page.kind, page.vendor, page.signature)
    status, headers, body = via(proxies["p21"], url)
    assert (status, body) == (200, NORMAL_PAGE)
    assert detect(status, header_map(headers.items()), body, url) == NOT_DETECTED


def test_by_client_takes_networks_and_defaults_to_cloudflare(
    site: SiteServer, proxies: dict[str, ProxyServer]
) -> None:
    url = site.url(SITE_A, f"/by-client?blocked=127.0.0.20/31&id={unique()}")
    for name in ("p20", "p21"):
        status, headers, _ = via(proxies[name], url)
        assert (status, headers["cf-mitigated"]) == (403, "challenge")
    status, _, body = via(proxies["p20"], site.url(SITE_A, "/by-client?blocked=nonsense"))
    assert status == 400
    assert b"blocked must list IP addresses" in body


@pytest.mark.parametrize("name", sorted(PAGES))
def test_captcha_pages_are_served_with_their_status_and_headers(
    site: SiteServer, name: str
) -> None:
    page = PAGES[name]
    conn = http.client.HTTPConnection(SITE_B, site.port, timeout=5)
    try:
        conn.request("GET", f"/captcha/{name}")
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    assert (response.status, body) == (page.status, page.body)
    for header, value in page.headers:
        if header.lower() != "server":
            assert value in response.headers.get_all(header, []), header
    found = detect(response.status, header_map(response.headers.items()), body)
    assert found == Detection(page.kind, page.vendor, page.signature)


def test_unknown_captcha_page_is_a_400(site: SiteServer) -> None:
    conn = http.client.HTTPConnection(SITE_B, site.port, timeout=5)
    try:
        conn.request("GET", "/captcha/nope")
        response = conn.getresponse()
        assert response.status == 400
        assert b"block403" in response.read()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("query", "status"), [("", 503), ("?status=502", 502), ("?status=500", 500)]
)
def test_down_answers_everyone_with_an_error_page(
    site: SiteServer, proxies: dict[str, ProxyServer], query: str, status: int
) -> None:
    for name in ("p20", "p21"):
        got, headers, body = via(proxies[name], site.url(SITE_A, f"/down{query}"))
        assert got == status
        assert headers["Retry-After"] is None
        if status in DOWN_PAGES:
            assert body == DOWN_PAGES[status]
        assert detect(got, header_map(headers.items()), body) == NOT_DETECTED
    assert via(proxies["p20"], site.url(SITE_A, "/down?status=200"))[0] == 400
