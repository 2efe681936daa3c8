"""Runs inside ``unshare -n`` (test_beyond_loopback.py): listens with ``urlcheck serve`` on an
address that is not loopback, in a namespace whose only interface is its own ``lo`` (nothing
sent can leave), and writes what a client met to the JSON file named by argv[1].

The demo site listens on a private address and on loopback: an upload whose rows point there
must get ``blocked_address`` for each, and the site must see no request.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import httpx2 as httpx  # noqa: E402

from urlcheck.demo.launcher import SiteServer  # noqa: E402

SERVER = "192.0.2.10"  # TEST-NET-1: not loopback, here only on this namespace's lo
PRIVATE = "10.1.2.3"


def isolate() -> None:
    interfaces = [name for _, name in socket.if_nameindex()]
    if interfaces != ["lo"]:
        raise SystemExit(f"not in a fresh network namespace (interfaces: {interfaces})")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for address in (SERVER, PRIVATE):
        subprocess.run(["ip", "addr", "add", f"{address}/32", "dev", "lo"], check=True)


def main() -> None:
    isolate()
    out: dict[str, Any] = {}
    tmp = Path(tempfile.mkdtemp())
    with SiteServer((PRIVATE, "127.0.0.2"), log_path=tmp / "site.jsonl") as site:
        printed = tmp / "serve.out"
        command = [sys.executable, "-m", "urlcheck", "serve", "--host", SERVER, "--port", "0"]
        command += ["--jobs", str(tmp / "jobs")]
        server = subprocess.Popen(
            command, stdout=printed.open("wb"), stderr=(tmp / "serve.err").open("wb")
        )
        try:
            deadline = time.monotonic() + 60
            while not (match := re.search(r"(http://\S+/)\?token=(\S+)", printed.read_text())):
                assert time.monotonic() < deadline and server.poll() is None, printed.read_text()
                time.sleep(0.05)
            base, token = match[1].rstrip("/"), match[2]
            out["printed"] = printed.read_text()
            # Printed with the machine's name: talk to the address itself, by its name allowed.
            base = f"http://{SERVER}:{base.rsplit(':', 1)[1]}"
            client = httpx.Client(base_url=base, timeout=30)
            out["without_token"] = client.get("/api/jobs").status_code
            out["page_without_token"] = client.get("/").status_code
            out["wrong_host"] = client.get(
                "/api/jobs", headers={"Host": "evil.example"}
            ).status_code
            first = client.get(f"/?token={token}")
            out["exchange"] = [first.status_code, first.headers.get("set-cookie", "")]
            out["with_cookie"] = client.get("/api/jobs").status_code
            bearer = {"Authorization": f"Bearer {token}"}
            rows = [site.url(PRIVATE, "/ok?r=1"), site.url("127.0.0.2", "/ok?r=2")]
            answer = client.post(
                "/api/upload",
                files={"file": ("u.csv", ("url\n" + "\n".join(rows) + "\n").encode())},
                headers=bearer,
            )
            out["upload"] = answer.status_code
            job = answer.json()["id"]
            while (status := client.get(f"/api/jobs/{job}", headers=bearer).json())[
                "state"
            ] != "done":
                assert time.monotonic() < deadline + 120, status
                time.sleep(0.3)
            page = client.get(f"/api/jobs/{job}/results", headers=bearer).json()
            out["errors"] = sorted(r["error"] for r in page["results"])
            out["site_requests"] = len(site.log())
        finally:
            server.terminate()
            server.wait(30)
    out["any_address"] = any_address(tmp)
    Path(sys.argv[1]).write_text(json.dumps(out), encoding="utf-8")


def any_address(tmp: Path) -> list[int]:
    """``--host 0.0.0.0`` prints the machine's name: opened as a browser would (that name in
    its Host header), the printed address exchanges the token and shows the jobs."""
    printed = tmp / "any.out"
    command = [sys.executable, "-m", "urlcheck", "serve", "--host", "0.0.0.0", "--port", "0"]
    command += ["--jobs", str(tmp / "jobs")]
    server = subprocess.Popen(
        command, stdout=printed.open("wb"), stderr=(tmp / "any.err").open("wb")
    )
    try:
        deadline = time.monotonic() + 60
        while not (match := re.search(r"http://(\S+?)/\?token=(\S+)", printed.read_text())):
            assert time.monotonic() < deadline and server.poll() is None, printed.read_text()
            time.sleep(0.05)
        name, token = match[1], match[2]
        port = name.rsplit(":", 1)[1]
        with httpx.Client(base_url=f"http://{SERVER}:{port}", headers={"Host": name}) as client:
            first = client.get(f"/?token={token}")
            return [first.status_code, client.get("/").status_code]
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
