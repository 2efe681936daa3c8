"""The demo/test site itself, spoken to with http.client and raw sockets on loopback."""

from __future__ import annotations

import base64
import errno
import gzip
import hashlib
import http.client
import re
import select
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sitefixture import SiteServer, host_stats
from urlcheck.demo.routes import ROUTES
from urlcheck.demo.site import MinGapRule, bind_same_port

A, B = "127.0.0.2", "127.0.0.3"
NOT_SERVED = "127.0.0.4"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def server() -> Iterator[SiteServer]:
    with SiteServer((A, B)) as running:
        yield running


def unique() -> str:
    """A query value that keeps a test's per-(host, path+query) state apart from other tests'."""
    return uuid.uuid4().hex[:12]


def fetch(
    server: SiteServer,
    host: str,
    path: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection(host, server.port, timeout=5)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def raw_exchange(server: SiteServer, host: str, data: bytes, timeout: float = 5.0) -> bytes:
    """Send `data`, read until the server closes."""
    with socket.create_connection((host, server.port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def raw_head(sock: socket.socket) -> bytes:
    """Read one response head (through the blank line) from `sock`, byte by byte."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = sock.recv(1)
        if not byte:
            raise ConnectionError(f"closed after {head!r}")
        head += byte
    return head


def header_bytes(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.lower() == name.lower():
            return value.strip()
    return None


def log_for(server: SiteServer, marker: str) -> list[dict[str, Any]]:
    return [r for r in server.log() if marker in str(r["path"])]


# --- listening -----------------------------------------------------------------------------------


def test_every_address_listens_on_the_same_port_and_no_other(server: SiteServer) -> None:
    marker = unique()
    for host in (A, B):
        assert fetch(server, host, f"/ok?{marker}")[0] == 200
    assert sorted(r["local"] for r in log_for(server, marker)) == [
        f"{A}:{server.port}",
        f"{B}:{server.port}",
    ]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((NOT_SERVED, server.port), timeout=2).close()


def test_bind_same_port_shares_one_port_and_reports_a_taken_one() -> None:
    sockets = bind_same_port([A, B, NOT_SERVED])
    try:
        names = [s.getsockname() for s in sockets]
        assert [n[0] for n in names] == [A, B, NOT_SERVED]
        assert len({n[1] for n in names}) == 1
        with pytest.raises(OSError) as caught:
            bind_same_port([NOT_SERVED], names[0][1])
        assert caught.value.errno == errno.EADDRINUSE
    finally:
        for sock in sockets:
            sock.close()


def test_command_exits_1_with_a_message_when_the_port_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind((B, 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "urlcheck.demo.site",
                "--hosts",
                f"{A},{B}",
                "--port",
                str(port),
            ],
            capture_output=True,
            timeout=20,
            check=False,
        )
    assert result.returncode == 1
    assert result.stdout == b""
    assert b"cannot listen on 127.0.0.2,127.0.0.3" in result.stderr
    assert b"Traceback" not in result.stderr


def test_server_stops_cleanly_on_terminate() -> None:
    with SiteServer((A,)) as server:
        assert fetch(server, A, "/ok")[0] == 200
    assert server.returncode == 0


# --- endpoints -----------------------------------------------------------------------------------


def test_ok_and_index(server: SiteServer) -> None:
    status, headers, body = fetch(server, A, "/ok")
    assert (status, headers["Content-Type"]) == (200, "text/html; charset=utf-8")
    assert int(headers["Content-Length"]) == len(body) > 0
    status, _, body = fetch(server, A, "/")
    assert status == 200
    for entry in ROUTES:
        assert entry.pattern.encode() in body


@pytest.mark.parametrize("code", [200, 403, 404, 410, 429, 500, 503])
def test_status(server: SiteServer, code: int) -> None:
    status, headers, body = fetch(server, A, f"/status/{code}")
    assert status == code
    assert headers["Location"] is None
    assert int(headers["Content-Length"]) == len(body) > 0


def test_status_204_has_no_body_and_no_length(server: SiteServer) -> None:
    with socket.create_connection((A, server.port), timeout=5) as sock:
        sock.sendall(
            b"GET /status/204 HTTP/1.1\r\nHost: a\r\n\r\nGET /ok HTTP/1.1\r\nHost: a\r\n\r\n"
        )
        head = raw_head(sock)
        assert head.startswith(b"HTTP/1.1 204 No Content\r\n")
        assert header_bytes(head, b"Content-Length") is None
        # The next response follows at once: the 204 carried no body.
        assert raw_head(sock).startswith(b"HTTP/1.1 200 OK\r\n")


@pytest.mark.parametrize(
    ("query", "location"),
    [
        ("to=%2Fok", "/ok"),
        ("to=ok%3Fa%3D1%26b%3D2", "ok?a=1&b=2"),
        ("to=http%3A%2F%2F127.0.0.3%3A1%2Fx", "http://127.0.0.3:1/x"),
        ("to=//127.0.0.3/x", "//127.0.0.3/x"),
        ("to=%252F", "%2F"),  # decoded once only
        ("to=a+b", "a+b"),  # "+" is not a space here
        ("to=javascript:alert(1)", "javascript:alert(1)"),
        ("to=", ""),
    ],
)
def test_redirect_location_is_the_to_value_decoded_once(
    server: SiteServer, query: str, location: str
) -> None:
    status, headers, _ = fetch(server, A, f"/redirect/301?{query}")
    assert status == 301
    assert headers.get_all("Location") == [location]


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_redirect_without_to_has_no_location(server: SiteServer, code: int) -> None:
    status, headers, _ = fetch(server, A, f"/redirect/{code}")
    assert status == code
    assert headers["Location"] is None


def test_redirect_refuses_header_injection(server: SiteServer) -> None:
    status, headers, _ = fetch(server, A, "/redirect/301?to=%2Fa%0D%0ASet-Cookie:%20x=1")
    assert status == 400
    assert headers["Set-Cookie"] is None


@pytest.mark.parametrize("hex_bytes", ["2fc3a9", "2fe9", "2f6120622f", ""])
def test_raw_location_sends_the_bytes_as_they_are(server: SiteServer, hex_bytes: str) -> None:
    request = f"GET /raw-location/302?hex={hex_bytes} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
    request += "\r\n"
    reply = raw_exchange(server, A, request.encode())
    assert reply.startswith(b"HTTP/1.1 302 Found\r\n")
    assert header_bytes(reply.partition(b"\r\n\r\n")[0], b"Location") == bytes.fromhex(hex_bytes)


def test_chain_of_three_hops_keeps_port_and_query(server: SiteServer) -> None:
    marker = unique()
    path, seen = f"/chain/3?id={marker}", []
    for _ in range(5):
        status, headers, _ = fetch(server, B, path)
        seen.append(status)
        if status != 301:
            break
        location = headers["Location"]
        assert location.startswith(f"http://{B}:{server.port}/chain/")
        path = location.removeprefix(f"http://{B}:{server.port}")
    assert seen == [301, 301, 301, 200]
    assert path == f"/chain/0?id={marker}"


def test_loop_and_self(server: SiteServer) -> None:
    base = f"http://{A}:{server.port}"
    assert fetch(server, A, "/loop/a")[1]["Location"] == f"{base}/loop/b"
    assert fetch(server, A, "/loop/b?q=1")[1]["Location"] == f"{base}/loop/a?q=1"
    assert fetch(server, A, "/loop/c")[0] == 404
    status, headers, _ = fetch(server, A, "/self?q=2")
    assert (status, headers["Location"]) == (301, f"{base}/self?q=2")


def test_redirect_to_another_host_on_the_same_port(server: SiteServer) -> None:
    status, headers, _ = fetch(server, A, f"/301-redirect-to-host?host={B}&path=/chain/1%3Fx%3D1")
    assert (status, headers["Location"]) == (301, f"http://{B}:{server.port}/chain/1?x=1")
    assert fetch(server, A, f"/301-redirect-to-host?host={B}")[1]["Location"].endswith("/ok")
    assert fetch(server, A, "/301-redirect-to-host")[0] == 400


def test_ratelimit_counts_per_host_and_path(server: SiteServer) -> None:
    path = f"/ratelimit/2?retry_after=7&id={unique()}"
    answers = [fetch(server, A, path) for _ in range(3)]
    assert [a[0] for a in answers] == [429, 429, 200]
    assert [a[1]["Retry-After"] for a in answers] == ["7", "7", None]
    # The same path on another host, and another query on the same host, have their own counts.
    assert fetch(server, B, path)[0] == 429
    assert fetch(server, A, path + "&other")[0] == 429
    assert fetch(server, A, path)[0] == 200


def test_ratelimit_503_with_an_http_date_and_without_retry_after(server: SiteServer) -> None:
    when = "Wed, 21 Oct 2037 07:28:00 GMT"
    query = f"status=503&retry_after={when.replace(' ', '%20')}&{unique()}"
    status, headers, _ = fetch(server, A, f"/ratelimit/1?{query}")
    assert (status, headers["Retry-After"]) == (503, when)
    status, headers, _ = fetch(server, A, f"/ratelimit/1?{unique()}")
    assert (status, headers["Retry-After"]) == (429, None)


def test_always(server: SiteServer) -> None:
    path = f"/always/503?retry_after=2&{unique()}"
    for _ in range(3):
        status, headers, _ = fetch(server, A, path)
        assert (status, headers["Retry-After"]) == (503, "2")


def test_delay_does_not_hold_up_other_requests(server: SiteServer) -> None:
    with socket.create_connection((A, server.port), timeout=5) as slow:
        slow.sendall(b"GET /delay/60 HTTP/1.1\r\nHost: a\r\n\r\n")
        assert fetch(server, A, "/ok")[0] == 200
        # /ok was answered while the delayed request, sent first, still has no answer.
        assert select.select([slow], [], [], 0)[0] == []
    status, _, body = fetch(server, A, "/delay/0.05")
    assert status == 200 and b"answered after 0.05 s" in body


def test_busy_answers_slower_the_more_it_was_asked_lately(server: SiteServer) -> None:
    host = {"Host": f"busy-{unique()}.test"}  # a host of its own: the count is per host
    bodies = [fetch(server, A, "/busy?base=0&per=0.01&window=60", headers=host)[2] for _ in "abc"]
    assert [
        b"(0 requests" in bodies[0],
        b"(1 requests" in bodies[1],
        b"(2 requests" in bodies[2],
    ] == [
        True,
        True,
        True,
    ]
    assert fetch(server, A, "/busy?per=x", headers=host)[0] == 400


def test_meta_refresh(server: SiteServer) -> None:
    status, _, body = fetch(server, A, "/meta-refresh?to=%2Fnew%3Fa%3D1%26b%3D2&delay=0")
    assert status == 200
    assert b'<meta http-equiv="refresh" content="0;url=/new?a=1&amp;b=2">' in body


def test_big_streams_without_allocating(server: SiteServer) -> None:
    with socket.create_connection((B, server.port), timeout=5) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: b\r\n\r\n")
        head = raw_head(sock)
        assert header_bytes(head, b"Content-Length") == str(1024 * MIB).encode()
        received = 0
        while received < 4 * MIB:
            received += len(sock.recv(65536))
        rss_kib = _rss_kib(server.pid)
    assert rss_kib < 100 * 1024  # a 1 GiB body held in memory would show here
    # The server noticed the client leaving mid-body, and carries on.
    assert fetch(server, B, "/ok")[0] == 200


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_big_with_a_small_size_is_complete(server: SiteServer) -> None:
    status, headers, body = fetch(server, A, "/big?mb=0.25")
    assert (status, len(body), headers["Content-Length"]) == (200, MIB // 4, str(MIB // 4))


def test_big_chunked(server: SiteServer) -> None:
    status, headers, body = fetch(server, A, "/big-chunked?mb=1.5")
    assert (status, headers["Transfer-Encoding"], headers["Content-Length"]) == (
        200,
        "chunked",
        None,
    )
    assert len(body) == 3 * MIB // 2
    with socket.create_connection((A, server.port), timeout=5) as sock:
        sock.sendall(b"GET /big-chunked HTTP/1.1\r\nHost: a\r\n\r\n")
        raw_head(sock)
        assert sock.recv(16).startswith(b"10000\r\n")  # 64 KiB chunks of the 1 GiB default


def test_http_1_0_gets_a_stream_ended_by_close(server: SiteServer) -> None:
    reply = raw_exchange(server, A, b"GET /big-chunked?mb=0.5 HTTP/1.0\r\n\r\n")
    head, _, body = reply.partition(b"\r\n\r\n")
    assert header_bytes(head, b"Transfer-Encoding") is None
    assert header_bytes(head, b"Connection") == b"close"
    assert len(body) == MIB // 2


def test_gzip_bomb(server: SiteServer) -> None:
    with socket.create_connection((A, server.port), timeout=10) as sock:
        sock.sendall(b"GET /gzip-bomb HTTP/1.1\r\nHost: a\r\n\r\n")
        head = raw_head(sock)
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert header_bytes(head, b"Content-Encoding") == b"gzip"
        size = int(header_bytes(head, b"Content-Length") or b"0")
        assert 0.9e6 < size < 1.2e6
        first = sock.recv(65536)
    inflater = zlib.decompressobj(wbits=31)
    out = inflater.decompress(first, 10 * MIB)
    assert len(out) == 10 * MIB  # 64 KiB or less of it already inflates past 10 MiB
    assert out == bytes(len(out))
    status, _, body = fetch(server, A, "/gzip-bomb?mb=3")
    assert status == 200
    assert gzip.decompress(body) == bytes(3 * MIB)


def test_drop_closes_without_a_response(server: SiteServer) -> None:
    marker = unique()
    request = f"GET /drop?{marker} HTTP/1.1\r\nHost: a\r\n\r\n".encode()
    assert raw_exchange(server, A, request) == b""
    (record,) = log_for(server, marker)
    assert (record["status"], record["outcome"]) == (None, "drop")


def test_reset_sends_rst(server: SiteServer) -> None:
    with socket.create_connection((A, server.port), timeout=5) as sock:
        sock.sendall(b"GET /reset HTTP/1.1\r\nHost: a\r\n\r\n")
        with pytest.raises(ConnectionResetError):
            sock.recv(1024)


@pytest.mark.parametrize("client_resets", [False, True])
def test_hang_answers_nothing_until_the_client_closes(
    server: SiteServer, client_resets: bool
) -> None:
    marker = unique()
    before = len(server.log())
    with socket.create_connection((A, server.port), timeout=0.3) as sock:
        sock.sendall(f"GET /hang?{marker} HTTP/1.1\r\nHost: a\r\n\r\n".encode())
        with pytest.raises(TimeoutError):
            sock.recv(1024)
        assert log_for(server, marker) == []  # still in flight
        if client_resets:  # as clients that give up on a timeout often do
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    server.wait_log(before + 1)
    (record,) = log_for(server, marker)
    assert (record["status"], record["outcome"]) == (None, "hang")


def test_head_and_the_no_head_endpoints(server: SiteServer) -> None:
    conn = http.client.HTTPConnection(A, server.port, timeout=5)
    try:
        answers = []
        for method, path in [
            ("HEAD", "/ok"),
            ("GET", "/ok"),
            ("HEAD", "/no-head"),
            ("GET", "/no-head"),
            ("HEAD", "/no-head-501"),
            ("GET", "/no-head-501"),
        ]:
            conn.request(method, path)
            response = conn.getresponse()
            answers.append((response.status, response.headers, response.read()))
    finally:
        conn.close()
    (h_ok, g_ok, h_405, g_405, h_501, g_501) = answers
    assert (h_ok[0], h_ok[2]) == (200, b"")
    assert h_ok[1]["Content-Length"] == g_ok[1]["Content-Length"] == str(len(g_ok[2]))
    assert (h_405[0], h_405[1]["Allow"], g_405[0]) == (405, "GET", 200)
    assert (h_501[0], g_501[0]) == (501, 200)


def test_unknown_path_and_bad_parameters(server: SiteServer) -> None:
    assert fetch(server, A, "/nothing-here")[0] == 404
    for path in ["/status/abc", "/status/99", "/delay/-1", "/delay/nan", "/big?mb=x"]:
        assert fetch(server, A, path)[0] == 400, path
    assert fetch(server, A, "/raw-location/301?hex=zz")[0] == 400


# --- HTTP/1.1 handling ---------------------------------------------------------------------------


def test_keep_alive_serves_many_requests_on_one_connection(server: SiteServer) -> None:
    marker = unique()
    conn = http.client.HTTPConnection(A, server.port, timeout=5)
    try:
        for _ in range(3):
            conn.request("GET", f"/ok?{marker}")
            response = conn.getresponse()
            response.read()
            assert response.headers["Connection"] == "keep-alive"
    finally:
        conn.close()
    assert len({r["client"] for r in log_for(server, marker)}) == 1


def test_http_1_0_gets_connection_close(server: SiteServer) -> None:
    reply = raw_exchange(server, A, b"GET /ok HTTP/1.0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
    assert header_bytes(reply.partition(b"\r\n\r\n")[0], b"Connection") == b"close"


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /ok HTTP/1.1\r\n\r\n", 400),  # no Host
        (b"GET /ok HTTP/1.1\r\nHost a\r\n\r\n", 400),
        (b"GET /ok HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400),
        (b"GET /ok HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n", 400),
        (b"GET /ok HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        (b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: a\r\n\r\n", 414),
    ],
)
def test_malformed_requests_get_an_error_and_a_close(
    server: SiteServer, request_bytes: bytes, status: int
) -> None:
    reply = raw_exchange(server, A, request_bytes)
    assert reply.startswith(f"HTTP/1.1 {status} ".encode())
    assert fetch(server, A, "/ok")[0] == 200


def test_request_bodies_are_read_and_skipped(server: SiteServer) -> None:
    reply = raw_exchange(
        server,
        A,
        b"POST /status/201 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
        b"POST /status/202 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\n"
        b"GET /status/203 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    )
    assert re.findall(rb"HTTP/1\.1 (\d{3}) ", reply) == [b"201", b"202", b"203"]


def test_absolute_form_is_served_for_the_named_host(server: SiteServer) -> None:
    marker = unique()
    request = (
        f"GET http://{B}:{server.port}/status/410?{marker} HTTP/1.1\r\nHost: {B}:{server.port}\r\n"
        "Proxy-Authorization: Basic dXNlcjpwdw==\r\nConnection: close\r\n\r\n"
    )
    assert raw_exchange(server, A, request.encode()).startswith(b"HTTP/1.1 410 Gone\r\n")
    (record,) = log_for(server, marker)
    assert record["host"] == B
    assert record["local"] == f"{A}:{server.port}"
    assert record["absolute_form"] is True
    assert record["proxy_authorization"] == "Basic dXNlcjpwdw=="


# --- the log -------------------------------------------------------------------------------------


def test_log_fields(server: SiteServer) -> None:
    marker = unique()
    before = time.time()
    status, _, _ = fetch(server, B, f"/status/404?{marker}", headers={"User-Agent": "probe/1"})
    after = time.time()
    assert status == 404
    (record,) = log_for(server, marker)
    assert record["host"] == B
    assert record["local"] == f"{B}:{server.port}"
    assert str(record["client"]).startswith("127.")
    assert (record["method"], record["path"]) == ("GET", f"/status/404?{marker}")
    assert (record["status"], record["outcome"]) == (404, "sent")
    assert before <= float(record["t_arrival"]) <= float(record["t_departure"]) <= after
    assert (record["in_flight_host"], record["rejected"]) == (1, False)
    assert record["user_agent"] == "probe/1"
    assert "proxy_authorization" not in record


def test_log_counts_requests_in_flight_per_host(server: SiteServer) -> None:
    marker = unique()
    with socket.create_connection((A, server.port), timeout=5) as slow:
        slow.sendall(f"GET /delay/0.4?{marker} HTTP/1.1\r\nHost: {A}\r\n\r\n".encode())
        time.sleep(0.1)
        assert fetch(server, A, f"/ok?{marker}")[0] == 200
        assert fetch(server, B, f"/ok?{marker}")[0] == 200
        raw_head(slow)
    records = {(r["host"], str(r["path"]).split("?")[0]): r for r in log_for(server, marker)}
    assert records[(A, "/delay/0.4")]["in_flight_host"] == 1
    assert records[(A, "/ok")]["in_flight_host"] == 2
    assert records[(B, "/ok")]["in_flight_host"] == 1
    stats = host_stats(log_for(server, marker))
    assert (stats[A].count, stats[A].max_in_flight, stats[B].max_in_flight) == (2, 2, 1)


def test_log_is_complete_when_the_client_has_its_response(tmp_path: Path) -> None:
    log_path = tmp_path / "requests.jsonl"
    with SiteServer((A,), log_path=log_path) as server:
        conn = http.client.HTTPConnection(A, server.port, timeout=5)
        try:
            for count in range(1, 21):
                conn.request("GET", f"/ok?{count}")
                conn.getresponse().read()
                assert len(server.log()) == count
        finally:
            conn.close()
    assert log_path.read_text().count("\n") == 20  # the file stays after the server stops


# --- strict mode (--min-gap) ---------------------------------------------------------------------


def test_min_gap_rejects_impolite_requests_per_host() -> None:
    with SiteServer((A, B), min_gap=0.25) as server:
        assert fetch(server, A, "/ok")[0] == 200
        status, headers, body = fetch(server, A, "/ok")  # far less than 250 ms later
        assert status == 429
        assert headers["Retry-After"] is None
        assert b"min-gap rule" in body
        assert fetch(server, B, "/ok")[0] == 200  # the other host has its own clock
        time.sleep(0.3)
        assert fetch(server, A, "/ok")[0] == 200

        # A request while another to the same host is in flight is rejected whatever the gap.
        time.sleep(0.3)
        with socket.create_connection((A, server.port), timeout=5) as slow:
            slow.sendall(f"GET /delay/0.6 HTTP/1.1\r\nHost: {A}\r\n\r\n".encode())
            time.sleep(0.3)
            status, _, body = fetch(server, A, "/ok")
            assert (status, b"in flight" in body) == (429, True)
            assert raw_head(slow).startswith(b"HTTP/1.1 200 OK\r\n")
        log = server.log()
    arrivals = sorted((r["t_arrival"], r["path"], r["rejected"]) for r in log if r["host"] == A)
    assert [(path, rejected) for _, path, rejected in arrivals] == [
        ("/ok", False),
        ("/ok", True),
        ("/ok", False),
        ("/delay/0.6", False),
        ("/ok", True),
    ]
    stats = host_stats(log)
    assert (stats[A].count, stats[A].rejected, stats[B].rejected) == (5, 2, 0)


def test_min_gap_rule() -> None:
    rule = MinGapRule(0.3)
    assert rule.verdict("a", 10.0, busy=False) is None
    assert rule.verdict("b", 10.1, busy=False) is None
    assert "previous request to a" in (rule.verdict("a", 10.2, busy=False) or "")
    # The rejected request counted as an arrival: 0.3 s after the first is still too soon.
    assert rule.verdict("a", 10.3, busy=False) is not None
    assert rule.verdict("a", 10.65, busy=False) is None
    assert "in flight" in (rule.verdict("a", 20.0, busy=True) or "")


def test_host_stats() -> None:
    def record(
        host: str, arrival: float, in_flight: int = 1, rejected: bool = False
    ) -> dict[str, object]:
        return {
            "host": host,
            "t_arrival": arrival,
            "t_departure": arrival + 0.05,
            "in_flight_host": in_flight,
            "rejected": rejected,
        }

    stats = host_stats(
        [
            record("a", 1.0),
            record("a", 1.7, rejected=True),
            record("b", 5.0),
            record("a", 1.3, in_flight=2),  # logged out of arrival order
        ]
    )
    a, b = stats["a"], stats["b"]
    assert (a.count, a.rejected, a.max_in_flight) == (3, 1, 2)
    assert a.gaps == pytest.approx([0.3, 0.4])
    assert a.min_gap == pytest.approx(0.3)
    assert (a.first_arrival, a.last_arrival) == (1.0, 1.7)
    assert a.last_departure == pytest.approx(1.75)
    assert (b.count, b.gaps, b.min_gap) == (1, [], None)


def test_many_concurrent_clients(server: SiteServer) -> None:
    marker = unique()
    errors: list[BaseException] = []

    def client(host: str) -> None:
        try:
            conn = http.client.HTTPConnection(host, server.port, timeout=5)
            try:
                for _ in range(50):
                    conn.request("GET", f"/ok?{marker}")
                    assert conn.getresponse().read()
            finally:
                conn.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=((A, B)[i % 2],)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stats = host_stats(log_for(server, marker))
    assert (stats[A].count, stats[B].count) == (250, 250)


def test_require_answers_200_only_with_what_it_asks_for(server: SiteServer) -> None:
    auth = "/require/auth?user=ann&password=s%3Acret"
    good = "Basic " + base64.b64encode(b"ann:s:cret").decode()
    assert fetch(server, A, auth, headers={"Authorization": good})[0] == 200
    status, headers, body = fetch(server, A, auth, headers={"Authorization": "Basic eA=="})
    assert (status, headers["WWW-Authenticate"]) == (401, 'Basic realm="urlcheck-test"')
    assert b"s:cret" not in body and fetch(server, A, auth)[0] == 401
    cookie = "/require/cookie?name=consent&value=yes"
    assert fetch(server, A, cookie, headers={"Cookie": "a=1; consent=yes"})[0] == 200
    assert fetch(server, A, cookie, headers={"Cookie": "consent=no"})[0] == 403
    header = "/require/header?name=X-Token&value=t1"
    assert fetch(server, A, header, headers={"X-Token": "t1"})[0] == 200
    status, _, body = fetch(server, A, header)
    assert status == 403 and b"header X-Token is missing" in body and b"t1" not in body
    hashed = "/require/auth?sha256=" + hashlib.sha256(b"ann:s:cret").hexdigest()
    assert fetch(server, A, hashed, headers={"Authorization": good})[0] == 200
    assert fetch(server, A, hashed, headers={"Authorization": "Basic !!"})[0] == 401
    digest = hashlib.sha256(b"t1").hexdigest()
    assert (
        fetch(server, A, f"/require/header?name=X-T&sha256={digest}", headers={"X-T": "t1"})[0]
        == 200
    )
    assert fetch(server, A, "/require/other?name=a")[0] == 400
    assert fetch(server, A, "/require/cookie")[0] == 400
