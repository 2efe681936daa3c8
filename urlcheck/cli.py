"""The ``urlcheck`` command: the project's Scrapy commands, from any directory.

``urlcheck check urls.csv`` is ``scrapy crawl check -a csv=urls.csv`` run with urlcheck's settings
(as ``SCRAPY_SETTINGS_MODULE=urlcheck.settings`` would), in this process, with the same exit codes
(docs/jobs.md). Every other command of ``urlcheck.commands`` (``job``, ``demo``, and any added
later) passes through as it is; only the help text is this module's.
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from scrapy.cmdline import execute
from scrapy.commands import ScrapyCommand
from scrapy.utils.misc import walk_modules_iter
from scrapy.utils.project import get_project_settings

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.settings import Settings

SETTINGS_MODULE = "urlcheck.settings"
HIDDEN = {"crawl"}  # `check` is the way in; `urlcheck crawl check ...` still works

DESCRIPTION = """\
Check a CSV of URLs and their redirects, politely (1 request at a time and 300 ms apart per
host, hosts in parallel). One JSON line per URL goes to results.jsonl."""

EXAMPLES = """\
examples:
  urlcheck demo                                   # a bundled site on 127.0.0.1, no internet
  urlcheck check urls.csv                         # a job in .urlcheck/jobs/urls-<hash>/
  urlcheck check urls.csv --jobdir jobs/site      # a job: Ctrl-C, then the same command resumes
  urlcheck check urls.csv -o check.csv            # also a spreadsheet
  urlcheck check urls.csv -s URLCHECK_METHOD=HEAD # any setting: docs/settings.md
  urlcheck job status jobs/site                   # from another terminal; pause, resume, cancel

exit codes: 0 finished, 2 input error, 3 finished with failed verdicts, 4 stopped before done
(run it again to resume), 5 cancelled, 6 the job is locked by another process (docs/jobs.md)."""

CHECK_EXAMPLES = """\
examples:
  urlcheck check urls.csv
  urlcheck check urls.csv --jobdir jobs/site      # Ctrl-C, then the same command resumes
  urlcheck check urls.csv --out audit.jsonl -o audit.csv
  urlcheck check urls.csv -s URLCHECK_MAX_HOPS=5 -s DOWNLOAD_TIMEOUT=10

