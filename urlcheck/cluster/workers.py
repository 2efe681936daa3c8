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
    state: str = "running"  # "running", or how it ended: "finished", "cancelled", "shutdown"...

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

    def state(self, silent_after: float) -> str:
        """Its own word, or "silent" for a running process that stopped renewing (killed, or
        its machine or network lost)."""
        if self.info.state == "running" and self.seconds_since_beat > silent_after:
            return "silent"
        return self.info.state
