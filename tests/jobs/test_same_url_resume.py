"""Rows asking for the same URL across a pause (issue 25 point 6): each row gets its line exactly
once, and a copy whose first row was done in an earlier run is checked again, once for all
the copies left (docs/jobs.md, "Rows with the same URL"). Also what ``job status`` then
shows: first and final answers, labelled (issue 25 point 8)."""

from __future__ import annotations

import signal
from collections import Counter
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.jobs.crawls import HOSTS, Crawl, assert_no_duplicates, meta_of, read_results, write_rows
from tests.processes import scrapy_job
from urlcheck.jobs.done import dropped_path
from urlcheck.jobs.exitcodes import ExitCode

if TYPE_CHECKING:
    from pathlib import Path

    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl


def test_copies_get_their_line_once_across_pauses(tmp_path: Path, site: SiteServer) -> None:
    distinct, copies = 40, 4
    # Half the URLs redirect once (first answer 3xx, final 2xx), half answer 200 after 0.2 s.
    urls = [
        site.url(
            HOSTS[k % len(HOSTS)], f"{'/chain/1' if k % 2 else '/delay/0.2'}?t=same-resume&u={k}"
        )
        for k in range(distinct)
    ]
    rows = distinct * copies  # row n asks for URL (n - 1) % 40: each URL on 4 rows, far apart
    csv = write_rows(tmp_path / "in.csv", [urls[(n - 1) % distinct] for n in range(1, rows + 1)])
    jobdir = tmp_path / "job"
    results = jobdir / "results.jsonl"
    url_of = {n: urls[(n - 1) % distinct] for n in range(1, rows + 1)}

    # Run 1 checks every row on its own (the setting off, or an urlcheck without it) and is
    # paused once the first copy of each URL and a few second ones are done: a resume then
    # meets copies whose first row was done in an earlier run.
    first = Crawl(csv, jobdir, "URLCHECK_SAME_URL_ONCE=False", name="run1")
    first.wait_lines(distinct + 5)
    first.signal(signal.SIGINT)
    assert first.wait(timeout=20) == ExitCode.PAUSED, first.stderr()[-3000:]
    done = [assert_no_duplicates(read_results(results))]
    before = requests(site)

    # Run 2 shares requests, and is paused too (perhaps while copies' lines are handed out).
    second = Crawl(csv, jobdir, name="run2")
    second.wait_lines(len(done[0]) + 20)
    second.signal(signal.SIGINT)
    assert second.wait(timeout=20) == ExitCode.PAUSED, second.stderr()[-3000:]
    done.append(assert_no_duplicates(read_results(results)) - done[0])
    run2 = requests(site) - before
    before = requests(site)

    third = Crawl(csv, jobdir, name="run3")
    assert third.wait() == ExitCode.FINISHED, third.stderr()[-3000:]
    lines = read_results(results)
    assert assert_no_duplicates(lines) == set(range(1, rows + 1))  # every row, once
    assert not dropped_path(results).exists()  # no line was written twice and dropped
    done.append({line["row"] for line in lines} - done[0] - done[1])
    run3 = requests(site) - before
    run_of = {n: run for run, rows_done in enumerate(done, 1) for n in rows_done}

    copied = 0
    for line in lines:
        n = line["row"]
        assert line["url"] == url_of[n]
        notes = [note for note in line["notes"] if note.startswith("duplicate_of_row_")]
        if notes:  # a copy of an earlier row with its URL, whose line was written in this run
            [note] = notes
            of = int(note.removeprefix("duplicate_of_row_"))
            assert of < n and url_of[of] == url_of[n] and run_of[of] == run_of[n] > 1, line
            copied += 1
        else:
            assert run_of[n] == 1 or n == min(
                m for m in url_of if url_of[m] == url_of[n] and run_of[m] == run_of[n]
            ), line
    assert copied > 0
    # Runs 2 and 3: one request per URL that had rows left (none twice in a run).
    for run, sent in ((2, run2), (3, run3)):
        for k, url in enumerate(urls):
            path = urlsplit(url)._replace(scheme="", netloc="").geturl()
            ended = any(run_of[n] == run for n in url_of if url_of[n] == url)
            assert sent[path] <= 1, (run, k)
            if ended:
                assert sent[path] == 1, (run, k)
    # After run 1, far fewer first requests than rows left.
    firsts = {urlsplit(url)._replace(scheme="", netloc="").geturl() for url in urls}
    sent_after = sum(n for path, n in (run2 + run3).items() if path in firsts)
    assert sent_after <= 2 * distinct < rows - len(done[0])

    # job status: the first answers (half redirected) and the final ones, each labelled
    meta = meta_of(jobdir)
    assert meta.counts.by_first_status["3xx"] == meta.counts.by_first_status["2xx"] == rows // 2
    text = scrapy_job("status", jobdir).stdout  # the command, as a user runs it
    assert "\n  first answers: 2xx 80, 3xx 80, 4xx 0, 5xx 0, other 0, error 0\n" in text
    assert "\n  final answers: 2xx 160, 3xx 0, 4xx 0, 5xx 0, other 0, error 0\n" in text


def requests(site: SiteServer) -> Counter[str]:
    seen: Counter[str] = Counter()
    for record in site.log():
        if parse_qs(urlsplit(record["path"]).query).get("t") == ["same-resume"]:
            seen[record["path"]] += 1
    return seen
