"""One row's result: the typed record written to results.jsonl, and how a line is read back.

The record's field order is part of the format: ``row`` comes first, and ``status``,
``final_status`` and ``verdict`` are the first keys of those names in a line, in that order
(``url`` and ``requested_url`` before them are strings, hops use none of them, the free-form
``input`` object comes last), so :func:`read_key` finds what a resume needs without parsing
the JSON of a million lines.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, NamedTuple

from urlcheck.check.audit import CHECKS, chain_findings
from urlcheck.check.finalpage import page_findings
from urlcheck.check.tls import CERTIFICATE_INVALID, tls_invalid
from urlcheck.check.verdict import VerdictRules, judge
from urlcheck.clock import utc_iso

if TYPE_CHECKING:
    from collections.abc import Iterable

    from urlcheck.check.finalpage import FinalPage
    from urlcheck.check.hops import Hop, RowTask


@dataclass(slots=True)
class Result:
    """A row's line in results.jsonl (fields in file order; README "Output" documents each)."""

    row: int
    url: str
    requested_url: str | None
    status: int | None
    final_url: str | None
    final_status: int | None
    hops: int
    chain: list[Hop]
    loop: bool
    error: str | None
    error_message: str | None
    meta_refresh: str | None
    expected: str | None
    verdict: str | None
    reasons: list[str]
    warnings: list[str]
    final_page: FinalPage | None
    notes: list[str]
    retries: int
    retry_after: float | None
    proxy: str | None
    checked_at: str
    input: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}

    def to_json_line(self) -> bytes:
        return json.dumps(self.to_dict(), ensure_ascii=False).encode("utf-8") + b"\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """A line read back; fields a line lacks (an older format) get empty values."""
        values: dict[str, Any] = {name: data.get(name, _EMPTY.get(name)) for name in FIELDS}
        return cls(**values)


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Result))
_EMPTY: dict[str, Any] = {
    "hops": 0,
    "chain": [],
    "loop": False,
    "reasons": [],
    "warnings": [],
    "notes": [],
    "retries": 0,
    "checked_at": "",
    "input": {},
}


# What a result is counted under by its final status (jobs' counts, reports, metrics).
STATUS_CLASSES: tuple[str, ...] = ("2xx", "3xx", "4xx", "5xx", "other", "error")


def status_class(final_status: int | None) -> str:
    """The class a result is counted under.

    ``error`` means the chain did not end in a response (network error, loop, bad location, too
    many hops): results.jsonl has ``final_status: null`` exactly then. Codes outside 200-599
    (LinkedIn's 999, a stray 1xx) are ``other`` rather than being passed off as errors.
    """
    if final_status is None:
        return "error"
    if 200 <= final_status <= 599:
        return f"{final_status // 100}xx"
    return "other"


def hop_warnings(chain: list[Hop]) -> list[str]:
    """Every hop's warnings, once each, in chain order (the row's ``warnings`` lists them)."""
    return list(dict.fromkeys(w for entry in chain for w in entry.get("warnings", ())))


def build_result(
    task: RowTask,
    chain: list[Hop],
    *,
    rules: VerdictRules,
    loop: bool = False,
    error: str | None = None,
    error_message: str | None = None,
    meta_refresh: str | None = None,
    retries: int = 0,
    retry_after: float | None = None,
    proxy: str | None = None,
    final_page: FinalPage | None = None,
    findings: Iterable[str] = (),
) -> Result:
    """The row's line. ``findings``: audit check codes the crawl found on its own (a hop's
    warning that names a registered check counts as one), placed by their levels."""
    first = chain[0] if chain else None
    last = chain[-1] if chain else None
    broken = loop or error is not None
    final_url = None if broken or last is None else last["url"]
    final_status = None if broken or last is None else last["status"]
    hops = max(len(chain) - 1, 0)
    warned = hop_warnings(chain)
    found = [*findings, *(w for w in warned if w in CHECKS)]
    if final_url is not None:  # the audit judges chains that ended at a response
        judged = bool(task.expected and task.expected.strip())
        found += chain_findings(
            chain, judged=judged, expected=task.expected, requested_url=task.requested_url
        )
        if final_status is not None and 200 <= final_status < 300:
            found += page_findings(
                final_page, final_url, ignore_trailing_slash=rules.ignore_trailing_slash
            )
    if tls_invalid(warned):  # a certificate a browser refuses, on any hop (even a refused one)
        found.append(CERTIFICATE_INVALID)
    # A bot wall's page is not the site's answer: a wall the row ended on, on the first hop,
    # says nothing of it (one taken as the answer, URLCHECK_BOT_WALLS=warn, is judged).
    walled = first is not None and "block" in first and error == "blocked"
    judged_first = first if first is not None and not walled else None
    verdict = judge(
        expected=task.expected,
        first_status=judged_first["status"] if judged_first else None,
        final_url=final_url,
        final_status=final_status,
        hops=hops,
        loop=loop,
        error=error,
        rules=rules,
        findings=found,
    )
    return Result(
        row=task.row,
        url=task.url,
        requested_url=task.requested_url,
        status=first["status"] if first else None,
        final_url=final_url,
        final_status=final_status,
        hops=hops,
        chain=chain,
        loop=loop,
        error=error,
        error_message=error_message,
        meta_refresh=meta_refresh,
        expected=task.expected,
        verdict=verdict.verdict,
        reasons=verdict.reasons,
        warnings=verdict.warnings + [w for w in warned if w not in CHECKS],
        final_page=final_page,
        notes=task.notes,
        retries=retries,
        retry_after=retry_after,
        proxy=proxy,
        checked_at=utc_iso(time.time()),
        input=task.extra,
    )


# --- reading lines back ---------------------------------------------------------------------------
# Inside a JSON string a quote is always escaped, so `, "key": ` with a bare quote is structure,
# never text; the first `, "final_status": ` / `, "verdict": ` of a line written by
# Result.to_json_line is the top-level one (and so is the first `, "status": `: only the strings
# `url` and `requested_url` come before it). A second `{"row": ` means two lines ran together (a
# torn line followed by an append).
ROW_RE = re.compile(rb'\{"row": (0|[1-9][0-9]{0,11}), "')
STATUS_RE = re.compile(rb', "status": (null|[0-9]{1,6})[,}]')
FINAL_STATUS_RE = re.compile(rb', "final_status": (null|[0-9]{1,6})[,}]')
VERDICT_RE = re.compile(rb', "verdict": (null|"pass"|"fail")[,}]')
# The reasons and warnings right after the verdict: codes only (no quote, no bracket inside).
CHECKS_RE = re.compile(rb' "reasons": \[([^\]]{0,8192})\], "warnings": \[([^\]]{0,8192})\]')
_CODE_RE = re.compile(rb'"([A-Za-z0-9_.:-]{1,100})"')
ROW_KEY = b'{"row": '
LINE_END = b"}\n"
# ``url`` is a line's second key, right where ROW_RE ends: its JSON string as written.
URL_KEY = b'url": "'


def url_hash(url: str) -> int:
    """What a resume compares a row's URL by (this process's hash of its UTF-8 bytes): the
    input's cell on one side, a line's ``url`` (:func:`line_url_hash`) on the other."""
    return hash(url.encode("utf-8", "surrogatepass"))


def line_url_hash(line: bytes, at: int) -> int | None:
    """:func:`url_hash` of the ``url`` of ``line``, whose key starts at ``at`` (where ROW_RE's
    match ends); None when it is not there. Without an escape in it (URLs rarely have one) the
    bytes between the quotes are the URL's UTF-8, and the first quote after the opening one
    ends the string; with one, the string is read as JSON."""
    start = at + len(URL_KEY)
    if not line.startswith(URL_KEY, at):
        return None
    end = line.find(b'"', start)
    if end < 0:
        return None
    raw = line[start:end]
    if b"\\" not in raw:
        return hash(raw)
    try:
        url, _ = _JSON.raw_decode(line[start - 1 :].decode("utf-8", "surrogatepass"))
    except ValueError:
        return None
    return url_hash(url) if isinstance(url, str) else None


_JSON = json.JSONDecoder()


def slow_line_url_hash(line: bytes) -> int | None:
    """:func:`url_hash` of the ``url`` of a line read as JSON (a line in another key order)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    url = data.get("url") if isinstance(data, dict) else None
    return url_hash(url) if isinstance(url, str) else None


