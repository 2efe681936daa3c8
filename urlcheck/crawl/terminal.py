"""What ``urlcheck check`` shows on the terminal it runs in (docs/reports.md, "On the terminal").

On a terminal (stderr a TTY), by default: a progress bar on stderr (rows done/total, rate, ETA,
hosts active and in back-off), drawn with rich, and above it only the log's warnings and errors;
the whole log, Scrapy's own lines and its stats dump among them, goes to the job's
``crawl.log`` (:func:`log_file`). ``-q``: no bar, only warnings and errors. ``-v``, or stderr
not a terminal: the log on stderr, as always. At the end the summary goes to stdout.

Everything written here is made :func:`~urlcheck.check.printable.printable` first: a log line can
hold a URL from the CSV or a Location a site chose, and a terminal obeys the control and bidi
characters in them.
"""

from __future__ import annotations

import enum
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from urlcheck.check.printable import printable_lines

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID
    from scrapy.settings import BaseSettings

    from urlcheck.jobs.progress import ProgressFigures

LOG_NAME = "crawl.log"  # in the job directory, as `urlcheck serve` names its crawls' logs
BAR_REFRESH = 0.5  # seconds between two draws of the bar


class Mode(enum.Enum):
    BAR = "bar"  # a terminal: the bar, warnings above it, the log in a file
    QUIET = "quiet"  # -q: warnings and errors only, the log in a file
    LOG = "log"  # -v, or not a terminal: the log on stderr, as Scrapy writes it

    @classmethod
    def choose(cls, *, verbose: bool, quiet: bool, tty: bool) -> Mode:
        if quiet:
            return cls.QUIET
        if verbose or not tty:
            return cls.LOG
        return cls.BAR


def log_file(jobdir: Path | None, results: Path) -> Path:
    """Where the log goes when it does not go to the terminal: the job's ``crawl.log``, or
    beside a run's results without a job (``results.jsonl`` -> ``results.log``)."""
    if jobdir is not None:
        return jobdir / LOG_NAME
    return results.with_suffix(".log")


def take_the_log(settings: BaseSettings) -> bool:
    """Whether the log is urlcheck's to place (it is on, and no ``LOG_FILE`` was named): then it
    is turned off until :func:`log_to` names its file, so that Scrapy's first lines, written
    before the job directory is known, do not reach the terminal."""
    if not settings.getbool("LOG_ENABLED") or settings.get("LOG_FILE"):
        return False
    settings.set("LOG_ENABLED", False, priority="cmdline")
    return True


def log_to(settings: BaseSettings, path: Path) -> Path:
    """Send the log to ``path`` (appended to, run after run); call before the crawler is made."""
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    settings.set("LOG_FILE", str(path), priority="cmdline")
    settings.set("LOG_ENABLED", True, priority="cmdline")
    return path


class _TerminalHandler(logging.Handler):
    def __init__(self, terminal: Terminal, level: int) -> None:
        super().__init__(level)
        self.terminal = terminal
        self.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.terminal.write(printable_lines(self.format(record)))
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


class Terminal:
    """The terminal side of a run: a progress bar (``bar``) and the log records at ``level`` and
    above, written above the bar."""

    def __init__(
        self, *, bar: bool, stream: TextIO | None = None, level: int = logging.WARNING
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.bar = bar
        self._handler = _TerminalHandler(self, level)
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def start(self) -> None:
        """Show warnings from now on (the bar appears with the first figures)."""
        logging.getLogger().addHandler(self._handler)

    def stop(self) -> None:
        """Leave the bar as it last was and stop writing to the terminal."""
        logging.getLogger().removeHandler(self._handler)
        if self._progress is not None:
            self._progress.refresh()
            self._progress.stop()
            self._progress = None

    def write(self, text: str) -> None:
        """A line (already printable) above the bar."""
        if self._progress is not None:
            from rich.text import Text

            self._progress.console.print(Text(text))
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def show(self, figures: ProgressFigures) -> None:
        """Draw the bar with the progress line's figures."""
        if not self.bar:
            return
        progress = self._progress or self._start_bar()
        assert self._task is not None
        total = max(figures.total, 1)
        progress.update(self._task, completed=figures.done, total=total, info=figures.brief())
        progress.refresh()

    def _start_bar(self) -> Progress:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

        console = Console(file=self.stream, highlight=False, markup=False, emoji=False)
        progress = Progress(
            BarColumn(bar_width=30),
            TaskProgressColumn(),
            TextColumn("{task.fields[info]}", markup=False),
            console=console,
            auto_refresh=False,  # drawn by the crawl's own timer, from its own thread
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._task = progress.add_task("rows", total=None, info="")
        progress.start()
        self._progress = progress
        return progress
