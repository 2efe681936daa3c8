"""The JSON API: upload, the jobs, a job's status with its new results, pages of results,
control, downloads. Answers hold no server path, credential or Redis URL; GETs change nothing.
Reference: docs/serve.md."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import TYPE_CHECKING, Any

from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.responses import JSONResponse, Response, StreamingResponse

from urlcheck.reports.source import SourceError
from urlcheck.serve import downloads
from urlcheck.serve.manager import INPUT_FILE, RefusedError
from urlcheck.serve.results import PAGE_DEFAULT, PAGE_MAX, FilterError, Filters, read_after
from urlcheck.serve.sites import input_sites
from urlcheck.serve.upload import UploadError, discard, inspect_csv, receive

if TYPE_CHECKING:
    from starlette.requests import Request

    from urlcheck.serve.config import ServeConfig
    from urlcheck.serve.manager import JobManager

ACTIONS = frozenset({"pause", "resume", "cancel", "rerun"})
POLL_LIMIT = 100  # new results a status poll carries at most


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _manager(request: Request) -> JobManager:
    manager: JobManager = request.app.state.manager
    return manager


def _config(request: Request) -> ServeConfig:
    config: ServeConfig = request.app.state.config
    return config


def _dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _tag(*parts: bytes | str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8") if isinstance(part, str) else part)
        digest.update(b"\0")
    return f'"{digest.hexdigest()[:24]}"'


def _not_modified(request: Request, tag: str) -> Response | None:
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers={"ETag": tag, "Cache-Control": "no-cache"})
    return None


def _json(body: bytes, tag: str, status: int = 200) -> Response:
    headers = {"ETag": tag, "Cache-Control": "no-cache"}
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _number(request: Request, name: str, default: int, high: int | None = None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or len(raw) > 15:
        raise FilterError(f"{name} must be a whole number >= 0")
    value = int(raw)
    return min(value, high) if high is not None else value


async def upload(request: Request) -> Response:
    manager, config = _manager(request), _config(request)
    job_id, jobdir = await run_in_threadpool(manager.new_job_dir)
    try:
        received = await receive(request, jobdir / INPUT_FILE, config.max_upload_bytes)
        if received.csv is None:  # a sitemap's URL: its rows are counted by the job's crawl
            rows, sites = 0, sorted(input_sites(received.sitemap_url, None))
        else:
            rows, sites = await run_in_threadpool(
                inspect_csv,
                received.csv,
                received.filename,
                config.max_rows,
                received.options.sheet,
            )
        await run_in_threadpool(
            functools.partial(
                manager.create,
                job_id,
                name=received.name,
                csv_name=received.filename,
                rows=rows,
                sites=sites,
                options=received.options,
                input_url=received.sitemap_url,
            )
        )
    except UploadError as exc:
        await run_in_threadpool(discard, jobdir)
        return error(exc.status, str(exc))
    except BaseException:
        await run_in_threadpool(discard, jobdir)
        raise
    url = f"/jobs/{job_id}"
    return JSONResponse({"id": job_id, "url": url}, status_code=201, headers={"Location": url})


async def jobs(request: Request) -> Response:
    views = await run_in_threadpool(_manager(request).views)
    body = _dumps({"jobs": views})
    tag = _tag(body)
    return _not_modified(request, tag) or _json(body, tag)


async def job(request: Request) -> Response:
    """The job's status, and its results after byte offset ``after`` (``limit`` at most,
    filtered like a page). ``gen``: the generation the client read; another one now means the
    file was replaced, and the results start again from 0 (``reset``)."""
    manager = _manager(request)
    job_id = request.path_params["job_id"]
    try:
        after = _number(request, "after", 0)
        limit = _number(request, "limit", POLL_LIMIT, POLL_LIMIT)
        filters = Filters.from_query(request.query_params)
        status = await run_in_threadpool(manager.status, job_id)
        path = manager.get(job_id).results
    except FilterError as exc:
        return error(400, str(exc))
    except RefusedError as exc:
        return error(exc.status, str(exc))
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    status_body = _dumps(status)
    tag = _tag(status_body, str(size), request.url.query)
    cached = _not_modified(request, tag)
    if cached is not None:
        return cached
    gen = request.query_params.get("gen")
    reset = after > 0 and gen is not None and gen != status["generation"]
    page = await run_in_threadpool(read_after, path, 0 if reset else after, limit, filters)
    body = {**status, "reset": reset, "results": page.results, "next": page.next, "more": page.more}
    return _json(_dumps(body), tag)


async def results(request: Request) -> Response:
    """A page of results after byte offset ``after``: ``limit`` lines matching the filters,
    ``next`` to ask from for the following page, ``more`` when there may be one."""
    manager = _manager(request)
    job_id = request.path_params["job_id"]
    try:
        after = _number(request, "after", 0)
        limit = max(1, _number(request, "limit", PAGE_DEFAULT, PAGE_MAX))
        filters = Filters.from_query(request.query_params)
        status = await run_in_threadpool(manager.status, job_id)
        job_ = manager.get(job_id)
    except FilterError as exc:
        return error(400, str(exc))
    except RefusedError as exc:
        return error(exc.status, str(exc))
    gen = request.query_params.get("gen")
    reset = after > 0 and gen is not None and gen != status["generation"]
    if reset:
        after = 0
    if filters.indexed():
        index = manager.index(job_)
        page = await run_in_threadpool(index.page, after, limit, filters)
    else:
        page = await run_in_threadpool(read_after, job_.results, after, limit, filters)
    total = (
        page.total if page.total is not None else (status["done_rows"] if filters.empty else None)
    )
    return JSONResponse(
        {
            "generation": status["generation"],
            "reset": reset,
            "results": page.results,
            "next": page.next,
            "more": page.more,
            "total": total,
        },
        headers={"Cache-Control": "no-cache"},
    )


async def control(request: Request) -> Response:
    manager = _manager(request)
    job_id, action = request.path_params["job_id"], request.path_params["action"]
    if action not in ACTIONS:
        return error(404, "no such action: pause, resume, cancel or rerun")
    try:
        message = await run_in_threadpool(manager.control, job_id, action)
        status = await run_in_threadpool(manager.status, job_id)
    except RefusedError as exc:
        return error(exc.status, str(exc))
    return JSONResponse(
        {"id": job_id, "action": action, "message": message, "state": status["state"]},
        status_code=202,
    )


async def download(request: Request) -> Response:
    manager = _manager(request)
    job_id, fmt = request.path_params["job_id"], request.path_params["fmt"]
    if fmt not in downloads.FORMATS:
        return error(404, f"no such download: {', '.join(downloads.FORMATS)}")
    try:
        status = await run_in_threadpool(manager.status, job_id)
        job_ = manager.get(job_id)
    except RefusedError as exc:
        return error(exc.status, str(exc))
    media = downloads.FORMATS[fmt][1]
    headers = {
        "Content-Disposition": downloads.disposition(status["name"], fmt),
        "Cache-Control": "no-store",
    }
    if fmt == "jsonl":
        stream = iterate_in_threadpool(downloads.jsonl(job_.results))
        return StreamingResponse(stream, media_type=media, headers=headers)
    if fmt == "csv":
        stream = iterate_in_threadpool(downloads.csv_rows(job_.results))
        return StreamingResponse(stream, media_type=media, headers=headers)
    if fmt == "xlsx":
        stream = iterate_in_threadpool(downloads.xlsx_file(job_.results))
        return StreamingResponse(stream, media_type=media, headers=headers)
    try:
        body = await run_in_threadpool(
            downloads.report, job_.dir, job_.results, fmt, status["name"]
        )
    except SourceError:
        return error(404, "no results yet")
    if fmt == "html":
        headers["Content-Security-Policy"] = downloads.SANDBOX_CSP
    return Response(body, media_type=media, headers=headers)
