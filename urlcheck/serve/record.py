"""``serve.json``: what the server knows of a job it made, beside the job's own files.

The job's own state is meta.json's (written by the crawl); this file holds only what the crawl
does not know: the job's name and CSV name as the user gave them, the options chosen in the
form, the sites its rows visit (for politeness across jobs), what the user wants of it (run,
paused, cancelled), why it failed, and the supervisor process running it. Written atomically,
as meta.json is. A job directory without it (made by ``urlcheck check --jobdir`` inside the jobs
root) is shown and can be steered, but the server starts it only when asked to re-run it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Self

from urlcheck.jobs.errors import JobFileError
from urlcheck.jobs.files import atomic_write_json, read_json
from urlcheck.serve.sites import is_sitemap_url

RECORD_FILE = "serve.json"
RECORD_VERSION = 1


class Want(StrEnum):
    RUN = "run"  # run until it ends
    RERUN = "rerun"  # run again from the start (a done, cancelled or failed job), then RUN
    PAUSED = "paused"  # the user paused it: a crawl that starts again is paused at once
    CANCEL = "cancel"  # the user cancelled it: asked of every crawl until the job says cancelled
    ENDED = "ended"  # done, cancelled or failed: not started again unless re-run


@dataclass
class ServeRecord:
    id: str
    name: str = ""
    csv_name: str = ""
    rows: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    want: Want = Want.RUN
    failed: str | None = None  # why the job could not run, in words
    # The `urlcheck job run` process: pid and its start time (/proc), so a reused pid is not it.
    supervisor_pid: int | None = None
    supervisor_start: int | None = None
    sites: list[str] = field(default_factory=list)  # input and expected sites, sorted
    runs: int = 0  # how many times the server started it
    input_url: str = ""  # a sitemap given by its URL: fetched by the job's first crawl

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": RECORD_VERSION,
            "id": self.id,
            "name": self.name,
            "csv_name": self.csv_name,
            "rows": self.rows,
            "options": self.options,
            "created_at": self.created_at,
            "want": self.want.value,
            "failed": self.failed,
            "supervisor_pid": self.supervisor_pid,
            "supervisor_start": self.supervisor_start,
            "sites": self.sites,
            "runs": self.runs,
            "input_url": self.input_url,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        if not isinstance(data, dict):
            raise ValueError("not an object")
        options = data.get("options", {})
        sites = data.get("sites", [])
        if not isinstance(options, dict) or not isinstance(sites, list):
            raise ValueError("options must be an object and sites a list")
        pid, start = data.get("supervisor_pid"), data.get("supervisor_start")
        failed = data.get("failed")
        return cls(
            id=str(data["id"]),
            name=str(data.get("name", "")),
            csv_name=str(data.get("csv_name", "")),
            rows=int(data.get("rows", 0)),
            options={str(k): v for k, v in options.items()},
            created_at=str(data.get("created_at", "")),
            want=Want(data.get("want", Want.RUN.value)),
            failed=None if failed is None else str(failed),
            supervisor_pid=None if pid is None else int(pid),
            supervisor_start=None if start is None else int(start),
            sites=[str(s) for s in sites],
            runs=int(data.get("runs", 0)),
            input_url=_sitemap_url(data.get("input_url", "")),
        )

    @classmethod
    def load(cls, jobdir: Path) -> Self | None:
        data = read_json(jobdir / RECORD_FILE)
        if data is None:
            return None
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise JobFileError(
                f"{jobdir / RECORD_FILE} is not a urlcheck serve file: {exc}"
            ) from exc

    def save(self, jobdir: Path) -> None:
        atomic_write_json(jobdir / RECORD_FILE, self.to_dict())


def _sitemap_url(value: object) -> str:
    """serve.json's ``input_url``, checked as the form checks it: the file may come from
    elsewhere, and a crawl is started on it (never on a local path)."""
    if not isinstance(value, str) or (value and not is_sitemap_url(value)):
        raise ValueError("input_url must be an http(s) URL")
    return value
