"""``-`` as the input: what is piped in is copied to a file first, so that it can be sniffed,
read twice (the index, then each row again) and, in a job, resumed from the job's own copy."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import BinaryIO

from urlcheck.jobs.files import fsync_dir
from urlcheck.jobs.nofollow import open_nofollow, refuse_links, replace_temp

STDIN = "-"
STDIN_FILE = "stdin.input"  # in the job directory, until the job copies it as its input


def copy_stdin(stream: BinaryIO, jobdir: Path | None) -> Path:
    """The file holding all of ``stream``: ``jobdir/stdin.input`` (replaced atomically), or
    without a job a temporary file removed when the process exits."""
    if jobdir is None:
        fd, name = tempfile.mkstemp(prefix="urlcheck-stdin-")
        path = Path(name)
        atexit.register(path.unlink, missing_ok=True)
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(stream, out, 1 << 20)
        return path
    jobdir.mkdir(parents=True, exist_ok=True)
    path = jobdir / STDIN_FILE
    refuse_links(jobdir, path)
    tmp = replace_temp(path)
    try:
        with open_nofollow(tmp, "xb") as out:
            shutil.copyfileobj(stream, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(jobdir)
    return path
