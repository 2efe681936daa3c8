"""Hand-built result lines, shaped as urlcheck.check.result.build_result writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def result(row: int, url: str | None = None, **fields: Any) -> dict[str, Any]:
    url = url or f"http://127.0.0.2/p{row}"
    status = fields.pop("status", 200)
    chain = fields.pop("chain", None)
    if chain is None:
        chain = [{"url": url, "status": status, "location": None, "ms": 10, "kind": None}]
    base: dict[str, Any] = {
        "row": row,
        "url": url,
        "requested_url": url,
        "status": status,
        "final_url": url,
        "final_status": status,
        "hops": max(len(chain) - 1, 0),
        "chain": chain,
        "loop": False,
        "error": None,
        "error_message": None,
        "meta_refresh": None,
        "expected": None,
        "verdict": None,
        "reasons": [],
        "warnings": [],
        "notes": [],
        "retries": 0,
        "retry_after": None,
        "proxy": None,
        "checked_at": "2026-11-30T12:00:00.000Z",
        "input": {},
    }
    base.update(fields)
    return base


def write_results(path: Path, rows: list[dict[str, Any]], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail, encoding="utf-8")
    return path
