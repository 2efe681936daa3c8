"""``scrapy crawl``, with urlcheck's checks before the crawl and its exit codes after it.

Before a ``check`` crawl starts: every urlcheck setting is parsed (a bad one is one clear line),
the CSV is opened (a bad file is one clear line naming it), and the job directory is locked
(a second process on the same JOBDIR exits at once). None of these print a traceback.
After it: the exit code says how the job ended (docs/jobs.md), so cron can alert.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError

from urlcheck.check.printable import printable
from urlcheck.crawl.preflight import PreflightError, preflight
from urlcheck.crawl.runtime import runtime
from urlcheck.jobs.exitcodes import ExitCode, exit_code_for
from urlcheck.jobs.files import JobMeta

if TYPE_CHECKING:
    import argparse

    from scrapy.crawler import Crawler


def exit_code(crawler: Crawler) -> ExitCode:
    stats = crawler.stats.get_stats() if crawler.stats else {}
    reason = stats.get("finish_reason")
    if reason == "input_error":
        return ExitCode.INPUT_ERROR
    if stats.get("urlcheck/rows_missing"):  # never silence: a row fed without its line
        return ExitCode.ROWS_MISSING
    role = runtime(crawler).cluster_role
    if role is not None and not role.coordinator:  # a worker: the job is not its own
        return ExitCode.FINISHED if reason in ("finished", "cancelled") else ExitCode.PAUSED
    jobdir = crawler.settings.get("JOBDIR")
    meta = JobMeta.load(Path(jobdir)) if jobdir else None
    if meta is not None:  # the whole job's verdicts, not only this run's
        return exit_code_for(meta)
    if reason == "cancelled":
        return ExitCode.CANCELLED
    if reason != "finished":
        return ExitCode.PAUSED
    if stats.get("urlcheck/verdict/fail"):
        return ExitCode.FAILED_VERDICTS
    return ExitCode.FINISHED


class Command(ScrapyCrawlCommand):
    def short_desc(self) -> str:
        return "Run a spider (urlcheck: `scrapy crawl check -a csv=urls.csv`)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        # Every check run is a job (docs/jobs.md); these choose where, or opt out.
        parser.add_argument(
            "--jobdir",
            metavar="DIR",
            help="the job directory (default: .urlcheck/jobs/<csv name>-<hash>/); same as "
            "-s JOBDIR=DIR",
        )
        parser.add_argument(
            "--no-job",
            action="store_true",
            help="run without a job: no resume, no status or control; results.jsonl in the "
            "current directory unless -a out=PATH",
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        if opts.jobdir and opts.no_job:
            raise UsageError("--jobdir and --no-job exclude each other")
        if opts.jobdir:
            self.settings.set("JOBDIR", opts.jobdir, priority="cmdline")
        elif opts.no_job:
            self.settings.set("JOBDIR", "", priority="cmdline")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError
        assert self.crawler_process is not None
        assert self.settings is not None
        if args[0] == "check":
            try:
                self._lock = preflight(self.settings, opts.spargs)
            except PreflightError as exc:
                print(f"urlcheck: {printable(exc)}", file=sys.stderr)
                self.exitcode = exc.exit_code
                return
        crawler = self._create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        # The reactor is gone and the job files are written: a late second Ctrl-C must not
        # turn the documented exit code into a death by signal.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        elif args[0] == "check":
            self.exitcode = int(exit_code(crawler))