def check_lists(line: bytes, pos: int | None = None) -> tuple[bytes, bytes]:
    """The raw reasons and warnings lists of a line, read at ``pos`` (just after the verdict's
    comma) or searched for; empty when the line has none."""
    m = CHECKS_RE.match(line, pos) if pos is not None else CHECKS_RE.search(line)
    return (m[1], m[2]) if m is not None else (b"", b"")


def check_codes(raw: bytes) -> list[str]:
    """The codes of a raw list from :func:`check_lists`."""
    return [code.decode("ascii") for code in _CODE_RE.findall(raw)] if raw else []


class LineKey(NamedTuple):
    """What a resume needs of a line: its row, first status, final status (the first status
    when a line has no final status) and verdict."""

    row: int
    status: int | None
    final_status: int | None
    verdict: str | None


def read_key(line: bytes) -> LineKey | None:
    """The key of a whole line (newline included); None when it is not a result line."""
    m = ROW_RE.match(line)
    if m is not None and line.endswith(LINE_END) and line.find(ROW_KEY, 1) < 0:
        sm = STATUS_RE.search(line, m.end())
        fm = FINAL_STATUS_RE.search(line, sm.end()) if sm is not None else None
        if sm is not None and fm is not None:
            vm = VERDICT_RE.search(line, fm.end())
            if vm is not None:
                first, final, verdict = sm[1], fm[1], vm[1]
                return LineKey(
                    int(m[1]),
                    None if first == b"null" else int(first),
                    None if final == b"null" else int(final),
                    None if verdict == b"null" else verdict[1:-1].decode("ascii"),
                )
    return _read_key_slowly(line)


def _read_key_slowly(line: bytes) -> LineKey | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    row = data.get("row")
    if not isinstance(row, int) or isinstance(row, bool):
        return None
    first = data.get("status")
    final = data.get("final_status", first)
    for status in (first, final):
        if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
            return None
    verdict = data.get("verdict")
    if verdict is not None and not isinstance(verdict, str):
        return None
    return LineKey(row, first, final, verdict)
