"""One row's work as it travels through Redis: JSON, never pickle (any worker, any version of
Python, and an operator with ``redis-cli`` can read it; nothing in Redis can run code).

A queue entry is ``"<row>|<task json>"`` so the scripts read the row without a JSON parser.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from urlcheck.cluster.errors import ClusterError


class TaskCodecError(ClusterError):
    """A queue entry that is not a task urlcheck wrote."""


@dataclass(slots=True)
class Task:
    row: int
    url: str  # as written in the CSV
    requested_url: str | None  # the first URL requested (normalised)
    expected: str | None
    extra: dict[str, str]
    target: str  # the URL this hop requests
    method: str = "GET"
    chain: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    retries: int = 0  # tries spent on earlier hops
    retry_times: int = 0  # tries of this hop so far (Scrapy's ``retry_times``)
    retry_after: float | None = None
    # An earlier hop was answered from a public address: private space is out of bounds now
    # (urlcheck.check.addressguard); a worker must not lose that on the way.
    after_public: bool = False


_FIELDS: dict[str, tuple[type, ...]] = {
    "row": (int,),
    "url": (str,),
    "requested_url": (str, type(None)),
    "expected": (str, type(None)),
    "extra": (dict,),
    "target": (str,),
    "method": (str,),
    "chain": (list,),
    "notes": (list,),
    "retries": (int,),
    "retry_times": (int,),
    "retry_after": (int, float, type(None)),
    "after_public": (bool,),
}


def encode_entry(task: Task) -> str:
    if task.row < 0:
        raise TaskCodecError(f"row {task.row}: rows are numbered from 0")
    body = json.dumps(asdict(task), ensure_ascii=False, separators=(",", ":"))
    return f"{task.row}|{body}"


def decode_entry(entry: str) -> Task:
    head, bar, body = entry.partition("|")
    try:
        data = json.loads(body) if bar else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or set(data) != set(_FIELDS):
        raise TaskCodecError(f"not a urlcheck task: {entry[:120]!r}")
    for name, types in _FIELDS.items():
        value = data[name]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise TaskCodecError(f"task field {name!r} has {value!r}: {entry[:120]!r}")
    if str(data["row"]) != head:
        raise TaskCodecError(f"entry row {head!r} differs from its task's: {entry[:120]!r}")
    return Task(**data)
