"""The ``urlcheck`` command: the project's Scrapy commands, from any directory.

``urlcheck check urls.csv`` is ``scrapy crawl check -a csv=urls.csv`` run with urlcheck's settings
(as ``SCRAPY_SETTINGS_MODULE=urlcheck.settings`` would), in this process, with the same exit codes
(docs/jobs.md). Every other command of ``urlcheck.commands`` (``job``, ``demo``) passes through as
it is; only the help text is this module's.

As pip does, the commands are listed here with their summaries, so that ``urlcheck --help``
imports none of them, and ``urlcheck NAME --help`` only NAME's; Scrapy itself is imported only to
run a command or to show its options. ``scrapy NAME`` in the checkout finds the same commands by
walking ``COMMANDS_MODULE``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.commands import ScrapyCommand
    from scrapy.settings import Settings

SETTINGS_MODULE = "urlcheck.settings"


class CommandInfo(NamedTuple):
    module: str  # holds the ScrapyCommand subclass ``Command``; its name is the command's
    summary: str  # as ``urlcheck --help`` lists it: the command's short_desc() (tests hold them)


# Every module of urlcheck.commands (tests/commands/test_cli.py checks that none is missing).
# `check` is the way into `crawl`, which is not listed; `urlcheck crawl check ...` still works.
COMMANDS = {
    "check": CommandInfo(
        "urlcheck.commands.crawl", "Check every URL of a CSV (scrapy crawl check -a csv=CSV)"
    ),
    "demo": CommandInfo(
        "urlcheck.commands.demo",
        "Check a demo CSV against a bundled demo site on 127.0.0.1 (no internet needed)",
    ),
    "job": CommandInfo(
        "urlcheck.commands.job",
        "Show, control or supervise a urlcheck job: status, pause, resume, cancel, run",
    ),
    "serve": CommandInfo(
        "urlcheck.commands.serve",
        "Serve the web face: upload a CSV, watch and steer its job in a browser",
    ),
}
HIDDEN = {"crawl": CommandInfo("urlcheck.commands.crawl", "")}

DESCRIPTION = """\
Check a CSV of URLs and their redirects, politely (1 request at a time and 300 ms apart per
host, hosts in parallel). One JSON line per URL goes to results.jsonl."""

EXAMPLES = """\
examples:
  urlcheck demo                                   # a bundled site on 127.0.0.1, no internet
  urlcheck check urls.csv                         # a job in .urlcheck/jobs/urls-<hash>/
  urlcheck check urls.csv --jobdir jobs/site      # a job: Ctrl-C, then the same command resumes
  urlcheck check urls.csv -o check.xlsx           # also a workbook (or check.csv:excel)
  urlcheck check urls.csv -s URLCHECK_METHOD=HEAD # any setting: docs/settings.md
  urlcheck job status jobs/site                   # from another terminal; pause, resume, cancel
  urlcheck serve                                  # the web face on http://127.0.0.1:8080/

exit codes: 0 finished, 2 input error, 3 finished with failed verdicts, 4 stopped before done
(run it again to resume), 5 cancelled, 6 the job is locked by another process (docs/jobs.md)."""

CHECK_EXAMPLES = """\
examples:
  urlcheck check urls.csv
  urlcheck check urls.csv --jobdir jobs/site      # Ctrl-C, then the same command resumes
  urlcheck check urls.csv --out audit.jsonl -o audit.csv
  urlcheck check urls.csv -o audit.xlsx -o audit.csv:excel   # for Excel (docs/reports.md)
  urlcheck check urls.csv -s URLCHECK_MAX_HOPS=5 -s DOWNLOAD_TIMEOUT=10
  urlcheck check urls.csv --config audit.toml     # settings from a file (./urlcheck.toml too)
  urlcheck check urls.csv -q                      # for cron: warnings and errors only

