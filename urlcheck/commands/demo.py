"""``scrapy demo``: serve the bundled demo site on loopback, check examples/demo.csv against
it as a job, print a short summary and where the results are. Needs no internet."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand

from urlcheck.commands.crawl import exit_code
from urlcheck.demo.launcher import SiteServer

if TYPE_CHECKING:
    import argparse

DEMO_HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
DEMO_PORT = 8741  # the port examples/demo.csv names
DEMO_CSV = Path(__file__).resolve().parents[2] / "examples" / "demo.csv"


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((DEMO_HOSTS[0], port))
        except OSError:
            return False
    return True


class Command(ScrapyCommand):
    requires_project = True

    def short_desc(self) -> str:
        return "Check examples/demo.csv against a bundled demo site on loopback"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--jobdir", default="demo-job", help="job directory (default: demo-job)"
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        self.jobdir = Path(opts.jobdir)
        self.settings.set("JOBDIR", str(self.jobdir), priority="cmdline")
        # The demo's rate-limited host asks for 2 s; a 30 s schedule would only make you wait.
        self.settings.set("URLCHECK_BACKOFF_BASE", 2, priority="cmdline")
        self.settings.set("LOG_LEVEL", self.settings.get("LOG_LEVEL", "INFO"), priority="cmdline")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.crawler_process is not None
        csv = DEMO_CSV
        with SiteServer(DEMO_HOSTS, port=DEMO_PORT if _port_free(DEMO_PORT) else 0) as site:
            if site.port != DEMO_PORT:  # port taken: check a copy that names the new one
                self.jobdir.mkdir(parents=True, exist_ok=True)
                csv = self.jobdir / "demo.csv"
                csv.write_text(DEMO_CSV.read_text().replace(f":{DEMO_PORT}/", f":{site.port}/"))
            print(f"Demo site on {', '.join(DEMO_HOSTS)} port {site.port}; checking {csv}")
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
