"""How the job keeps the evidence of a host given up on (``down`` in Redis, written by
giveup.lua): ``"<since ms>|<evidence json>"``. Read by the frontier (the host report) and by the
host circuit's store (:mod:`urlcheck.cluster.circuit`)."""

from __future__ import annotations

import json

from urlcheck.cluster.errors import ClusterError
from urlcheck.politeness.circuit import Strike, Unavailable


def encode_evidence(down: Unavailable) -> str:
    last = down.last
    return json.dumps(
        {
            "rows": down.rows,
            "status": last.status,
            "error": last.error,
            "retry_after": last.retry_after,
            "tries": last.tries,
        },
        separators=(",", ":"),
    )


def decode_evidence(host: str, value: str) -> Unavailable:
    """``"<since ms>|<evidence json>"`` as stored by giveup.lua."""
    since, _, evidence = value.partition("|")
    try:
        data = json.loads(evidence)
        strike = Strike(data["status"], data["error"], data["retry_after"], int(data["tries"]))
        return Unavailable(host, int(data["rows"]), strike, int(since) / 1000)
    except (ValueError, KeyError, TypeError) as exc:
        raise ClusterError(f"host circuit evidence for {host!r}: {value!r}: {exc}") from None
