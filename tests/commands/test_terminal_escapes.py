"""What a CSV or a site says reaches a terminal only as visible characters: ESC sequences and
bidi controls in URLs and Locations, through a real crawl, are escaped by ``scrapy job diff``,
``scrapy job status``, the crawl's log (the summary included) and the Markdown report
(urlcheck.check.printable)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from tests.jobs.crawls import run_crawl
from tests.processes import scrapy_job

if TYPE_CHECKING:
    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl

TITLE = "\x1b]0;owned\x07"  # sets the terminal window's title
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
RLO = "\u202e"  # right-to-left override: "exe.gpj" shows as "jpg.exe"
RAW = (TITLE, CLEAR, RLO, "\x9b", "\x1b")


def _hostile_rows(site: SiteServer) -> list[str]:
    host = "127.0.0.2"
    return [
        site.url(host, f"/ok?t={TITLE}"),
        site.url(host, f"/ok?t={CLEAR}x"),
        site.url(host, f"/ok?name={RLO}exe.gpj"),
        # Locations: a path with ESC and U+202E, raw bytes; a host no URL parser accepts
        site.url(host, "/raw-location/301?hex=" + ("/ok?a=" + CLEAR + RLO).encode().hex()),
        site.url(host, "/raw-location/302?hex=" + f"http://a{CLEAR}b.test/".encode().hex()),
        site.url(host, "/redirect/301?to=" + quote(f"http://x{RLO}y.test:1/", safe="")),
    ]


def test_hostile_text_is_escaped_wherever_it_is_printed(tmp_path: Path, site: SiteServer) -> None:
    csv = tmp_path / f"client{RLO}vsc.txt"
    csv.write_text("url\n" + "".join(f'"{u}"\n' for u in _hostile_rows(site)), encoding="utf-8")
    jobdir = tmp_path / f"job{RLO}bew"  # a client's name for the job, say
    code, log = run_crawl(csv, jobdir)
    assert code in (0, 3), log[-3000:]
    results = [json.loads(line) for line in (jobdir / "results.jsonl").read_text().splitlines()]
    assert len(results) == 6
    # the results keep what was there, as data
    assert any(TITLE in r["url"] for r in results)
    # an older run that answered otherwise, so that every row shows in the diff
    old = tmp_path / "old.jsonl"
    old.write_text(
        "".join(json.dumps({**r, "final_status": 999, "url": r["url"]}) + "\n" for r in results),
        encoding="utf-8",
    )
    diff = scrapy_job("diff", old, jobdir / "results.jsonl")
    status = scrapy_job("status", jobdir)
    report = scrapy_job("report", jobdir, "-o", tmp_path / "report.md")
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    for name, text in [
        ("crawl log", log),
        ("diff", diff.stdout + diff.stderr),
        ("status", status.stdout + status.stderr),
        ("report", report.stdout + report.stderr),
        ("report.md", markdown),
    ]:
        leaked = sorted({repr(c) for c in text if c in "\x1b\x07\x9b\u202e"})
        assert not leaked, f"{name} prints {leaked} raw:\n{text[-2000:]}"
    assert "\\x1b]0;owned\\x07" in diff.stdout and "\\u202eexe.gpj" in diff.stdout
    assert "job\\u202ebew" in status.stdout
