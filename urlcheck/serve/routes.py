"""Every route of the server, in one table. GETs read; only POSTs change anything."""

from __future__ import annotations

from typing import ClassVar

from starlette.convertors import Convertor, register_url_convertor
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from urlcheck.serve import api, pages
from urlcheck.serve.manager import JOB_ID


class JobIdConvertor(Convertor[str]):
    """A job id as a path segment: no dot first, so ``..`` is no id and matches no route."""

    regex: ClassVar[str] = JOB_ID.pattern

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("job", JobIdConvertor())

ROUTES: list[BaseRoute] = [
    Route("/", pages.jobs_page),
    Route("/new", pages.new_page),
    Route("/jobs/{job_id:job}", pages.job_page),
    Route("/api/upload", api.upload, methods=["POST"]),
    Route("/api/jobs", api.jobs),
    Route("/api/jobs/{job_id:job}", api.job),
    Route("/api/jobs/{job_id:job}/results", api.results),
    Route("/api/jobs/{job_id:job}/download/{fmt}", api.download),
    Route("/api/jobs/{job_id:job}/{action}", api.control, methods=["POST"]),
    Mount("/static", StaticFiles(packages=[("urlcheck.serve", "static")]), name="static"),
]
