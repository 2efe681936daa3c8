"""Re-checking some rows of a job: ``-a recheck=host_unavailable,timeout,5xx``.

The chosen rows' lines are taken out of results.jsonl (saved to ``results.jsonl.rechecked``)
by one atomic rewrite before the run starts, so those rows are simply not done any more and
the run checks them like any row a resume finds missing. The job therefore never holds two
lines for a row, even if the re-check is interrupted: a later run goes on with what is left.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urlcheck.jobs.files import fsync_dir
from urlcheck.jobs.nofollow import open_nofollow

logger = logging.getLogger(__name__)

_CLASS = re.compile(r"[1-9]xx")
_CODE = re.compile(r"[1-9][0-9][0-9]")
_KIND = re.compile(r"[a-z][a-z0-9_]*")
_CHUNK = 1 << 20


def rechecked_path(results_path: Path) -> Path:
    return results_path.with_name(results_path.name + ".rechecked")


@dataclass(frozen=True)
class Recheck:
    """Which rows to check again. Tokens: a status class of the final status (``5xx``), a
    final status (``503``), ``error`` (any error), ``fail`` (a failed verdict), or an error
    kind (``timeout``, ``dns``, ``host_unavailable``...)."""

    terms: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Recheck:
        terms = tuple(dict.fromkeys(t.strip().lower() for t in text.split(",") if t.strip()))
        if not terms:
            raise ValueError("recheck: expected a comma-separated list such as timeout,5xx")
        for term in terms:
            if not (_CLASS.fullmatch(term) or _CODE.fullmatch(term) or _KIND.fullmatch(term)):
                raise ValueError(
                    f"recheck: {term!r} is neither a status class (5xx), a status (503), "
                    "'error', 'fail' nor an error kind (timeout, dns, host_unavailable...)"
                )
        return cls(terms)

    def __str__(self) -> str:
        return ",".join(self.terms)

    def prefilter(self) -> re.Pattern[bytes]:
        """A bytes pattern every matching line contains (lines without it skip json.loads)."""
        parts = []
        for term in self.terms:
            if _CLASS.fullmatch(term):
                parts.append(rb'"final_status": ' + term[0].encode() + rb"[0-9][0-9][,}]")
            elif _CODE.fullmatch(term):
                parts.append(rb'"final_status": ' + term.encode() + rb"[,}]")
            elif term == "error":
                parts.append(rb'"error": "')
            elif term == "fail":
                parts.append(rb'"verdict": "fail"')
            else:
                parts.append(rb'"error": "' + term.encode() + rb'"')
        return re.compile(b"|".join(parts))

    def match(self, result: dict[str, Any]) -> str | None:
        """The first term ``result`` (a results.jsonl line) matches, or None."""
        final, error = result.get("final_status"), result.get("error")
        for term in self.terms:
            if _CLASS.fullmatch(term):
                if isinstance(final, int) and final // 100 == int(term[0]):
                    return term
            elif _CODE.fullmatch(term):
                if final == int(term):
                    return term
            elif term == "error":
                if error is not None:
                    return term
            elif term == "fail":
                if result.get("verdict") == "fail":
                    return term
            elif error == term:
                return term
        return None


def take_out(path: Path, recheck: Recheck) -> Counter[str]:
    """Remove the lines ``recheck`` matches from ``path`` (atomically), appending them to
    ``<name>.rechecked``; returns how many lines each term took. Call it under the job lock,
    before anything opens the file for appending. Unreadable lines are left to the scan."""
    taken: Counter[str] = Counter()
    if not path.exists():
        return taken
    tmp = path.with_name(f".{path.name}.recheck-{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)  # a crash's leftover, or a link planted at its name
    side_path = rechecked_path(path)
    maybe = recheck.prefilter().search
    try:
        with (
            open_nofollow(path, "rb", buffering=_CHUNK) as src,
            open_nofollow(tmp, "xb", like=path) as out,
        ):
            side = None
            try:
                for line in src:
                    term = None
                    if line.endswith(b"\n") and maybe(line):
                        try:
                            data = json.loads(line)
                        except ValueError:
                            data = None
                        if isinstance(data, dict):
                            term = recheck.match(data)
                    if term is None:
                        out.write(line)
                        continue
                    taken[term] += 1
                    if side is None:
                        side = open_nofollow(side_path, "ab", like=path)
                    side.write(line)
            finally:
                if side is not None:
                    side.flush()
                    os.fsync(side.fileno())
                    side.close()
            out.flush()
            os.fsync(out.fileno())
        if taken:
            tmp.replace(path)
            fsync_dir(path.parent)
    finally:
        tmp.unlink(missing_ok=True)
    return taken
