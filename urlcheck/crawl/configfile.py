"""The settings file on Scrapy's side: ``--config FILE`` (else ``./urlcheck.toml``) read into a
command's settings at :data:`FILE_PRIORITY`, above the project's settings and below ``-s``,
after its values passed the same checks as the crawl's (:mod:`urlcheck.config.file`).

``urlcheck check`` (``scrapy crawl``), ``job`` and ``serve`` read it; ``urlcheck demo`` does not
(the demo runs as designed wherever it is started). ``job run`` and the server hand the file on
to the crawls they start.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from urlcheck.config.crawlconfig import UrlcheckConfig
from urlcheck.config.file import CONFIG_NAME, ConfigFile, find_config
from urlcheck.config.reader import ConfigError
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.proxypool import PoolConfig

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import BaseSettings

# Scrapy's priorities: project 20, spider 30, cmdline 40 (-s). The file is the user's own
# standing choice: above what the project and the spider set, below a run's -s.
FILE_PRIORITY = 35
_CHECKED = 50  # the file's values, over everything, in the copy they are checked in


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"settings file (default: ./{CONFIG_NAME} when there is one; -s wins over it; "
        "docs/settings.md)",
    )


def read_config(
    settings: BaseSettings, explicit: str | None, cwd: Path | None = None
) -> Path | None:
    """Find, read, check and apply the run's settings file; returns its path (None: no file).
    ConfigError naming the file and the key when it cannot be used."""
    path = find_config(explicit, cwd or Path.cwd())
    if path is None:
        return None
    pool = frozenset(f"proxy_{f.name}" for f in dataclasses.fields(PoolConfig))
    file = ConfigFile.read(path, extra=pool)
    checked = settings.copy()
    checked.setdict(file.values, priority=_CHECKED)
    try:
        UrlcheckConfig.from_settings(checked)
        if any(key.startswith("serve_") for key in file.keys.values()):
            from urlcheck.serve.config import ServeConfig

            ServeConfig.from_settings(checked)
    except ConfigError as exc:
        raise file.explain(exc) from None
    settings.setdict(file.values, priority=FILE_PRIORITY)
    return path.resolve()


def read_config_or_exit(
    settings: BaseSettings, opts: argparse.Namespace, cwd: Path | None = None
) -> Path | None:
    """:func:`read_config` for a command: a bad file is one line and exit code 2."""
    try:
        return read_config(settings, opts.config, cwd)
    except ConfigError as exc:
        print(f"urlcheck: {exc}", file=sys.stderr)
        raise SystemExit(int(ExitCode.INPUT_ERROR)) from None
