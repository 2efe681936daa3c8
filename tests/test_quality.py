"""The code standards CI holds every change to: mypy strict on urlcheck/, ruff lint and format."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CODE = ["urlcheck", "tests", "bench"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_mypy_strict():
    done = run("mypy")
    assert done.returncode == 0, done.stdout[-4000:]


@pytest.mark.parametrize("command", [("check",), ("format", "--check")])
def test_ruff(command):
    done = run("ruff", *command, *CODE)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
