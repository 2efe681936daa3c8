"""The pages: server-rendered with autoescape, then kept fresh by static/app.js, which only
fetches JSON and sets ``textContent``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, Response

from urlcheck.config.crawlconfig import USER_AGENTS
from urlcheck.serve.manager import RefusedError
from urlcheck.serve.upload import MAX_HOPS_LIMIT

if TYPE_CHECKING:
    from starlette.requests import Request

    from urlcheck.serve.config import ServeConfig
    from urlcheck.serve.manager import JobManager

TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("urlcheck.serve", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


def render(request: Request, name: str, code: int = 200, **context: Any) -> Response:
    html = TEMPLATES.get_template(name).render(csrf_token=request.state.csrf_token, **context)
    return HTMLResponse(html, status_code=code, headers={"Cache-Control": "no-store"})


def error_page(request: Request, status: int, message: str) -> Response:
    return render(request, "error.html.j2", status, status=status, message=message)


def _size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


async def jobs_page(request: Request) -> Response:
    manager: JobManager = request.app.state.manager
    jobs = await run_in_threadpool(manager.views)
    return render(request, "jobs.html.j2", jobs=jobs)


async def new_page(request: Request) -> Response:
    config: ServeConfig = request.app.state.config
    return render(
        request,
        "new.html.j2",
        presets=list(USER_AGENTS),
        max_rows=f"{config.max_rows:,}",
        max_bytes=_size(config.max_upload_bytes),
        max_hops=MAX_HOPS_LIMIT,
    )


async def job_page(request: Request) -> Response:
    manager: JobManager = request.app.state.manager
    try:
        job = await run_in_threadpool(manager.status, request.path_params["job_id"])
    except RefusedError as exc:
        return error_page(request, exc.status, str(exc))
    return render(request, "job.html.j2", job=job)
