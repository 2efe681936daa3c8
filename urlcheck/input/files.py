"""Opening an input file, with one clear line for each way it can fail."""

from __future__ import annotations

import io
import stat
from pathlib import Path
from typing import Self

from urlcheck.input.errors import InputError
from urlcheck.input.sniff import SAMPLE_BYTES


def open_input(path: Path, name: str, what: str = "a CSV file") -> io.BufferedReader:
    """``path`` opened for reading bytes; ``name`` is the path as the user gave it."""
    _refuse_a_stream(path, name)
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a directory, not {what}") from None
    except PermissionError:
        if _is_dir(path):  # what Windows says for a directory
            raise InputError(f"{name}: is a directory, not {what}") from None
        raise InputError(f"{name}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot open the file ({exc.strerror})") from None


def read_head(path: Path, name: str, size: int = SAMPLE_BYTES) -> bytes:
    """The file's first ``size`` bytes; an empty file is an error."""
    with open_input(path, name) as f:
        try:
            head = f.read(size)
        except OSError as exc:
            raise InputError(f"{name}: cannot read the file ({exc.strerror})") from None
    if not head:
        raise InputError(f"{name}: the file is empty")
    return head


def _refuse_a_stream(path: Path, name: str) -> None:
    """A pipe (``<(...)``, a FIFO) or a device can be read once only, and opening a FIFO with no
    writer blocks forever: an input is a file, read more than once and copied into the job.
    Standard input is given as ``-`` (copied into the job first)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # opening it says what is wrong
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = "a pipe" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) else "not a file"
    raise InputError(
        f"{name}: is {kind}, not a file; urlcheck reads its input more than once (and keeps a "
        "copy in the job): save it to a file first, or pipe it in as - (urlcheck check - < FILE)"
    )


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


class ReopenedInput:
    """An input read again at offsets (``read_at``): one handle kept open across calls, closed
    by :meth:`close`, the ``with`` block, or at the latest when the reader is collected (never
    left to a ResourceWarning)."""

    _handle: io.BufferedReader | None = None

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            handle.close()
