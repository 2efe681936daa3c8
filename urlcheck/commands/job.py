"""``scrapy job status|pause|resume|cancel DIR``: look at or steer a job from another terminal
(:mod:`urlcheck.jobs.steer`); ``scrapy job run DIR``: run a job supervised, restarted when it
dies or goes stuck (:mod:`urlcheck.jobs.supervise`); ``scrapy job report|diff`` read results
(:mod:`urlcheck.reports.run`); ``scrapy job clean NAME`` removes a distributed job from Redis.
Exit codes: docs/jobs.md.

Only the options live here. What a distributed job needs (``urlcheck.cluster``, redis-py) and the
reports are imported when an action uses them, so ``--help`` and a one-process job load neither.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from urlcheck.config.reader import ConfigError
from urlcheck.crawl.configfile import add_config_option, read_config_or_exit
from urlcheck.input.sitemap import is_remote
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.place import default_jobdir
from urlcheck.jobs.steer import ACTIONS as STEER_ACTIONS
from urlcheck.jobs.steer import SteerError, steer
from urlcheck.jobs.supervise import SuperviseConfig, supervise

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

    from urlcheck.jobs.steer import Fleet, FleetFor

ACTIONS = (*STEER_ACTIONS, "run", "clean")
REPORT_ACTIONS = ("report", "diff")


def _fleet_for(redis_url: str | None, redis_params: Mapping[str, Any] | None) -> FleetFor:
    def fleet_for(jobdir: Path) -> Fleet:
        from urlcheck.cluster.steer import ClusterFleet  # a distributed job only

        return ClusterFleet(jobdir, redis_url, redis_params)

    return fleet_for


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return (
            "status|pause|resume|cancel|run DIR [--json] [-- CRAWL OPTIONS] | report PATH "
            "[-o FILE] | diff OLD NEW [-o FILE] | clean NAME -s REDIS_URL=..."
        )

    def short_desc(self) -> str:
        return "Show, control or supervise a urlcheck job: status, pause, resume, cancel, run"

    def long_desc(self) -> str:
        return (
            "status prints the job's state, progress, rate, ETA, hosts in back-off and last "
            "activity (--json for the same as JSON); pause, resume and cancel ask the crawl "
            "running the job to do so within a second. run runs the job's crawl and restarts it "
            "when it dies or goes stuck (options after -- go to `scrapy crawl check`, e.g. "
            "-- -a csv=urls.csv). For a distributed job, pause, resume and cancel reach every "
            "worker through Redis and status lists the workers; clean NAME removes its keys "
            "from Redis (docs/distributed.md). Exit codes: docs/jobs.md. "
            "report writes a report of a job directory or results file (-o report.html, "
            "report.md, junit.xml); diff lists the rows that changed between two runs (-o for "
            "JSON lines) and exits 1 when one regressed: docs/reports.md."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        add_config_option(parser)
        parser.add_argument("--json", dest="json", action="store_true", help="status: print JSON")
        parser.add_argument(
            "-o",
            "--output",
            dest="output",
            metavar="FILE",
            help="report: FILE[:html|markdown|junit]; diff: write the changes as JSON lines",
        )
        parser.add_argument("--title", help="report: the title (default: urlcheck report)")

        defaults = SuperviseConfig()
        parser.add_argument(
            "--max-restarts",
            type=int,
            default=defaults.max_restarts,
            help="run: restarts in a row without progress before giving up "
            f"(default {defaults.max_restarts})",
        )
        parser.add_argument(
            "--restart-delay",
            type=float,
            default=defaults.restart_delay,
            help="run: seconds before the first restart, doubling up to 5 min "
            f"(default {defaults.restart_delay:g})",
        )
        parser.add_argument(
            "--stop-grace",
            type=float,
            default=defaults.stop_grace,
            help="run: seconds a stuck crawl gets to stop before it is killed "
            f"(default {defaults.stop_grace:g})",
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        self.config_file = read_config_or_exit(self.settings, opts)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args and args[0] in REPORT_ACTIONS:
            self.exitcode = self._run_report(args, opts)
            return
        if len(args) < 2 or args[0] not in ACTIONS:
            raise UsageError(f"expected one of {', '.join(ACTIONS)} and a job directory")
        if opts.output or opts.title:
            raise UsageError("-o and --title go with report and diff")
        if opts.json and args[0] != "status":
            raise UsageError("--json goes with status only")
        if args[0] == "run":
            extra = args[2:]
            if extra[:1] == ["--"]:
                extra = extra[1:]
            if self.config_file is not None:  # the crawl reads the same file
                extra = ["--config", str(self.config_file), *extra]
            self.exitcode = int(self._run_supervised(Path(args[1]), extra, opts))
            return
        if len(args) != 2:
            raise UsageError(f"{args[0]} takes a job directory only")
        assert self.settings is not None
        redis_url = self.settings.get("REDIS_URL") or None
        try:
            params = self._redis_params()
        except ConfigError as exc:
            print(f"urlcheck: {exc}", file=sys.stderr)
            self.exitcode = int(ExitCode.INPUT_ERROR)
            return
        if args[0] == "clean":  # args[1] is a distributed job's name here
            self.exitcode = int(self._clean(str(Path(args[1])), redis_url, params))
            return
        self.exitcode = int(
            steer(
                args[0],
                _job_of(args[1]),
                as_json=opts.json,
                fleet_for=_fleet_for(redis_url, params),
            )
        )

    def _redis_params(self) -> dict[str, Any] | None:
        """``-s REDIS_PARAMS``, checked whenever it is given; ConfigError when malformed."""
        assert self.settings is not None
        if self.settings.get("REDIS_PARAMS") is None:
            return {}
        from urlcheck.cluster.config import redis_params  # loads redis-py

        return redis_params(self.settings)

    @staticmethod
    def _clean(name: str, redis_url: str | None, params: Mapping[str, Any] | None) -> ExitCode:
        if not redis_url:
            print("urlcheck: clean needs the job's Redis: -s REDIS_URL=...", file=sys.stderr)
            return ExitCode.INPUT_ERROR
        from urlcheck.cluster.steer import clean_job  # loads redis-py

        try:
            clean_job(name, redis_url, sys.stdout, params)
        except SteerError as exc:
            print(f"urlcheck: {exc}", file=sys.stderr)
            return exc.code
        except OSError as exc:
            print(f"urlcheck: {name}: {exc}", file=sys.stderr)
            return ExitCode.INPUT_ERROR
        return ExitCode.FINISHED

    @staticmethod
    def _run_report(args: list[str], opts: argparse.Namespace) -> int:
        from urlcheck.reports.run import run_diff, run_report

        if args[0] == "report" and len(args) == 2:
            return run_report(
                Path(args[1]), opts.output, out=sys.stdout, err=sys.stderr, title=opts.title
            )
        if args[0] == "diff" and len(args) == 3:
            return run_diff(
                Path(args[1]), Path(args[2]), opts.output, out=sys.stdout, err=sys.stderr
            )
        raise UsageError("expected: report PATH [-o FILE] or diff OLD NEW [-o FILE]")

    @staticmethod
    def _run_supervised(jobdir: Path, extra: list[str], opts: argparse.Namespace) -> ExitCode:
        if opts.max_restarts < 0 or opts.restart_delay < 0 or opts.stop_grace < 0:
            raise UsageError("--max-restarts, --restart-delay and --stop-grace must be >= 0")
        config = SuperviseConfig(
            max_restarts=opts.max_restarts,
            restart_delay=opts.restart_delay,
            stop_grace=opts.stop_grace,
        )
        return supervise(jobdir, list(opts.set or []), extra, config)


def _job_of(given: str) -> Path:
    """A job directory, or the input of a default job instead: a CSV's path (steer finds its
    job), ``-`` or a sitemap's URL, which ``Path`` would not keep as given (``https:/...``)."""
    if given == "-" or is_remote(given):
        return default_jobdir(given)
    return Path(given)
