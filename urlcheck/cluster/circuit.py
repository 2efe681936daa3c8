"""The host circuit's store in the job's Redis: a host given up on by one process is given up on
by every process of the job, with the same evidence (the rule: :mod:`urlcheck.politeness.circuit`).

Keys (under the job's hash tag): ``strikes`` (host -> rows in a row that exhausted their tries)
and ``down`` (host -> ``"<since ms>|<evidence json>"``, since on Redis's clock). A claim hands
each lease its host's evidence and whether its count is open, so neither lookup costs a round
trip: only a strike (``HINCRBY``), the answer that clears an open count (``HDEL``) and giving a
host up (``giveup.lua``) do. Only one process holds a host's lease at a time, so the count a
lease saw stays true until its answer.

When Redis does not answer, the circuit fails open: the strike is not counted (the host is not
given up on), and the crawl goes on sending the host's rows, which Redis's own outage pauses.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from urlcheck.cluster.errors import ClusterError
from urlcheck.cluster.evidence import decode_evidence, encode_evidence

if TYPE_CHECKING:
    from urlcheck.cluster.frontier import Frontier, Lease
    from urlcheck.politeness.circuit import Unavailable

logger = logging.getLogger(__name__)


class RedisCircuitStore:
    def __init__(self, frontier: Frontier) -> None:
        self.frontier = frontier
        self._down: dict[str, Unavailable] = {}  # what this process knows: gave up on or leased
        self._open: set[str] = set()  # hosts whose count in a row may be above 0

    def leased(self, lease: Lease) -> None:
        """What a claim told about the lease's host."""
        if lease.down and lease.host not in self._down:
            try:
                self._down[lease.host] = decode_evidence(lease.host, lease.down)
            except ClusterError as exc:
                logger.warning("%s; the host is not given up on here", exc)
        if lease.struck:
            self._open.add(lease.host)

    def strike(self, host: str) -> int:
        try:
            count = self.frontier.strike(host)
        except ClusterError as exc:
            logger.warning(
                "Redis: host %s's failed row is not counted by its circuit: %s", host, exc
            )
            return 0
        self._open.add(host)
        return count

    def clear(self, host: str) -> None:
        if host not in self._open:
            return
        self._open.discard(host)
        try:
            self.frontier.clear_strikes(host)
        except ClusterError as exc:
            logger.warning("Redis: host %s's circuit count is not cleared: %s", host, exc)

    def give_up(self, down: Unavailable) -> tuple[Unavailable, bool]:
        self._open.discard(down.host)
        try:
            new, value = self.frontier.give_up(down.host, encode_evidence(down))
            standing = decode_evidence(down.host, value)
        except ClusterError as exc:
            logger.warning("Redis: host %s is given up on by this process only: %s", down.host, exc)
            new, standing = True, down
        self._down.setdefault(down.host, standing)
        return self._down[down.host], new

    def get(self, host: str) -> Unavailable | None:
        return self._down.get(host)

    def all(self) -> list[Unavailable]:
        return list(self._down.values())
