"""Real urlcheck processes for the tests and the benchmarks: ``scrapy crawl check`` and
``scrapy job ...`` run by this interpreter, from the checkout or from any directory made a
project by the environment (as a user's own directory would be by its scrapy.cfg).

A process left to run in the background writes its output to files, never to a pipe nobody
reads (a full pipe stalls it); one run to its end has its output captured as text.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[1]


def project_env(**extra: str) -> dict[str, str]:
    """This environment, with what makes any directory a urlcheck project directory."""
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "urlcheck.settings", **extra}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


def scrapy_argv(*args: str | Path, settings: Iterable[str] = ()) -> list[str]:
    """``python -m scrapy ARGS -s SETTING ...``."""
    argv = [sys.executable, "-m", "scrapy", *map(str, args)]
    for setting in settings:
        argv += ["-s", setting]
    return argv


def crawl_argv(*args: str | Path, settings: Iterable[str] = ()) -> list[str]:
    """``python -m scrapy crawl check ARGS -s SETTING ...``."""
    return scrapy_argv("crawl", "check", *args, settings=settings)


def job_argv(*args: str | Path, settings: Iterable[str] = ()) -> list[str]:
    """``python -m scrapy job ARGS -s SETTING ...``."""
    return scrapy_argv("job", *args, settings=settings)


def start(
    argv: Sequence[str],
    *,
    cwd: Path = REPO,
    env: Mapping[str, str] | None = None,
    stdout: IO[bytes] | int | None = subprocess.DEVNULL,
    stderr: IO[bytes] | int | None = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in ``cwd`` (a project directory through :func:`project_env` unless ``env``
    is given); its output is dropped unless ``stdout`` or ``stderr`` say where it goes."""
    return subprocess.Popen(
        list(argv), cwd=cwd, env=project_env() if env is None else env, stdout=stdout, stderr=stderr
    )


def run(
    argv: Sequence[str],
    *,
    cwd: Path = REPO,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` to its end with its output captured as text; the exit code is the caller's
    to judge."""
    return subprocess.run(
        list(argv),
        cwd=cwd,
        env=project_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def scrapy_job(
    *args: str | Path, cwd: Path = REPO, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """``scrapy job ARGS`` run to its end."""
    return run(job_argv(*args), cwd=cwd, timeout=timeout)


class Process:
    """A process run in the background, its stdout and stderr in ``logs/NAME-N.out|err``."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        logs: Path,
        name: str = "crawl",
        cwd: Path = REPO,
        env: Mapping[str, str] | None = None,
    ) -> None:
        logs.mkdir(parents=True, exist_ok=True)
        n = len(list(logs.glob(f"{name}-*.err")))
        self.out_path = logs / f"{name}-{n}.out"
        self.err_path = logs / f"{name}-{n}.err"
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            self.process = start(argv, cwd=cwd, env=env, stdout=out, stderr=err)

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout: float = 60.0) -> int:
        """The exit code; a process still running after ``timeout`` seconds is killed, and the
        test fails with the end of its stderr."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"{self.err_path.stem}: no exit within {timeout} s:\n{self.stderr()[-3000:]}"
            ) from None

    def stderr(self) -> str:
        return self.err_path.read_text(encoding="utf-8", errors="replace")