exit codes: 0 finished, 2 input error, 3 finished with failed verdicts, 4 stopped before done
(run it again to resume), 5 cancelled, 6 the job is locked by another process (docs/jobs.md)."""


def project_settings() -> Settings:
    """urlcheck's settings, wherever the current directory is; Scrapy's commands read the same."""
    from scrapy.utils.project import get_project_settings

    os.environ["SCRAPY_SETTINGS_MODULE"] = SETTINGS_MODULE
    return get_project_settings()


def create_command(name: str) -> ScrapyCommand:
    """The command ``name`` (of COMMANDS or HIDDEN), its module imported only now."""
    info = COMMANDS.get(name) or HIDDEN[name]
    command: ScrapyCommand = importlib.import_module(info.module).Command()
    return command


def _main_help() -> str:
    lines = [
        "usage: urlcheck <command> [options] [args]",
        "",
        DESCRIPTION,
        "",
        "commands:",
        *(f"  {name:<8} {info.summary}" for name, info in COMMANDS.items()),
        "",
        EXAMPLES,
        "",
        "`urlcheck <command> --help` shows a command's options.",
    ]
    return "\n".join(lines)


def _check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="urlcheck check",
        usage="urlcheck check [INPUT] [--out FILE] [--jobdir DIR] [-o FILE] [-s NAME=VALUE] "
        "[--config FILE] ...",
        description=_wrap(
            "Check every URL of CSV: status, redirect chain, final URL and, where the CSV gives "
            "an expected target, a pass/fail verdict. On a terminal a progress bar shows on "
            "stderr and the log goes to the job's crawl.log; at the end the summary goes to "
            "stdout. The same as `scrapy crawl check -a csv=CSV` in the project; other "
            "`scrapy crawl` options pass through."
        ),
        epilog=CHECK_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "csv",
        metavar="INPUT",
        nargs="?",
        help="the URLs: a CSV, an .xlsx workbook, a sitemap (.xml or .xml.gz), a list (one URL "
        "a line), or - for standard input; the kind is found from the content "
        "(docs/csv-input.md); may be left out with --jobdir of an existing job, which resumes "
        "from the job's own copy",
    )
    parser.add_argument(
        "--sheet",
        metavar="NAME",
        help="the sheet of an .xlsx workbook to read (default: its first); same as -a sheet=NAME",
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
        "--no-job",
        action="store_true",
        help="run without a job: no resume, no status or control; results.jsonl here unless --out",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        action="append",
        default=[],
        help="also export to FILE; its extension picks the format (results.csv, results.xlsx), "
        "or FILE:FORMAT (results.csv:excel: a BOM and ';', for Excel)",
    )
    parser.add_argument(
        "-s",
        "--set",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="a setting (docs/settings.md), may be repeated; wins over the settings file",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="the settings file (default: ./urlcheck.toml when there is one; docs/settings.md)",
    )
    parser.add_argument(
        "-a",
        dest="spargs",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="a spider argument, may be repeated",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="the log on stderr instead of a progress bar (as when stderr is not a terminal)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="only warnings and errors on stderr and no summary; the log goes to the job's "
        "crawl.log",
    )
    parser.add_argument("-L", "--loglevel", metavar="LEVEL", help="log level (default: INFO)")
    parser.add_argument(
        "--logfile",
        metavar="FILE",
        help="log to FILE (default: stderr, or on a terminal the job's crawl.log)",
    )
    return parser


def check_argv(args: Sequence[str]) -> list[str]:
    """``urlcheck check ...`` as the ``scrapy crawl check ...`` arguments it stands for."""
    # Options of `scrapy crawl` not named here (-O, --nolog...) pass through as they are.
    parser = _check_parser()
    opts, passthrough = parser.parse_known_args(args)
    if opts.csv is None and not opts.jobdir:
        parser.error("name the CSV to check, or --jobdir DIR of a job to resume")
    if opts.jobdir and opts.no_job:
        parser.error("--jobdir and --no-job exclude each other")
    stray = _stray_arguments(passthrough)
    if stray:
        # `urlcheck check *.csv`, or a value whose option was left out: Scrapy's crawl would
        # only print its help, without a word on what is wrong.
        parser.error(f"one INPUT at a time; unexpected argument(s): {' '.join(stray)}")
    argv = ["crawl", "check"] + ([] if opts.csv is None else ["-a", f"csv={opts.csv}"])
    if opts.out:
        argv += ["-a", f"out={opts.out}"]
    if opts.sheet:
        argv += ["-a", f"sheet={opts.sheet}"]
    if opts.jobdir:
        argv += ["-s", f"JOBDIR={opts.jobdir}"]
    if opts.no_job:
        argv += ["--no-job"]
    for output in opts.output:
        argv += ["-o", output]
    for setting in opts.set:
        argv += ["-s", setting]
    if opts.config:
        argv += ["--config", opts.config]
    for spider_arg in opts.spargs:
        argv += ["-a", spider_arg]
    if opts.verbose:
        argv += ["--verbose"]
    if opts.quiet:
        argv += ["--quiet"]
    if opts.loglevel:
        argv += ["-L", opts.loglevel]
    if opts.logfile:
        argv += ["--logfile", opts.logfile]
    return argv + passthrough


# The options of `scrapy crawl` that urlcheck check does not name and that take a value.
_PASSED_WITH_VALUE = frozenset({"-O", "--overwrite-output", "--profile", "--pidfile"})


def _stray_arguments(passthrough: list[str]) -> list[str]:
    """The arguments left over that are neither options of `scrapy crawl` nor their values."""
    stray: list[str] = []
    value_next = False
    for arg in passthrough:
        if value_next:
            value_next = False
        elif arg.startswith("-") and arg != "-":
            value_next = arg in _PASSED_WITH_VALUE
        else:
            stray.append(arg)
    return stray


def _command_help(name: str) -> str:
    command = create_command(name)
    parser = argparse.ArgumentParser(
        prog=f"urlcheck {name}",
        usage=f"urlcheck {name} {command.syntax()}",
        description=_wrap(command.long_desc()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        conflict_handler="resolve",
    )
    command.settings = project_settings()
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
    if not args or args[0] in ("-h", "--help"):
        print(_main_help())
        return 0 if args else 2
    if args[0] == "--version":
        print(f"urlcheck {_version()}")
        return 0
    name, rest = args[0], args[1:]
    if name == "check":
        return _execute(check_argv(rest))
    if name not in COMMANDS and name not in HIDDEN:
        shown = ", ".join(COMMANDS)
        print(f"urlcheck: unknown command {name!r}; the commands are: {shown}", file=sys.stderr)
        return 2
    if "-h" in rest or "--help" in rest:
        print(_command_help(name), end="")
        return 0
    return _execute([name, *rest])


def _execute(argv: list[str]) -> int:
    """Scrapy's own command line runs the command; its exit code is returned."""
    from scrapy.cmdline import execute

    try:
        execute(["urlcheck", *argv], project_settings())
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            return done.code or 0
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
