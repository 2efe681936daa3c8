"""``scrapy crawl``, with urlcheck's checks before the crawl and its exit codes after it.

Before a ``check`` crawl starts: the settings file is read, every urlcheck setting is parsed (a
bad one is one clear line), the CSV is opened (a bad file is one clear line naming it), and the
job directory is locked (a second process on the same JOBDIR exits at once). None of these
print a traceback. During it, on a terminal, a progress bar, the log going to the job's
``crawl.log`` (:mod:`urlcheck.crawl.terminal`; ``-v``, ``-q``). After it: the summary on stdout,
and the exit code says how the job ended (docs/jobs.md), so cron can alert.
"""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from scrapy.utils.log import log_scrapy_info

from urlcheck.check.printable import install as install_printable
from urlcheck.check.printable import printable, printable_lines
from urlcheck.crawl.configfile import add_config_option, read_config_or_exit
from urlcheck.crawl.preflight import PreflightError, preflight
from urlcheck.crawl.runtime import runtime
from urlcheck.crawl.terminal import (
    Mode,
    Terminal,
    log_file,
    log_to,
    take_the_log,
)
from urlcheck.extensions.summary import Summary
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
    if runtime(crawler).write_failure is not None:  # whatever meta.json could still say
        return ExitCode.WRITE_FAILED
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
        add_config_option(parser)
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
        parser.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            help="the log on stderr, as without a terminal, instead of a progress bar",
        )
        parser.add_argument(
            "-q",
            "--quiet",
            action="store_true",
            help="only warnings and errors on stderr, no summary on stdout (the log goes to "
            "the job's crawl.log)",
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        read_config_or_exit(self.settings, opts)
        if opts.jobdir and opts.no_job:
            raise UsageError("--jobdir and --no-job exclude each other")
        if opts.jobdir:
            self.settings.set("JOBDIR", opts.jobdir, priority="cmdline")
        elif opts.no_job:
            self.settings.set("JOBDIR", "", priority="cmdline")
        if opts.verbose and opts.quiet:
            raise UsageError("-v and -q exclude each other")
        self.mode = Mode.choose(verbose=opts.verbose, quiet=opts.quiet, tty=sys.stderr.isatty())
        self.terminal: Terminal | None = None
        self._own_log = False
        if self.mode is not Mode.LOG and args[:1] == ["check"]:
            self.terminal = Terminal(bar=self.mode is Mode.BAR, level=logging.WARNING)
            self._own_log = take_the_log(self.settings)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError
        if len(args) > 1:
            extra = " ".join(args[1:])
            raise UsageError(
                f"one spider at a time; unexpected argument(s): {extra} (the input is -a csv=PATH)"
            )
        assert self.crawler_process is not None
        assert self.settings is not None
        check = args[0] == "check"
        terminal = self.terminal if check else None
        if terminal is not None:
            terminal.start()  # preflight's warnings (a bad proxy line...) reach the terminal
        try:
            if check:
                try:
                    self._lock = preflight(self.settings, opts.spargs)
                except PreflightError as exc:
                    print(f"urlcheck: {printable(exc)}", file=sys.stderr)
                    self.exitcode = exc.exit_code
                    return
            log = self._log_to_file(opts.spargs)
            if check:
                _load_the_download_handler()
            crawler = self._create_crawler(args[0])
            if self._own_log:
                log_scrapy_info(self.settings)  # the lines Scrapy wrote before the file
            elif check:
                # from the first line (PrintableLogs covers the crawl from its start on)
                install_printable(logging.getLogger().handlers)
            runtime(crawler).terminal = terminal
            self.crawler_process.crawl(crawler, **opts.spargs)
            self.crawler_process.start()
        finally:
            if terminal is not None:
                terminal.stop()
        # The reactor is gone and the job files are written: a late second Ctrl-C must not
        # turn the documented exit code into a death by signal.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        elif check:
            self.exitcode = int(exit_code(crawler))
            failure = runtime(crawler).write_failure
            if failure is not None and log is not None:  # the log file may not have it
                print(
                    f"urlcheck: {printable(f'could not write {failure.path}: {failure.error}')}; "
                    "the job is paused: make room, then run it again",
                    file=sys.stderr,
                )
            if self.mode is not Mode.QUIET:
                _print_summary(crawler, log)

    def _log_to_file(self, spider_args: dict[str, str]) -> Path | None:
        """Where the log goes when not to stderr: the job's crawl.log when it is urlcheck's to
        place, else the file the user named (None: stderr, or the log turned off)."""
        assert self.settings is not None
        if not self._own_log:
            named = self.settings.get("LOG_FILE")
            return Path(named).resolve() if named else None
        jobdir = self.settings.get("JOBDIR")
        results = Path(spider_args.get("out") or "results.jsonl")
        return log_to(self.settings, log_file(Path(jobdir) if jobdir else None, results))


def _load_the_download_handler() -> None:
    # Here, a few frames deep, rather than by the downloader deep inside the running reactor:
    # importing Scrapy's TLS context factory calls inspect.stack() (for its deprecated class
    # aliases), which reads every frame's source: 0.2 s at the engine's depth, 0.05 s here.
    import urlcheck.crawl.downloadhandler  # noqa: F401


def _print_summary(crawler: Crawler, log: Path | None) -> None:
    """The run's summary on stdout, with where its results and its log are."""
    assert crawler.extensions is not None
    found = [e for e in crawler.extensions.middlewares if isinstance(e, Summary)]
    lines = [found[0].block] if found and found[0].block else []
    results = runtime(crawler).results_path
    if results is not None:
        lines.append(f"results: {results.resolve()}")
    if log is not None:
        lines.append(f"log:     {log}")
    if lines:
        print(printable_lines("\n".join(lines)), flush=True)
