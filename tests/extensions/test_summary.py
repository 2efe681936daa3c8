"""The end-of-crawl summary and its stats, from a real crawl: a row's warnings are counted once
per row (``urlcheck/warning/<name>``) and shown in the summary block; ``many_to_one`` is the
job's judgement in a job's crawl (no tally of the Summary's own), else the crawl's own."""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FAST, crawl, write_csv
from tests.spiders.test_audit import catch_all_csv
from urlcheck.crawl.runtime import runtime
from urlcheck.extensions.summary import Summary
from urlcheck.jobs.files import JobMeta
from urlcheck.jobs.landings import ManyToOneSeen
from urlcheck.settings import EXTENSIONS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

pytestmark = pytest.mark.crawl

FROM, TO = "127.0.0.2", "127.0.0.3"


@deferred_f_from_coro_f
async def test_warnings_are_counted_per_row_and_summed_up(site, tmp_path, caplog):
    u = site.url
    twice = quote(f"/location/backslash?host={FROM}&id=summary", safe="")
    rows = [
        (u(FROM, "/location/backslash?host=127.0.0.3&id=summary1"), ""),
        (u(FROM, "/location/backslash?host=127.0.0.3&id=summary2"), ""),
        # Two hops with the same warning: one row that met it.
        (u(FROM, f"/location/backslash?host={TO}&path={twice}"), ""),
        (u(FROM, f"/location/ipv4-hex?host={TO}&id=summary"), ""),
        (u(FROM, "/redirect/302?to=/ok%3Fid%3Dsummary"), u(FROM, "/ok?id=summary")),
        (u(TO, "/ok?id=summary-plain"), ""),
    ]
    csv = write_csv(tmp_path / "in.csv", "url,expected\n" + "".join(f"{a},{b}\n" for a, b in rows))
    with caplog.at_level(logging.INFO, logger="urlcheck.extensions.summary"):
        results, crawler = await crawl(
            csv,
            tmp_path / "out.jsonl",
            **FAST,
            URLCHECK_TEMPORARY_REDIRECT="warn",
            # rows 1-3 land on one URL: counted over all rows (tests/spiders/test_audit.py)
            URLCHECK_CHECK_MANY_TO_ONE="off",
        )
    by_row = {r["row"]: r for r in results}
    assert len(by_row) == 6 and all(r["error"] is None for r in results)
    assert [len(h.get("warnings", ())) for h in by_row[3]["chain"]] == [1, 1, 0]
    assert by_row[5]["verdict"] == "pass" and by_row[5]["warnings"] == ["temporary_redirect"]
    assert by_row[6]["warnings"] == []

    stats = crawler.stats.get_stats()
    warned = {
        k.rpartition("/")[2]: v for k, v in stats.items() if k.startswith("urlcheck/warning/")
    }
    assert warned == Counter(w for r in results for w in r["warnings"])
    # Row 3 goes 127.0.0.2 -> 127.0.0.3 -> 127.0.0.2 -> 127.0.0.3: a chain, and a round trip.
    assert warned == {
        "location_backslash": 3,
        "location_ipv4_numeric": 1,
        "temporary_redirect": 1,
        "redirect_chain": 1,
        "host_round_trip": 1,
    }
    [block] = [r.message for r in caplog.records if r.message.startswith("urlcheck summary")]
    assert (
        "  warnings (rows): host_round_trip 1, location_backslash 3, location_ipv4_numeric 1, "
        "redirect_chain 1, temporary_redirect 1" in block.splitlines()
    )


def summary_of(crawler: Crawler) -> Summary:
    [found] = [e for e in crawler.extensions.middlewares if isinstance(e, Summary)]
    return found


# A job's crawl shows the job's judgement; without a job, or without results.jsonl to judge,
# the Summary tallies its own rows. Built before JobControl, the Summary finds the job's all
# the same, and its spider_closed, run first, makes the closing judgement.
JOB, NO_JOB, NO_RESULTS, SUMMARY_FIRST = "job", "no job", "job without results", "summary first"


@pytest.mark.parametrize("mode", [JOB, NO_JOB, NO_RESULTS, SUMMARY_FIRST])
@deferred_f_from_coro_f
async def test_many_to_one_is_tallied_once_and_over_the_job(site, tmp_path, caplog, mode):
    catch_all, csv = catch_all_csv(site, tmp_path, "&summary")
    job = tmp_path / "job"
    settings: dict[str, object] = {} if mode == NO_JOB else {"JOBDIR": str(job)}
    if mode == NO_RESULTS:
        settings["URLCHECK_RESULTS_ENABLED"] = False
    if mode == SUMMARY_FIRST:
        settings["EXTENSIONS"] = {**EXTENSIONS, "urlcheck.extensions.summary.Summary": 50}
    with caplog.at_level(logging.INFO):
        _, crawler = await crawl(csv, job / "results.jsonl", **FAST, **settings)
    stats = crawler.stats.get_stats()
    assert stats["urlcheck/rows"] == 6
    assert stats["urlcheck/warning/many_to_one"] == 4
    assert stats["urlcheck/many_to_one/urls"] == 1
    messages = [r.message for r in caplog.records]
    [block] = [m for m in messages if m.startswith("urlcheck summary")]
    assert f"  many rows, one landing URL (many_to_one): {catch_all} (4 rows)" in block.splitlines()

    summary = summary_of(crawler)
    if mode in (NO_JOB, NO_RESULTS):
        assert runtime(crawler).job_landings is None
        assert summary.landings is not None
        return
    assert summary.landings is None  # one tally, JobControl's
    meta = JobMeta.load(job)
    assert meta is not None
    assert meta.many_to_one == ManyToOneSeen([(catch_all, 4)], 1, 4, 6)
    # Both orders of the two spider_closed handlers were met: the judgement made by either.
    [closed] = [i for i, m in enumerate(messages) if m.startswith(f"Job {job} done")]
    assert (messages.index(block) < closed) is (mode == SUMMARY_FIRST)


@pytest.mark.parametrize("mode", [JOB, NO_JOB])
@deferred_f_from_coro_f
async def test_many_to_one_off_is_counted_nowhere(site, tmp_path, mode):
    catch_all = site.url("127.0.0.4", "/ok?catch-all&off")
    rows = [
        site.url("127.0.0.4", f"/redirect/301?to={quote(catch_all, safe='')}&n={n}&off")
        for n in range(12)
    ]
    csv = write_csv(tmp_path / "in.csv", "url\n" + "".join(f"{url}\n" for url in rows))
    job = tmp_path / "job"
    settings = {} if mode == NO_JOB else {"JOBDIR": str(job)}
    _, crawler = await crawl(
        csv, job / "results.jsonl", **FAST, **settings, URLCHECK_CHECK_MANY_TO_ONE="off"
    )
    stats = crawler.stats.get_stats()
    assert stats["urlcheck/redirected"] == 12
    assert "urlcheck/warning/many_to_one" not in stats
    assert "urlcheck/many_to_one/urls" not in stats
    assert runtime(crawler).job_landings is None
    assert summary_of(crawler).landings is None
