"""``urlcheck demo`` (``scrapy demo``): serve the bundled demo site on 127.0.0.1, check the bundled
demo CSV against it as a job, print a short summary and where the results are. Needs no internet.

The demo hosts are names under ``localhost`` (``old.localhost``, ``new.localhost``,
``busy.localhost``), all on 127.0.0.1: distinct hosts to the crawl, so they are checked in parallel,
on any platform (macOS has no 127.0.0.2). :mod:`urlcheck.demo.resolver` resolves them.
"""

from __future__ import annotations

import csv
import io
import json
import socket
import sys
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.utils.log import log_scrapy_info

from urlcheck.check.printable import printable
from urlcheck.commands.crawl import exit_code
from urlcheck.crawl.runtime import runtime
from urlcheck.crawl.terminal import LOG_NAME, Terminal, log_to, take_the_log
from urlcheck.demo.launcher import SiteServer
from urlcheck.demo.resolver import LOOPBACK
from urlcheck.jobs.exitcodes import ExitCode

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import BaseSettings

DEMO_HOSTS = ("old.localhost", "new.localhost", "busy.localhost")
DEMO_PORT = 8741  # the port the demo CSV names
DEMO_CSV = files("urlcheck.demo") / "data" / "demo.csv"
DESIGNED = "designed verdict"  # the demo CSV's column: the verdict each row is built to get


def use_urlcheck_settings(settings: BaseSettings) -> None:
    """Outside the checkout, ``scrapy demo`` (an entry point) has no project: use urlcheck's."""
    if "urlcheck.spiders" not in settings.getlist("SPIDER_MODULES"):
        settings.setmodule("urlcheck.settings", priority="project")


def demo_csv(port: int) -> str:
    """The demo CSV's text, naming `port`."""
    return DEMO_CSV.read_text("utf-8").replace(f":{DEMO_PORT}/", f":{port}/")


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


