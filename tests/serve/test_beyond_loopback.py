"""``urlcheck serve`` listening beyond loopback, in a network namespace of the test's own:
a token made up and printed, nothing answered without it, the Host allowlist, the token
exchanged for a cookie, and rows to private and loopback addresses refused by default."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.crawl

CHILD = Path(__file__).with_name("netns_serve_child.py")


def test_beyond_loopback_a_token_is_needed_and_private_input_refused(tmp_path):
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("needs root, unshare(1) and ip(8) to make a network namespace")
    out = tmp_path / "run.json"
    subprocess.run(
        ["unshare", "-n", "--", sys.executable, str(CHILD), str(out)],
        check=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    run = json.loads(out.read_text())
    assert "?token=" in run["printed"] and "made up for this run" in run["printed"]
    assert run["without_token"] == 403 and run["page_without_token"] == 403
    assert run["wrong_host"] == 400
    status, cookie = run["exchange"]
    assert status == 303  # to the same page without the token
    assert "urlcheck_auth=" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert run["with_cookie"] == 200
    assert run["upload"] == 201
    assert run["errors"] == ["blocked_address", "blocked_address"]
    assert run["site_requests"] == 0
    assert run["any_address"] == [303, 200]  # --host 0.0.0.0: the printed name is let in
