"""Exit codes of ``scrapy crawl check`` and ``scrapy job``: one place, documented in
docs/jobs.md, distinct so that cron can tell a finished job from one that needs attention."""

from __future__ import annotations

from enum import IntEnum

from urlcheck.jobs.files import JobMeta, JobState


class ExitCode(IntEnum):
    FINISHED = 0  # every row has a result, no verdict failed
    # 1 is Scrapy's own (bootstrap failure, usage error) and is not reused here.
    INPUT_ERROR = 2  # bad CSV, bad setting, CSV differs from the job's, not a job directory
    FAILED_VERDICTS = 3  # finished, but at least one row's verdict is "fail"
    PAUSED = 4  # stopped before done (Ctrl-C, pause then stop, crash): run again to resume
    CANCELLED = 5  # cancelled with `scrapy job cancel`; results kept
    LOCKED = 6  # another process is running this job
    NOT_RUNNING = 7  # `scrapy job pause|resume`: no crawl is running this job
    ROWS_MISSING = 8  # finished, but rows fed to the crawl have no result line (a bug: see log)
    GAVE_UP = 9  # `scrapy job run`: the crawl kept dying or getting stuck without progress
    WRITE_FAILED = 10  # results or job files could not be written (disk full): job paused


def exit_code_for(meta: JobMeta) -> ExitCode:
    """How a crawl that left ``meta`` behind should exit."""
    if meta.state is JobState.DONE:
        failed = meta.counts.by_verdict.get("fail", 0)
        return ExitCode.FAILED_VERDICTS if failed else ExitCode.FINISHED
    if meta.state is JobState.CANCELLED:
        return ExitCode.CANCELLED
    return ExitCode.PAUSED
