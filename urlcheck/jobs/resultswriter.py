"""The one way results.jsonl is appended to, whether by a crawl in one process
(:mod:`urlcheck.pipelines`) or by a distributed job's coordinator
(:mod:`urlcheck.cluster.crawl.coordinator`):

* opened without following a link (:mod:`urlcheck.jobs.nofollow`) and held with the writer's
  ``flock`` (:mod:`urlcheck.jobs.inuse`) for as long as it is open, so another job pointed at
  the file (``-a out=``) is refused;
* one whole line a :meth:`~ResultsWriter.write`, on an unbuffered file, a short write continued
  (a short write is how a filling disk begins);
* a write that fails is undone: the file is cut back to the end of its last whole line
  (truncating needs no room), so no torn line is left, and the error is raised. What the crawl
  does then (stop: :mod:`urlcheck.crawl.writefailure`) is the caller's policy;
* :meth:`~ResultsWriter.sync` makes the lines durable; :meth:`~ResultsWriter.drop_unsynced`
  cuts the file back to what the last sync covered, for a caller that can write those lines
  again later (the coordinator: Redis replays every entry it did not acknowledge).
"""

from __future__ import annotations

import contextlib
import errno
import os
from typing import TYPE_CHECKING, BinaryIO, Self

from urlcheck.jobs.inuse import hold_for_writing
from urlcheck.jobs.nofollow import open_nofollow

if TYPE_CHECKING:
    from pathlib import Path


class ResultsWriter:
    def __init__(self, path: Path, file: BinaryIO) -> None:
        self.path = path
        self._file = file
        self.size = os.fstat(file.fileno()).st_size  # where the next line starts
        self.synced = self.size  # what the last sync made durable (what was there, at first)

    @classmethod
    def open(cls, path: Path) -> Self:
        """Open ``path`` for appending and take its writer's lock. Raises OSError, ``EAGAIN``
        when another process holds the lock, and LinkedFileError/NotAFileError
        (:mod:`urlcheck.jobs.nofollow`)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        out = open_nofollow(path, "ab", buffering=0)
        if not hold_for_writing(out.fileno()):  # another job's crawl writes it (-a out=)
            out.close()
            raise OSError(errno.EWOULDBLOCK, "another crawl is writing it")
        return cls(path, out)

    def write(self, line: bytes) -> None:
        """Append ``line`` (one whole line, its newline included) or, raising the OSError,
        nothing at all."""
        view, written = memoryview(line), 0
        try:
            while written < len(line):
                n = self._file.write(view[written:])
                if not n:
                    raise OSError(errno.EIO, "the write wrote nothing")
                written += n
        except OSError:
            self._cut_back(self.size)
            raise
        self.size += len(line)

    def sync(self) -> None:
        """``fsync`` the lines written so far; raises OSError."""
        os.fsync(self._file.fileno())
        self.synced = self.size

    def drop_unsynced(self) -> None:
        """Cut the file back to what the last :meth:`sync` made durable."""
        if self.size != self.synced:
            self._cut_back(self.synced)
        self.size = self.synced

    def close(self) -> None:
        """Close the file (its lock goes with it); no sync."""
        self._file.close()

    def _cut_back(self, size: int) -> None:
        # ftruncate needs no room; if it fails too, the resume repairs a torn last line.
        with contextlib.suppress(OSError):
            os.ftruncate(self._file.fileno(), size)
