"""Where a report reads from: a job directory or a results file, and the files beside it.

A job directory holds ``results.jsonl``; ``proxies.json`` (the pool snapshot written at close)
and ``hosts.json`` (per-host learned delays and availability) are read when they are there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urlcheck.check.audit import CHECKS, AuditRules
from urlcheck.jobs.errors import JobError
from urlcheck.jobs.files import JobMeta

RESULTS_FILE = "results.jsonl"
PROXIES_FILE = "proxies.json"
HOSTS_FILE = "hosts.json"


_DECODER = json.JSONDecoder()
_FIRST_LINE_MAX = 16 << 20  # far beyond a result line (URLs are capped at 64 KiB)


class SourceError(Exception):
    """The path is not something a report can be made from; the message says why."""


@dataclass(frozen=True, slots=True)
class HostInfo:
    """What a job learned about one host, from ``hosts.json``."""

    delay: float | None = None
    unavailable: bool = False
    backoff_seconds: float | None = None  # time the host spent in back-off


@dataclass
class ResultsSource:
    path: Path  # the results file
    jobdir: Path | None = None
    bad_lines: int = 0  # lines that are not a JSON object with a row (a crash's torn tail)

    @classmethod
    def open(cls, path: Path) -> ResultsSource:
        if path.is_dir():
            results = path / RESULTS_FILE
            if not results.is_file():
                raise SourceError(f"{path}: no {RESULTS_FILE} in this directory")
            source = cls(results, jobdir=path)
            source.check_kind()
            return source
        if not path.is_file():
            raise SourceError(f"{path}: no such job directory or results file")
        source = cls(path)
        source.check_kind()
        return source

    def check_kind(self) -> None:
        """SourceError unless the file's first line is a result line (a JSON object with a row
        number): a CSV or a log given by mistake is refused rather than read as no rows. An
        empty file, or a first line torn by a crash, is a results file with no rows yet."""
        try:
            with self.path.open("rb") as lines:
                first = lines.readline(_FIRST_LINE_MAX)
                while first and first.isspace():
                    first = lines.readline(_FIRST_LINE_MAX)
        except OSError as exc:
            raise SourceError(f"{self.path}: cannot read it: {exc.strerror}") from None
        if not first or (not first.endswith(b"\n") and first.startswith(b'{"row": ')):
            return
        try:
            row = json.loads(first)
        except ValueError:
            row = None
        if not isinstance(row, dict) or not isinstance(row.get("row"), int):
            raise SourceError(
                f"{self.path}: not a urlcheck results file (its first line is not a result "
                "line, a JSON object with a row number)"
            )

    def rows(self) -> Iterator[dict[str, Any]]:
        """Each result line as a dict, in file order; unreadable lines are counted, not fatal."""
        self.bad_lines = 0
        decode = _DECODER.raw_decode  # json.loads, without its per-call checks
        with self.path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if line.isspace():
                    continue
                try:
                    row = decode(line)[0]
                except ValueError:
                    self.bad_lines += 1
                    continue
                if not isinstance(row, dict) or not isinstance(row.get("row"), int):
                    self.bad_lines += 1
                    continue
                yield row

    def _sidecar(self, name: str) -> Any:
        path = self.path.with_name(name)
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SourceError(f"{path}: not readable JSON: {exc}") from exc

    def job(self) -> tuple[str, int] | None:
        """The job's state and its input's row count (meta.json), when the results are a job's."""
        try:
            meta = JobMeta.load(self.path.parent)
        except JobError:
            return None
        return None if meta is None else (meta.state.value, meta.total_rows)

    def many_to_one(self) -> tuple[int, float] | None:
        """The many-to-one thresholds the job ran with (meta.json's settings), the defaults
        for a bare results file; None when the job turned the check off."""
        defaults = AuditRules()
        rows, share = defaults.many_to_one_rows, defaults.many_to_one_share
        try:
            meta = JobMeta.load(self.path.parent)
        except JobError:
            meta = None
        settings = meta.settings if meta is not None else {}
        if settings.get(CHECKS["many_to_one"].setting) == "off":
            return None
        given_rows = settings.get("URLCHECK_MANY_TO_ONE_ROWS")
        if isinstance(given_rows, int) and not isinstance(given_rows, bool) and given_rows >= 1:
            rows = given_rows
        given_share = settings.get("URLCHECK_MANY_TO_ONE_SHARE")
        if isinstance(given_share, int | float) and 0 < given_share <= 100:
            share = float(given_share)
        return rows, share

    def proxies(self) -> dict[str, Any] | None:
        """The proxy pool snapshot written at close (docs/proxypool.md), if the crawl had one."""
        data = self._sidecar(PROXIES_FILE)
        return data if isinstance(data, dict) and isinstance(data.get("proxies"), list) else None

    def hosts(self) -> dict[str, HostInfo]:
        """Learned delays, back-off time and unavailable hosts: ``{"hosts": {host: {"delay":
        s, "too_fast": n, "backoff_seconds": s, "unavailable": {...} | null}}}``, as
        :mod:`urlcheck.extensions.hostreport` writes it (the ``hosts`` wrapper is optional)."""
        data = self._sidecar(HOSTS_FILE)
        if isinstance(data, dict) and isinstance(data.get("hosts"), dict):
            data = data["hosts"]
        if not isinstance(data, dict):
            return {}
        found: dict[str, HostInfo] = {}
        for host, info in data.items():
            if not isinstance(info, dict):
                continue
            delay = info.get("delay", info.get("learned_delay"))
            if info.get("too_fast") == 0:
                delay = None  # the host's usual pace: nothing was learned
            backoff = info.get("backoff_seconds")
            found[str(host)] = HostInfo(
                delay=float(delay) if isinstance(delay, int | float) else None,
                unavailable=bool(info.get("unavailable")),
                backoff_seconds=float(backoff) if isinstance(backoff, int | float) else None,
            )
        return found
