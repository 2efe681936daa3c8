"""One row's result: the record written to results.jsonl (field order is part of the format:
``row`` comes first so a resume can find done rows without parsing JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from urlcheck.verdict import VerdictRules, judge


@dataclass(slots=True)
class RowTask:
    """What a row asks for; travels in request meta (``urlcheck_task``) along its chain."""

    row: int
    url: str
    requested_url: str | None
    expected: str | None
    extra: dict[str, str]
    host_id: int = -1
    notes: list[str] = field(default_factory=list)


def hop(
    url: str,
    *,
    status: int | None = None,
    location: str | None = None,
    ms: int | None = None,
    kind: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "url": url,
        "status": status,
        "location": location,
        "ms": ms,
        "kind": kind,
    }
    if error is not None:
        entry["error"] = error
    return entry


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def build_result(
    task: RowTask,
    chain: list[dict[str, Any]],
    *,
    rules: VerdictRules,
    loop: bool = False,
    error: str | None = None,
    error_message: str | None = None,
    meta_refresh: str | None = None,
    retries: int = 0,
    retry_after: float | None = None,
    proxy: str | None = None,
) -> dict[str, Any]:
    first = chain[0] if chain else None
    last = chain[-1] if chain else None
    broken = loop or error is not None
    final_url = None if broken or last is None else last["url"]
    final_status = None if broken or last is None else last["status"]
    hops = max(len(chain) - 1, 0)
    verdict = judge(
        expected=task.expected,
        first_status=first["status"] if first else None,
        final_url=final_url,
        final_status=final_status,
        hops=hops,
        loop=loop,
        error=error,
        rules=rules,
    )
    result: dict[str, Any] = {
        "row": task.row,
        "url": task.url,
        "requested_url": task.requested_url,
        "status": first["status"] if first else None,
        "final_url": final_url,
        "final_status": final_status,
        "hops": hops,
        "chain": chain,
        "loop": loop,
        "error": error,
        "error_message": error_message,
        "meta_refresh": meta_refresh,
        "expected": task.expected,
        "verdict": verdict.verdict,
        "reasons": verdict.reasons,
        "warnings": verdict.warnings,
        "notes": task.notes,
        "retries": retries,
        "retry_after": retry_after,
        "proxy": proxy,
        "checked_at": utc_now(),
        "input": task.extra,
    }
    return result
