"""A row's requests to and from the JSON tasks that travel through Redis (the requests and lines
are made by the crawl's :class:`~urlcheck.crawl.requests.RowRequests`, as in one process)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from urlcheck.check.hops import Hop, RowTask
from urlcheck.cluster.task import Task
from urlcheck.crawl import meta as m

if TYPE_CHECKING:
    from scrapy import Request

    from urlcheck.check.result import Result
    from urlcheck.crawl.requests import RowRequests


def row_of(request: Request) -> int | None:
    task = request.meta.get(m.TASK)
    return task.row if isinstance(task, RowTask) else None


def task_from_row(row_task: RowTask, method: str, *, after_public: bool = False) -> Task:
    """A new row, as the coordinator queues it; ``after_public``: a site gave it (a sitemap
    fetched from a public address)."""
    assert row_task.requested_url is not None
    return _task(row_task, row_task.requested_url, method, after_public=after_public)


def task_from_request(request: Request) -> Task:
    """A row's request in flight (a hop, a retry), as it goes back to the frontier."""
    meta = request.meta
    return _task(
        meta[m.TASK],
        request.url,
        request.method,
        chain=list(meta[m.CHAIN]),
        retries=int(meta[m.RETRIES]),
        retry_times=int(meta.get("retry_times", 0)),
        retry_after=meta.get(m.RETRY_AFTER),
        after_public=bool(meta.get(m.AFTER_PUBLIC)),
    )


def _task(row_task: RowTask, target: str, method: str, **progress: Any) -> Task:
    return Task(
        row=row_task.row,
        url=row_task.url,
        requested_url=row_task.requested_url,
        expected=row_task.expected,
        extra=dict(row_task.extra),
        target=target,
        method=method,
        notes=list(row_task.notes),
        **progress,
    )


def _row_task(task: Task) -> RowTask:
    return RowTask(
        task.row,
        task.url,
        task.requested_url,
        task.expected,
        dict(task.extra),
        -1,
        list(task.notes),
    )


def request_from_task(requests: RowRequests, task: Task) -> Request:
    request = requests.request(
        _row_task(task),
        task.target,
        cast("list[Hop]", list(task.chain)),
        retries=task.retries,
        method=task.method,
        after_public=task.after_public,
    )
    if task.retry_times:
        request.meta["retry_times"] = task.retry_times
    if task.retry_after is not None:
        request.meta[m.RETRY_AFTER] = task.retry_after
    return request


def worker_lost_result(requests: RowRequests, task: Task, reaps: int) -> Result:
    return requests.line(
        _row_task(task),
        cast("list[Hop]", list(task.chain)),
        error="worker_lost",
        error_message=(
            f"{reaps} processes lost this row's request (killed or stalled past the lease "
            f"TTL) while fetching {task.target}"
        ),
        retries=task.retries + task.retry_times,
        retry_after=task.retry_after,
    )
