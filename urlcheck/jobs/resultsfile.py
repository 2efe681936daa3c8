"""Where a run reads its rows and writes its results, and which rows are already done.

With JOBDIR the job decides (:func:`urlcheck.jobs.prepare.prepare_job`: resume, or a fresh run
that keeps the previous results under a timestamped name) and the rows are read from the job's
own copy of the CSV. Without JOBDIR (``--no-job``) every run is fresh: an existing results file
is renamed aside, never overwritten.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from urlcheck.clock import utc_compact
from urlcheck.jobs.done import DoneRows
from urlcheck.jobs.prepare import PreparedJob, free_name, prepare_job

if TYPE_CHECKING:
    from urlcheck.config.reader import Settings
    from urlcheck.jobs.recheck import Recheck

logger = logging.getLogger(__name__)

RESULTS_FILE = "results.jsonl"


@dataclass
class ResultsPlan:
    path: Path
    done: DoneRows
    job: PreparedJob | None = None
    input_path: Path | None = None  # the CSV to read: the job's copy, else the one given


def plan_results(
    settings: Settings,
    out: Path | None,
    input_path: Path,
    recheck: Recheck | None = None,
    sheet: str | None = None,
) -> ResultsPlan:
    jobdir = settings.get("JOBDIR")
    if jobdir:
        job = prepare_job(jobdir, input_path, out, recheck=recheck, sheet=sheet)
        return ResultsPlan(job.results_path, job.scan.done, job, job.input_path)
    path = out or Path(RESULTS_FILE)
    if path.exists() and path.stat().st_size > 0:
        stamp = utc_compact(path.stat().st_mtime)
        aside = free_name(path, stamp)
        path.rename(aside)
        logger.info("%s existed: kept it as %s; this run writes a new %s", path, aside, path)
    return ResultsPlan(path, DoneRows(), None, input_path)