class Command(ScrapyCommand):
    requires_project = True

    def short_desc(self) -> str:
        return "Check a demo CSV against a bundled demo site on 127.0.0.1 (no internet needed)"

    def long_desc(self) -> str:
        return (
            "Serves a small site with redirects, chains, a loop, missing pages and a rate-limited "
            f"host on 127.0.0.1 (as {', '.join(DEMO_HOSTS)}), checks eleven URLs against it as a "
            "job in --jobdir, and prints one line per URL. Some rows fail their verdicts on "
            "purpose (the CSV's `designed verdict` column): exit code 0 when every verdict is "
            "the one its row was built for, else the crawl's (3 for failed verdicts)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--jobdir", default="demo-job", help="job directory (default: demo-job)"
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        use_urlcheck_settings(self.settings)
        self.jobdir = Path(opts.jobdir)
        self.settings.set("JOBDIR", str(self.jobdir), priority="cmdline")
        self.settings.set(
            "TWISTED_DNS_RESOLVER", "urlcheck.demo.resolver.LocalhostResolver", priority="cmdline"
        )
        # The demo's rate-limited host asks for 2 s; a 30 s schedule would only make you wait.
        self.settings.set("URLCHECK_BACKOFF_BASE", 2, priority="cmdline")
        self.settings.set("LOG_LEVEL", self.settings.get("LOG_LEVEL", "INFO"), priority="cmdline")
        # On a terminal, as `urlcheck check`: a progress bar, the log in the job's crawl.log.
        self.terminal = Terminal(bar=True) if sys.stderr.isatty() else None
        self._own_log = self.terminal is not None and take_the_log(self.settings)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.crawler_process is not None
        assert self.settings is not None
        port = DEMO_PORT if _port_free(DEMO_PORT) else 0
        with SiteServer((LOOPBACK,), port=port) as site:
            self.jobdir.mkdir(parents=True, exist_ok=True)
            csv = self.jobdir / "demo.csv"
            csv.write_text(demo_csv(site.port), "utf-8")
            print(
                f"Demo site on {LOOPBACK} port {site.port} as {', '.join(DEMO_HOSTS)} (hosts "
                f"checked in parallel, one request at a time each); checking {csv}"
            )
            terminal = self.terminal
            if self._own_log:
                log_to(self.settings, self.jobdir / LOG_NAME)
            crawler = self.crawler_process.create_crawler("check")
            if self._own_log:
                log_scrapy_info(self.settings)
            runtime(crawler).terminal = terminal
            if terminal is not None:
                terminal.start()
            try:
                self.crawler_process.crawl(crawler, csv=str(csv))
                self.crawler_process.start()
            finally:
                if terminal is not None:
                    terminal.stop()
        code = exit_code(crawler)
        rows = _read_results(self.jobdir / "results.jsonl")
        if rows is None:
            print("No results were written.")
            self.exitcode = int(code) or int(ExitCode.FAILED_VERDICTS)
            return
        _print_rows(rows)
        print(f"\n{len(rows)} rows checked. Results: {(self.jobdir / 'results.jsonl').resolve()}")
        if self._own_log:
            print(f"The crawl's log: {(self.jobdir / LOG_NAME).resolve()}")
        self.exitcode = _judge(rows, designed_verdicts(DEMO_CSV.read_text("utf-8")), code)


def designed_verdicts(text: str) -> dict[int, str]:
    """Row -> the verdict the demo CSV's row is built to get (its ``designed verdict``)."""
    reader = csv.DictReader(io.StringIO(text))
    return {
        row: record[DESIGNED].strip()
        for row, record in enumerate(reader, 1)
        if (record.get(DESIGNED) or "").strip()
    }


def _judge(rows: list[dict[str, Any]], designed: dict[int, str], code: ExitCode) -> int:
    """0 when the demo ran as designed: it finished and every verdict is the one its row was
    built for (the failing ones fail on purpose); else the crawl's exit code, or 3."""
    if code not in (ExitCode.FINISHED, ExitCode.FAILED_VERDICTS):
        print(f"The demo stopped before it was done (exit code {int(code)}).")
        return int(code)
    got = {r["row"]: r["verdict"] for r in rows}
    wrong = [
        f"row {row}: {got.get(row) or 'no verdict'} where the demo expects {verdict}"
        for row, verdict in sorted(designed.items())
        if got.get(row) != verdict
    ]
    wrong += [
        f"row {row}: {verdict} where the demo expects none"
        for row, verdict in sorted(got.items())
        if verdict and row not in designed
    ]
    if wrong:
        print("The demo did not run as designed: " + "; ".join(wrong) + ".")
        return int(code) or int(ExitCode.FAILED_VERDICTS)
    failing = [row for row, verdict in sorted(designed.items()) if verdict == "fail"]
    print(
        f"Rows {_and(failing)} fail their verdicts on purpose (a real check would exit with 3): "
        "the demo ran as designed."
    )
    return int(ExitCode.FINISHED)


def _and(items: list[int]) -> str:
    words = [str(i) for i in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _read_results(results: Path) -> list[dict[str, Any]] | None:
    if not results.exists():
        return None
    return [json.loads(line) for line in results.read_text("utf-8").splitlines() if line]


def _print_rows(rows: list[dict[str, Any]]) -> None:
    print(f"\n{'row':>3}  {'status':>6}  {'final':>5}  {'hops':>4}  {'verdict':<7}  url / problem")
    for r in sorted(rows, key=lambda r: r["row"]):
        notes = [r["error"] or ("loop" if r["loop"] else "") or ", ".join(r["reasons"])]
        if r.get("warnings"):  # the checks that only warn (docs/urls-and-verdicts.md section 9)
            notes.append("warned: " + ", ".join(r["warnings"]))
        if r["retries"]:
            notes.append(f"{r['retries']} retry after back-off")
        if r["meta_refresh"]:
            notes.append(f"meta refresh to {r['meta_refresh']}")
        problem = "; ".join(n for n in notes if n)
        print(
            printable(
                f"{r['row']:>3}  {r['status'] or '-'!s:>6}  {r['final_status'] or '-'!s:>5}  "
                f"{r['hops']:>4}  {r['verdict'] or '-':<7}  {r['url']}"
                + (f"  [{problem}]" if problem else "")
            )
        )
