"""A job's shared state seen from the coordinator and from ``scrapy job``: opening it (again,
after Redis lost it), control (pause/resume/cancel for every process), status with the list of
workers, the results stream, finishing with expiry, and ``clean``. Every public method raises
ClusterUnavailableError or ClusterError when Redis fails (the boundary, urlcheck.redis.boundary)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from urlcheck.cluster.errors import ClusterBoundary, ClusterError
from urlcheck.cluster.keys import JobKeys
from urlcheck.cluster.scripts import JobScripts, pairs, text
from urlcheck.cluster.workers import WorkerInfo, WorkerStatus
from urlcheck.redis.link import Link

if TYPE_CHECKING:
    import redis

    from urlcheck.redis.boundary import Breaker

GROUP = "collect"
# One coordinator per job (it holds the JOBDIR lock), so one fixed consumer name: after a
# restart it reads back what it was handed before and did not acknowledge.
CONSUMER = "coordinator"
# Keys of a finished job stay this long for `scrapy job status`, then expire.
FINISHED_TTL = 7 * 24 * 3600.0

CONTROLS = {"pause": "paused", "resume": "run", "cancel": "cancelled"}


@dataclass(frozen=True, slots=True)
class Collected:
    entry_id: str
    row: int
    line: str


@dataclass(frozen=True, slots=True)
class Collection:
    gone: bool  # Redis holds no state for the job (it restarted empty, or was cleaned)
    control: str
    status: str
    results: tuple[Collected, ...]


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    exists: bool
    status: str
    control: str
    fed: int  # rows queued by the coordinator (this Redis's lifetime)
    committed: int  # results committed by any process
    reaped: int  # leases that expired (a process died or stalled)
    ready_hosts: int
    in_flight: int
    paused_hosts: dict[str, float]  # host -> seconds left
    workers: tuple[WorkerStatus, ...]
    coordinator: str  # the coordinator's worker id
    coordinator_place: str  # "<machine>:<JOBDIR>" it runs from


class ClusterJob(ClusterBoundary):
    subject = "job"

    def __init__(self, client: redis.Redis, job: str, *, breaker: Breaker | None = None) -> None:
        self.client = client
        self.keys = JobKeys(job)
        self.link = Link(client)
        self.breaker = breaker
        self.scripts = JobScripts(self.link, self.keys)

    @property
    def job(self) -> str:
        return self.keys.job

    @property
    def round_trips(self) -> int:
        return self.link.round_trips

    def close(self) -> None:
        """Close its connections and its client (``scrapy job``'s commands make one for it)."""
        self.link.close()
        self.client.close()

    def open(self, coordinator: str, *, hold: float = 0.0, place: str = "") -> bool:
        """Create the job's state if Redis has none; True when it was created (a new job,
        or Redis lost it: the coordinator then queues again every row not in results.jsonl).
        ``hold``: when created, nothing is handed out for that many seconds (after a loss,
        until requests sent before it have surely ended)."""
        created, _ = self.scripts.run("open", self.job, coordinator, round(hold * 1000), place)
        return bool(created)

    def control(self, action: str) -> bool:
        """pause, resume or cancel every process of the job; False when Redis has no job."""
        if action not in CONTROLS:
            raise ClusterError(f"unknown action {action!r}: expected one of {sorted(CONTROLS)}")
        return bool(self.scripts.run("control", CONTROLS[action]))

    def finish(self, status: str, *, ttl: float = FINISHED_TTL) -> None:
        self.scripts.run("finish", status, round(ttl * 1000))

    def fed_rows(self) -> bytes:
        """The ``fed`` bitmap (bit n = row n was queued), as Redis stores it."""
        return bytes(self.link.call("GET", self.keys.key("fed")) or b"")

    def collect(
        self, count: int, *, pending: bool = False, acknowledge: list[str] | None = None
    ) -> Collection:
        """Up to ``count`` committed results not acknowledged yet; ``pending`` reads again
        those handed out before (after a coordinator restart), else new ones. Never blocks.
        ``acknowledge`` forgets entries already on disk, in the same round trip."""
        from redis.exceptions import ResponseError

        pipe = self.link.pipeline(transaction=False)
        stream = self.keys.key("results")
        if acknowledge:
            pipe.xack(stream, GROUP, *acknowledge)
            pipe.xdel(stream, *acknowledge)
        pipe.hmget(self.keys.key("meta"), ["control", "status"])
        pipe.xreadgroup(GROUP, CONSUMER, {stream: "0" if pending else ">"}, count=count)
        *_, meta, read = pipe.execute(raise_on_error=False)
        if isinstance(meta, Exception):
            raise meta
        control, status = (text(v) if v is not None else "" for v in meta)
        if isinstance(read, ResponseError) and "NOGROUP" in str(read):
            return Collection(True, control, status, ())
        if isinstance(read, Exception):
            raise read
        results: list[Collected] = []
        for _stream, entries in read or []:
            for entry_id, fields in entries:
                if not fields:  # deleted after delivery
                    continue
                row, line = fields.get(b"row"), fields.get(b"line")
                if row is None or line is None:
                    raise ClusterError(f"results entry {text(entry_id)} lacks row or line")
                results.append(Collected(text(entry_id), int(row), text(line)))
        return Collection(not control, control, status, tuple(results))

    def acknowledge(self, entry_ids: list[str]) -> None:
        """The lines are on disk: forget them."""
        if not entry_ids:
            return
        with self.link.pipeline(transaction=True) as pipe:
            pipe.xack(self.keys.key("results"), GROUP, *entry_ids)
            pipe.xdel(self.keys.key("results"), *entry_ids)
            pipe.execute()

    def status(self) -> ClusterStatus:
        now_raw, meta_flat, ready, in_flight, paused_flat, workers_flat = self.scripts.run("status")
        now = int(now_raw) / 1000
        meta = {text(k): text(v) for k, v in pairs(meta_flat)}

        def count(name: str) -> int:
            return int(meta.get(name, "0") or 0)

        workers: list[WorkerStatus] = []
        for i in range(0, len(workers_flat) - 2, 3):
            worker_id = text(workers_flat[i])
            info = WorkerInfo.from_json(text(workers_flat[i + 1]), worker_id)
            beat = float(workers_flat[i + 2]) / 1000
            workers.append(WorkerStatus(info, max(now - beat, 0.0)))
        return ClusterStatus(
            exists=bool(meta),
            status=meta.get("status", ""),
            control=meta.get("control", ""),
            fed=count("fed"),
            committed=count("committed"),
            reaped=count("reaped"),
            ready_hosts=int(ready),
            in_flight=int(in_flight),
            paused_hosts={text(h): max(float(u) / 1000 - now, 0.0) for h, u in pairs(paused_flat)},
            workers=tuple(workers),
            coordinator=meta.get("coordinator", ""),
            coordinator_place=meta.get("coordinator_place", ""),
        )

    def clean(self) -> int:
        """Delete every key of the job (queues of a cancelled job included); returns how many."""
        deleted = 0
        batch: list[Any] = []
        pattern = self.keys.prefix + "*"
        for key in list(self.link.others().scan_iter(match=pattern, count=1000)):
            batch.append(key)
            if len(batch) >= 500:
                deleted += int(self.link.call("DEL", *batch))
                batch = []
        if batch:
            deleted += int(self.link.call("DEL", *batch))
        return deleted


def coordinator_beat(status: ClusterStatus) -> float | None:
    """Seconds since the job's coordinator last renewed, or None when it never did."""
    for worker in status.workers:
        if worker.info.id == status.coordinator:
            return worker.seconds_since_beat
    return None


def describe(status: ClusterStatus) -> dict[str, Any]:
    """The status as plain JSON-ready data (``scrapy job status --json``)."""
    return {
        "status": status.status,
        "control": status.control,
        "fed": status.fed,
        "committed": status.committed,
        "reaped": status.reaped,
        "ready_hosts": status.ready_hosts,
        "in_flight": status.in_flight,
        "paused_hosts": status.paused_hosts,
        "coordinator": status.coordinator,
        "coordinator_place": status.coordinator_place,
        "workers": [
            {
                **json.loads(w.info.to_json()),
                "seconds_since_beat": round(w.seconds_since_beat, 1),
            }
            for w in status.workers
        ],
    }