exit codes: 0 finished, 2 input error, 3 finished with failed verdicts, 4 stopped before done
(run it again to resume), 5 cancelled, 6 the job is locked by another process (docs/jobs.md)."""


def project_settings() -> Settings:
    """urlcheck's settings, wherever the current directory is; Scrapy's commands read the same."""
    os.environ["SCRAPY_SETTINGS_MODULE"] = SETTINGS_MODULE
    return get_project_settings()


def project_commands(settings: Settings) -> dict[str, ScrapyCommand]:
    """The commands of COMMANDS_MODULE by name, found as Scrapy finds them (one per module)."""
    commands: dict[str, ScrapyCommand] = {}
    for module in walk_modules_iter(settings["COMMANDS_MODULE"]):
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, ScrapyCommand)
                and obj.__module__ == module.__name__
            ):
                commands[module.__name__.rpartition(".")[2]] = obj()
    return commands


def _main_help(commands: dict[str, ScrapyCommand]) -> str:
    listed = {"check": "Check every URL of a CSV (scrapy crawl check -a csv=CSV)"}
    listed.update((n, c.short_desc()) for n, c in sorted(commands.items()) if n not in HIDDEN)
    lines = [
        "usage: urlcheck <command> [options] [args]",
        "",
        DESCRIPTION,
        "",
        "commands:",
        *(f"  {name:<8} {desc}" for name, desc in listed.items()),
        "",
        EXAMPLES,
        "",
        "`urlcheck <command> --help` shows a command's options.",
    ]
    return "\n".join(lines)


def _check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="urlcheck check",
        usage="urlcheck check [CSV] [--out FILE] [--jobdir DIR] [-o FILE] [-s NAME=VALUE] ...",
        description=_wrap(
            "Check every URL of CSV: status, redirect chain, final URL and, where the CSV gives "
            "an expected target, a pass/fail verdict. The same as `scrapy crawl check -a "
            "csv=CSV` in the project; other `scrapy crawl` options pass through."
        ),
        epilog=CHECK_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "csv",
        metavar="CSV",
        nargs="?",
        help="the CSV of URLs (docs/csv-input.md); may be left out with --jobdir of an existing "
        "job, which resumes from the job's own copy",
    )
    parser.add_argument(
        "--out",
        metavar="FILE",
        help="the results file (default: results.jsonl in the job directory; with --no-job, here)",
    )
    parser.add_argument(
        "--jobdir",
        metavar="DIR",
        help="the job's directory (default: .urlcheck/jobs/<csv name>-<hash>/; --no-job: "
        "none); the same command resumes it (docs/jobs.md)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        action="append",
        default=[],
        help="also export to FILE; its extension picks the format (results.csv), or FILE:FORMAT",
    )
    parser.add_argument(
        "-s",
        "--set",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="a setting (docs/settings.md), may be repeated",
    )
    parser.add_argument(
        "-a",
        dest="spargs",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="a spider argument, may be repeated",
    )
    parser.add_argument("-L", "--loglevel", metavar="LEVEL", help="log level (default: INFO)")
    parser.add_argument("--logfile", metavar="FILE", help="log to FILE instead of stderr")
    return parser


def check_argv(args: Sequence[str]) -> list[str]:
    """``urlcheck check ...`` as the ``scrapy crawl check ...`` arguments it stands for."""
    # Options of `scrapy crawl` not named here (-O, --nolog...) pass through as they are.
    parser = _check_parser()
    opts, passthrough = parser.parse_known_args(args)
    if opts.csv is None and not opts.jobdir:
        parser.error("name the CSV to check, or --jobdir DIR of a job to resume")
    argv = ["crawl", "check"] + ([] if opts.csv is None else ["-a", f"csv={opts.csv}"])
    if opts.out:
        argv += ["-a", f"out={opts.out}"]
    if opts.jobdir:
        argv += ["-s", f"JOBDIR={opts.jobdir}"]
    for output in opts.output:
        argv += ["-o", output]
    for setting in opts.set:
        argv += ["-s", setting]
    for spider_arg in opts.spargs:
        argv += ["-a", spider_arg]
    if opts.loglevel:
        argv += ["-L", opts.loglevel]
    if opts.logfile:
        argv += ["--logfile", opts.logfile]
    return argv + passthrough


def _command_help(name: str, command: ScrapyCommand, settings: Settings) -> str:
    parser = argparse.ArgumentParser(
        prog=f"urlcheck {name}",
        usage=f"urlcheck {name} {command.syntax()}",
        description=_wrap(command.long_desc()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        conflict_handler="resolve",
    )
    command.settings = settings
    command.add_options(parser)
    return parser.format_help()


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=min(shutil.get_terminal_size().columns - 2, 94))


def _version() -> str:
    try:
        return version("urlcheck")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``urlcheck ARGS``; returns (or exits with) the command's exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    settings = project_settings()
    commands = project_commands(settings)
    if not args or args[0] in ("-h", "--help"):
        print(_main_help(commands))
        return 0 if args else 2
    if args[0] == "--version":
        print(f"urlcheck {_version()}")
        return 0
    name, rest = args[0], args[1:]
    if name == "check":
        return _execute(check_argv(rest), settings)
    if name not in commands:
        shown = ", ".join(["check", *sorted(set(commands) - HIDDEN)])
        print(f"urlcheck: unknown command {name!r}; the commands are: {shown}", file=sys.stderr)
        return 2
    if "-h" in rest or "--help" in rest:
        print(_command_help(name, commands[name], settings), end="")
        return 0
    return _execute([name, *rest], settings)


def _execute(argv: list[str], settings: Settings) -> int:
    """Scrapy's own command line runs the command; its exit code is returned."""
    try:
        execute(["urlcheck", *argv], settings)
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            return done.code or 0
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
