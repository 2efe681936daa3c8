"""The coordinator's side of the exactly-once commit: committed results go from the Redis
stream to results.jsonl, which stays the job's source of truth.

A row is committed once in Redis (the ``done`` bitmap guards the stream); on disk a line is
written only for a row not already in results.jsonl, synced, and only then acknowledged. A
crash between the write and the acknowledgement replays the entry after a restart, and the
``done`` check drops it; a crash before the write replays it too, and it is written then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from urlcheck.cluster.job import ClusterJob


class RowSet(Protocol):
    def __contains__(self, row: object) -> bool: ...
    def add(self, row: int) -> bool: ...


@dataclass(frozen=True, slots=True)
class Collected:
    written: list[int]  # rows whose line this step appended
    duplicates: int  # entries for rows already in results.jsonl
    gone: bool  # Redis holds no state for the job any more
    control: str
    status: str


class ResultCollector:
    def __init__(
        self,
        job: ClusterJob,
        done: RowSet,
        write: Callable[[int, str], None],
        sync: Callable[[], None],
        *,
        batch: int = 500,
    ) -> None:
        self.job = job
        self.done = done
        self.write = write
        self.sync = sync
        self.batch = batch
        self._pending = True  # first read back what an earlier run was handed
        self._synced: list[str] = []  # entries on disk, acknowledged with the next read

    def restart(self) -> None:
        """Read the pending entries again first (after the job was opened again)."""
        self._pending = True
        self._synced = []

    def step(self) -> Collected:
        collection = self.job.collect(self.batch, pending=self._pending, acknowledge=self._synced)
        self._synced = []
        if collection.gone:
            return Collected([], 0, True, collection.control, collection.status)
        if self._pending and not collection.results:
            self._pending = False
            collection = self.job.collect(self.batch)
        written: list[int] = []
        duplicates = 0
        for result in collection.results:
            if result.row in self.done:
                duplicates += 1
                continue
            self.write(result.row, result.line)
            self.done.add(result.row)
            written.append(result.row)
        if written:
            self.sync()
        self._synced = [result.entry_id for result in collection.results]
        return Collected(written, duplicates, False, collection.control, collection.status)

    def flush(self) -> None:
        """Acknowledge what is on disk now (before closing)."""
        if self._synced:
            self.job.acknowledge(self._synced)
            self._synced = []
