"""A chain as one line of text: ``301 http://a/ -> 200 https://b/`` (CSV cells, JUnit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def chain_text(chain: Sequence[Mapping[str, Any]]) -> str:
    steps = []
    for entry in chain:
        status = entry.get("status")
        steps.append(
            f"{status if status is not None else entry.get('error', 'error')} {entry['url']}"
        )
    return " -> ".join(steps)
