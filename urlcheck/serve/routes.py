"""Every route of the server, in one table. GETs read; only POSTs change anything."""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from urlcheck.serve import api, pages

ROUTES: list[BaseRoute] = [
    Route("/", pages.jobs_page),
    Route("/new", pages.new_page),
    Route("/jobs/{job_id}", pages.job_page),
    Route("/api/upload", api.upload, methods=["POST"]),
    Route("/api/jobs", api.jobs),
    Route("/api/jobs/{job_id}", api.job),
    Route("/api/jobs/{job_id}/results", api.results),
    Route("/api/jobs/{job_id}/download/{fmt}", api.download),
    Route("/api/jobs/{job_id}/{action}", api.control, methods=["POST"]),
    Mount("/static", StaticFiles(packages=[("urlcheck.serve", "static")]), name="static"),
]
