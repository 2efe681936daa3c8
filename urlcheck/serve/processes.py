"""The crawl supervisors the server starts: spawned from an argument list (never a shell) in a
session of their own, and known afterwards by pid and start time only.

A supervisor is the server's child only until the server restarts; the next server finds it by
the pid and start time ``serve.json`` recorded (a pid alone may have been reused). Being in its
own session, a supervisor and its crawl get none of the signals meant for the server (a Ctrl-C,
a ``systemctl stop``), so the server can restart while its crawls go on. Linux's ``/proc`` tells
a process's start time; elsewhere a live pid is taken at its word.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

# Signals the server handles or ignores that a crawl must get with their default meaning.
_DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGHUP)


def spawn(argv: Sequence[str], *, log: Path, env: Mapping[str, str]) -> int:
    """Start ``argv`` in a new session, stdin from /dev/null, stdout and stderr appended to
    ``log``; returns its pid. The caller reaps it with :func:`reap`."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(
        argv[0],
        list(argv),
        dict(env),
        file_actions=actions,
        setsid=True,
        setsigdef=_DEFAULT_SIGNALS,
        setsigmask=(),
    )


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22); None
    when there is no such process, or it is a zombie, or /proc cannot tell."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # the name in parentheses may hold spaces
    if len(fields) < 20 or fields[0] == "Z":
        return None
    try:
        return int(fields[19])
    except ValueError:
        return None


def alive(pid: int, start: int | None) -> bool:
    """Whether the process ``pid`` that started at ``start`` (None: unknown) still runs."""
    if pid <= 0:
        return False
    now = start_time(pid)
    if now is not None:
        return start is None or now == start
    if Path("/proc/self/stat").exists():
        return False  # /proc works here: no such process, or a zombie
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap(pid: int) -> int | None:
    """The exit code of our child ``pid`` once it has ended (negative: killed by that signal);
    None while it runs, or when it is not our child (a previous server's)."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    if done == 0:
        return None
    return os.waitstatus_to_exitcode(status)


def kill(pid: int, signum: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)
