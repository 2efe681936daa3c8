"""``urlcheck demo`` (``scrapy demo``): serve the bundled demo site on 127.0.0.1, check the bundled
demo CSV against it as a job, print a short summary and where the results are. Needs no internet.

The demo hosts are names under ``localhost`` (``old.localhost``, ``new.localhost``,
``busy.localhost``), all on 127.0.0.1: distinct hosts to the crawl, so they are checked in parallel,
on any platform (macOS has no 127.0.0.2). :mod:`urlcheck.demo.resolver` resolves them.
"""

from __future__ import annotations

import json
import socket
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand

from urlcheck.commands.crawl import exit_code
from urlcheck.demo.launcher import SiteServer
from urlcheck.demo.resolver import LOOPBACK

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import BaseSettings

DEMO_HOSTS = ("old.localhost", "new.localhost", "busy.localhost")
DEMO_PORT = 8741  # the port the demo CSV names
DEMO_CSV = files("urlcheck.demo") / "data" / "demo.csv"


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
            "job in --jobdir, and prints one line per URL. Exit code 3: the demo has failing "
            "verdicts on purpose."
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

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.crawler_process is not None
        port = DEMO_PORT if _port_free(DEMO_PORT) else 0
        with SiteServer((LOOPBACK,), port=port) as site:
            self.jobdir.mkdir(parents=True, exist_ok=True)
            csv = self.jobdir / "demo.csv"
            csv.write_text(demo_csv(site.port), "utf-8")
            print(
                f"Demo site on {LOOPBACK} port {site.port} as {', '.join(DEMO_HOSTS)} (hosts "
                f"checked in parallel, one request at a time each); checking {csv}"
            )
            crawler = self.crawler_process.create_crawler("check")
            self.crawler_process.crawl(crawler, csv=str(csv))
            self.crawler_process.start()
        self._print_summary(self.jobdir / "results.jsonl")
        self.exitcode = int(exit_code(crawler))

    @staticmethod
    def _print_summary(results: Path) -> None:
        if not results.exists():
            print("No results were written.")
            return
        rows = [json.loads(line) for line in results.read_text("utf-8").splitlines() if line]
        print(
            f"\n{'row':>3}  {'status':>6}  {'final':>5}  {'hops':>4}  {'verdict':<7}  url / problem"
        )
        for r in sorted(rows, key=lambda r: r["row"]):
            notes = [r["error"] or ("loop" if r["loop"] else "") or ", ".join(r["reasons"])]
            if r["retries"]:
                notes.append(f"{r['retries']} retry after back-off")
            if r["meta_refresh"]:
                notes.append(f"meta refresh to {r['meta_refresh']}")
            problem = "; ".join(n for n in notes if n)
            print(
                f"{r['row']:>3}  {r['status'] or '-'!s:>6}  {r['final_status'] or '-'!s:>5}  "
                f"{r['hops']:>4}  {r['verdict'] or '-':<7}  {r['url']}"
                + (f"  [{problem}]" if problem else "")
            )
        print(f"\n{len(rows)} rows checked. Results: {results.resolve()}")
