"""The application: ``create_app(config)`` builds one (tests build one per case).

Middleware, outermost first: security headers (so every answer, errors too, carries the CSP),
trusted hosts, token auth, CSRF. The job manager looks at every job each second in a worker
thread while the app runs (its lifespan); it stops with the app, the crawls do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from urlcheck.serve import api, pages
from urlcheck.serve.manager import JobManager
from urlcheck.serve.middleware import CsrfGuard, SecurityHeaders, TokenAuth, TrustedHosts
from urlcheck.serve.routes import ROUTES

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from urlcheck.serve.config import ServeConfig

logger = logging.getLogger(__name__)

KEY_FILE = ".serve.key"  # in the jobs root: the CSRF key, so a restart keeps open pages working


def load_key(root: Path) -> bytes:
    """The server's secret key, made on first use (mode 0600)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
        path.unlink()
        return load_key(root)
    key = os.urandom(32)
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = exc.detail or "error"
    if request.url.path.startswith("/api/"):
        return api.error(exc.status_code, message)
    return pages.error_page(request, exc.status_code, message)


def create_app(config: ServeConfig, *, manager: JobManager | None = None) -> Starlette:
    manager = manager if manager is not None else JobManager(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(_tick_forever(manager, config.tick))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    app = Starlette(
        routes=ROUTES,
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(TrustedHosts, allowed=config.allowed_hosts),
            Middleware(TokenAuth, token=config.token),
            Middleware(CsrfGuard, key=load_key(config.jobs_root)),
        ],
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.state.config = config
    app.state.manager = manager
    return app


async def _tick_forever(manager: JobManager, every: float) -> None:
    while True:
        try:
            await run_in_threadpool(manager.tick)
        except Exception:
            logger.exception("the job manager's look at the jobs failed; trying again")
        await asyncio.sleep(every)
