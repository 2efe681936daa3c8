"""The package as a user installs it: a real wheel, built from a copy of the sources, installed
into a fresh virtualenv in a temporary directory, then `urlcheck demo` and `scrapy demo` run from
a directory that is not the checkout.

Offline: the wheel is built by setuptools' PEP 517 backend in this environment (setuptools comes
with the test extra; it is what `pip wheel --no-build-isolation` runs, without pip's own start
and its separate metadata pass) and installed without dependencies; the new virtualenv finds
Scrapy and the rest in this one's site-packages, added as a plain path (so this checkout's
editable urlcheck is not importable).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def run(argv: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SCRAPY_SETTINGS_MODULE")}
    return subprocess.run(
        [str(a) for a in argv],
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def build_wheel(out: Path) -> Path:
    source = out / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(
        REPO / "urlcheck", source / "urlcheck", ignore=shutil.ignore_patterns("__pycache__")
    )
    build = "import sys; from setuptools import build_meta; build_meta.build_wheel(sys.argv[1])"
    done = run([sys.executable, "-c", build, out], source)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("urlcheck-*.whl")
    return wheel


def make_venv(root: Path, wheel: Path) -> Path:
    venv = root / "venv"
    done = run([sys.executable, "-m", "venv", "--without-pip", venv], root)
    assert done.returncode == 0, done.stderr
    python = venv / "bin" / "python"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root)
    site_packages = Path(purelib.stdout.strip())
    # Scrapy and the other dependencies: this virtualenv's site-packages, after the new one's.
    (site_packages / "test-venv-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip: list[str | Path] = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    pip += ["--python", python]
    done = run([*pip, "install", "-q", "--no-deps", "--no-index", wheel], root)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


def test_an_installed_wheel_runs_the_demo_from_any_directory(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "urlcheck/demo/data/demo.csv" in names
    assert "urlcheck/demo/data/pages/cloudflare.html" in names
    assert "urlcheck/cli.py" in names
    # `urlcheck serve`'s pages, script and style
    assert {"urlcheck/serve/templates/job.html.j2", "urlcheck/serve/static/app.js"} <= set(names)
    # the test servers stay out of the wheel
    assert not [n for n in names if n.startswith(("tests/", "urlcheck/demo/proxy"))]

    venv = make_venv(tmp_path, wheel)
    work = tmp_path / "somewhere"
    work.mkdir()
    where = run([venv / "bin" / "python", "-c", "import urlcheck; print(urlcheck.__file__)"], work)
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr

    demo = run([venv / "bin" / "urlcheck", "demo", "-s", "LOG_LEVEL=WARNING"], work)
    assert demo.returncode == 0, demo.stdout + demo.stderr[-3000:]  # as designed
    assert "16 rows checked" in demo.stdout
    assert "Rows 3, 6, 12, 14, 15 and 16 fail their verdicts on purpose" in demo.stdout
    assert "[temporary_redirect]" in demo.stdout
    status = run([venv / "bin" / "urlcheck", "job", "status", "demo-job"], work)
    assert status.returncode == 0, status.stderr
    assert "rows:          16 / 16" in status.stdout

    # `scrapy demo` outside any project: the scrapy.commands entry point
    scrapy: list[str | Path] = [venv / "bin" / "python", "-m", "scrapy", "demo", "--jobdir", "job2"]
    demo = run([*scrapy, "-s", "LOG_LEVEL=WARNING"], work)
    assert demo.returncode == 0, demo.stdout + demo.stderr[-3000:]
    assert "16 rows checked" in demo.stdout
    job = run([venv / "bin" / "python", "-m", "scrapy", "job", "status", "job2"], work)
    assert job.returncode == 0, job.stderr
    assert "rows:          16 / 16" in job.stdout
