"""Where a job lives when the user does not say: ``.urlcheck/jobs/<csv stem>-<hash>/`` under the
current directory, the hash being of the CSV's absolute path, so that the same command run
again finds the same job and two CSVs of the same name never share one."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

JOBS_HOME = Path(".urlcheck") / "jobs"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_REMOTE = re.compile(r"https?://[^/]", re.IGNORECASE)


def default_jobdir(csv: Path | str, cwd: Path | None = None) -> Path:
    """The job directory a run on ``csv`` uses by default (relative to ``cwd``)."""
    text = str(csv)
    if _REMOTE.match(text):  # a sitemap's URL: its last path segment, hashed as given
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        name = text.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        stem = _UNSAFE.sub("_", name.split(".", 1)[0]).strip("._") or "sitemap"
        return (cwd or Path.cwd()) / JOBS_HOME / f"{stem[:60]}-{digest}"
    path = Path(csv).resolve()
    digest = hashlib.sha256(str(path).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    # "-" is standard input: one job per directory it is piped in from
    stem = "stdin" if text == "-" else _UNSAFE.sub("_", path.stem).strip("._") or "input"
    return (cwd or Path.cwd()) / JOBS_HOME / f"{stem[:60]}-{digest}"


def job_for(path: Path) -> Path:
    """A job directory as given, or the default job of a CSV given instead."""
    return default_jobdir(path) if path.is_file() else path
