"""``scrapy job`` on a distributed job: the :class:`~urlcheck.jobs.steer.Fleet` that reaches its
processes through Redis, and ``clean``. A cluster failure becomes the steering's one-line
:class:`~urlcheck.jobs.steer.SteerError`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from urlcheck.cluster.admin import clean, cluster_control, cluster_status
from urlcheck.cluster.errors import ClusterError
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.steer import SteerError

if TYPE_CHECKING:
    from pathlib import Path


@contextmanager
def _as_steer_error(where: object) -> Iterator[None]:
    try:
        yield
    except ClusterError as exc:
        raise SteerError(f"{where}: {exc}", ExitCode.INPUT_ERROR) from exc


class ClusterFleet:
    """The processes of the distributed job behind ``jobdir``; ``redis_url`` overrides the one
    cluster.json names, ``redis_params`` are its client options (``-s REDIS_PARAMS``)."""

    def __init__(
        self, jobdir: Path, redis_url: str | None, redis_params: Mapping[str, Any] | None
    ) -> None:
        self.jobdir = jobdir
        self.redis_url = redis_url
        self.redis_params = redis_params

    def status(self) -> tuple[str, dict[str, Any]] | None:
        with _as_steer_error(self.jobdir):
            return cluster_status(self.jobdir, self.redis_url, self.redis_params)

    def control(self, action: str, out: TextIO) -> bool:
        with _as_steer_error(self.jobdir):
            return cluster_control(self.jobdir, action, self.redis_url, out, self.redis_params)


def clean_job(
    name: str, redis_url: str, out: TextIO, redis_params: Mapping[str, Any] | None
) -> None:
    """``scrapy job clean NAME``: remove the job's keys (and its own proxy pool's) from Redis."""
    with _as_steer_error(name):
        clean(name, redis_url, out, redis_params)
