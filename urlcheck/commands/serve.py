"""``urlcheck serve [--host 127.0.0.1] [--port 8080] [--jobs DIR]``: the checker's web face.

Upload a CSV, watch the job live, pause, resume, cancel, re-run, download (docs/serve.md).
``-s NAME=VALUE`` options set the server's settings (docs/settings.md) and are passed on to
every crawl it starts (``REDIS_URL`` and ``REDIS_PARAMS`` excepted: the server's own).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand

from urlcheck.config.reader import ConfigError
from urlcheck.crawl.configfile import add_config_option, read_config_or_exit
from urlcheck.jobs.exitcodes import ExitCode

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--host 127.0.0.1] [--port 8080] [--jobs DIR] [-s NAME=VALUE ...]"

    def short_desc(self) -> str:
        return "Serve the web face: upload a CSV, watch and steer its job in a browser"

    def long_desc(self) -> str:
        return (
            "Serves a web page where a CSV is uploaded and checked as a job: its progress, "
            "counts and results live, Pause, Resume, Cancel and Re-run, and downloads (CSV, "
            "JSON lines, HTML report, Markdown, JUnit). Jobs are directories under --jobs "
            "(default .urlcheck/jobs, where `urlcheck check` puts its jobs), each run by "
            "`urlcheck job run` in a process of its own: stopping the server stops no crawl. "
            "It listens on 127.0.0.1 by default; on any other address it asks for a token, "
            "printed at start. docs/serve.md."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        add_config_option(parser)
        parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", type=int, help="port (default 8080; 0: a free one)")
        parser.add_argument("--jobs", metavar="DIR", help="the jobs root (default .urlcheck/jobs)")

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        self.config_file = read_config_or_exit(self.settings, opts)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from urlcheck.serve.config import ServeConfig
        from urlcheck.serve.server import run

        assert self.settings is not None
        try:
            config = ServeConfig.from_settings(
                self.settings,
                host=opts.host,
                port=opts.port,
                jobs=opts.jobs,
                crawl_settings=tuple(opts.set or ()),
                config_file=self.config_file,
            )
        except ConfigError as exc:
            print(f"urlcheck: {exc}", file=sys.stderr)
            self.exitcode = int(ExitCode.INPUT_ERROR)
            return
        self.exitcode = run(config)
