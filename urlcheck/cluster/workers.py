"""What each process of a job tells the others about itself (``scrapy job status``)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    id: str
    host: str  # the machine's name
    pid: int
    role: str  # "coordinator" or "worker"
    started: float  # Unix seconds
    rows_done: int = 0  # results this process committed
    in_flight: int = 0  # leases it holds

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, worker_id: str) -> WorkerInfo:
        try:
            data = json.loads(text)
            return cls(**data)
        except (ValueError, TypeError):
            return cls(worker_id, "?", 0, "?", 0.0)


@dataclass(frozen=True, slots=True)
class WorkerStatus:
    info: WorkerInfo
    seconds_since_beat: float
