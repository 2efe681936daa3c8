"""Job files are opened without following links: a job directory is untrusted input.

A job directory can come from another machine (the README invites resuming one there), so its
entries are the sender's choice. ``results.jsonl`` as a symbolic link to a file of yours would
have results appended to it, the repair would copy a private file's lines into a world-readable
``results.jsonl.dropped``, a linked ``job.lock`` would be truncated. So:

- :func:`refuse_links` refuses a job directory that holds a symbolic link (or a file urlcheck
  writes in place that has another hard link) before anything is opened, with one line naming
  the file (:class:`LinkedFileError`, a :class:`~urlcheck.jobs.errors.JobFileError`);
- :func:`open_nofollow` opens every job file with ``O_NOFOLLOW`` (a link that appears later is
  refused as well), creates temporary files with ``O_EXCL``, and gives a file made from another
  (the repair's ``.dropped``, a rewrite of the results) that file's permissions, never wider;
  the locks (filelock opens with ``O_NOFOLLOW`` itself) refuse a link through
  :func:`no_link_at`.

The job directory itself may be a link: that is the user's own choice of where it lives.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TextIO, overload

from urlcheck.jobs.errors import JobFileError

# Written in place (appended, truncated or locked) rather than replaced by a rename: another
# hard link to one of these would be written through.
WRITTEN_IN_PLACE = (
    "results.jsonl",
    "results.jsonl.dropped",
    "results.jsonl.rechecked",
    "job.lock",
    "control.lock",
    "reserve.bin",
)

_FLAGS = {
    "r": os.O_RDONLY,
    "a": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    "w": os.O_WRONLY | os.O_TRUNC | os.O_CREAT,
    "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}


class LinkedFileError(JobFileError):
    """A job file is a symbolic link, or a file written in place that has another hard link."""


class NotAFileError(JobFileError):
    """A file urlcheck writes in place (the results, a lock) is a device, a pipe, a directory
    or a socket: writing to ``/dev/full`` would never end, a FIFO would block forever."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for a message."""
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def _not_a_file(path: Path, mode: int) -> NotAFileError:
    return NotAFileError(
        f"{path} is {file_kind(mode)}, not a regular file: urlcheck writes results and job "
        "files only to regular files (name a file, or leave out -a out=)"
    )


def _linked(path: Path | str, what: str) -> LinkedFileError:
    return LinkedFileError(
        f"{path} is {what}; urlcheck never writes or reads a job file through a link (a job "
        "directory from elsewhere could point it at any file of yours): remove the link"
    )


def refuse_links(jobdir: Path | None, *also: Path) -> None:
    """Raise :class:`LinkedFileError` naming the first entry of ``jobdir`` (and of ``also``, a
    results file kept elsewhere) that is a symbolic link, or a file written in place with more
    than one hard link; :class:`NotAFileError` for a file written in place (or one of ``also``)
    that is not a regular file. A missing directory or file passes."""
    try:
        entries = sorted(os.scandir(jobdir), key=lambda entry: entry.name) if jobdir else []
    except (FileNotFoundError, NotADirectoryError):
        entries = []
    paths = [Path(entry.path) for entry in entries] + [Path(p) for p in also]
    for path in paths:
        try:
            found = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(found.st_mode):
            raise _linked(path, "a symbolic link")
        if (path.name in WRITTEN_IN_PLACE or path in also) and not stat.S_ISREG(found.st_mode):
            raise _not_a_file(path, found.st_mode)
        if (
            (path.name in WRITTEN_IN_PLACE or path in also)
            and stat.S_ISREG(found.st_mode)
            and found.st_nlink > 1
        ):
            raise _linked(path, f"a file with {found.st_nlink} hard links")


@contextlib.contextmanager
def no_link_at(path: Path | str) -> Iterator[None]:
    """Turn a refused link at ``path`` (``ELOOP`` from an ``O_NOFOLLOW`` open, as filelock's
    own opens are) into :class:`LinkedFileError`."""
    try:
        yield
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _linked(path, "a symbolic link") from None
        raise


def open_fd(path: Path | str, flags: int, mode: int = 0o666) -> int:
    """``os.open`` that never follows a symbolic link at ``path`` (LinkedFileError)."""
    with no_link_at(path):
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


@overload
def open_nofollow(
    path: Path | str,
    mode: Literal["rb", "ab", "wb", "xb"] = "rb",
    *,
    buffering: int = -1,
    encoding: None = None,
    like: Path | None = None,
) -> BinaryIO: ...
@overload
def open_nofollow(
    path: Path | str,
    mode: Literal["r", "a", "w", "x"],
    *,
    buffering: int = -1,
    encoding: str | None = None,
    like: Path | None = None,
) -> TextIO: ...
def open_nofollow(
    path: Path | str,
    mode: str = "rb",
    *,
    buffering: int = -1,
    encoding: str | None = None,
    like: Path | None = None,
) -> IO[Any]:
    """``open(path, mode)`` for a job file: ``r``, ``a``, ``w`` or ``x`` (exclusive creation),
    ``b`` or text. A file this call creates gets the permissions of ``like`` when that exists
    (a file holding another's lines is never more readable than it), else the usual 0666 less
    the umask. A file opened for writing must have one hard link (or be new)."""
    path = Path(path)
    kind = mode.replace("b", "").replace("t", "")
    if kind not in _FLAGS:
        raise ValueError(f"unsupported mode {mode!r}")
    created = kind == "x"
    fd = -1
    if kind in ("a", "w") and like is not None:
        try:  # created here, so that it can be given like's permissions
            fd = open_fd(path, _FLAGS["x"])
            created = True
        except FileExistsError:
            pass
    if fd < 0:
        fd = open_fd(path, _FLAGS[kind])
    try:
        links = os.fstat(fd).st_nlink
        if kind != "r" and not created and links > 1:
            raise _linked(path, f"a file with {links} hard links")
        if created and like is not None:
            with contextlib.suppress(FileNotFoundError):
                os.fchmod(fd, stat.S_IMODE(like.stat().st_mode))
        binary = "b" in mode
        flag = {"r": "r", "a": "a", "w": "w", "x": "w"}[kind] + ("b" if binary else "")
        return open(fd, flag, buffering=buffering, encoding=None if binary else encoding)  # noqa: PTH123 (a descriptor)
    except BaseException:
        os.close(fd)
        raise


def truncate(path: Path, size: int) -> None:
    """``os.truncate`` that never follows a link at ``path``."""
    fd = open_fd(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)


def replace_temp(path: Path) -> Path:
    """The temporary file for an atomic replacement of ``path``, cleared of whatever was at its
    name (a crash's leftover, or a link planted there): open it with ``open_nofollow(tmp, "x")``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    return tmp
