"""``scrapy job status`` shows many_to_one over the whole job, a resumed one included: the crawl
judges it over results.jsonl from its start and keeps it in meta.json (docs/jobs.md); the
crawl's summary shows that judgement."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from tests.jobs.crawls import HOSTS, Crawl, row_url, write_rows
from tests.processes import scrapy_job
from urlcheck.jobs.exitcodes import ExitCode
from urlcheck.jobs.files import JobMeta, JobState

if TYPE_CHECKING:
    from pathlib import Path

    from tests.sitefixture import SiteServer

pytestmark = pytest.mark.crawl


def test_status_shows_many_to_one_over_every_run_of_the_job(
    tmp_path: Path, site: SiteServer
) -> None:
    landing = site.url(HOSTS[0], "/ok?landing=all")
    # Rows 1-14 (over the 5 hosts) all redirected to one page, more than the 10 the check
    # allows; rows 15-16 answer where they are.
    urls = [
        row_url(site, "m2o", row, f"/redirect/301?to={quote(landing, safe='')}")
        if row <= 14
        else row_url(site, "m2o", row, "/ok")
        for row in range(1, 17)
    ]
    csv = write_rows(tmp_path / "in.csv", urls)
    jobdir = tmp_path / "job"
    # The first run stops early: its rows alone flag nothing. Only the rows rule (more than 10)
    # is tried: which 6 rows end first is the hosts' race, and 3 of one host's would be all of
    # that host's redirected rows so far, which the share rule flags (it did under load).
    only_rows = "URLCHECK_MANY_TO_ONE_SHARE=100"
    first = Crawl(csv, jobdir, "CLOSESPIDER_ITEMCOUNT=6", only_rows)
    assert first.wait() == ExitCode.PAUSED, first.stderr()[-3000:]
    meta = JobMeta.load(jobdir)
    assert meta is not None and meta.state is JobState.PAUSED, meta
    assert meta.many_to_one is not None
    assert (meta.many_to_one.landings, meta.many_to_one.read_rows) == (0, meta.done_rows)
    assert meta.done_rows < 14
    text = scrapy_job("status", jobdir)
    assert "  many_to_one:   none" in text.stdout.splitlines(), text.stdout + text.stderr

    second = Crawl(csv, jobdir, only_rows, name="resume")
    assert second.wait() == ExitCode.FINISHED, second.stderr()[-3000:]
    meta = JobMeta.load(jobdir)
    assert meta is not None and meta.state is JobState.DONE and meta.done_rows == 16
    # The resumed run's summary counts many_to_one over the whole job, as the status does.
    log = second.stderr().splitlines()
    assert f"  many rows, one landing URL (many_to_one): {landing} (14 rows)" in log, log[-40:]
    assert "  warnings (rows): many_to_one 14" in log, log[-40:]
    text = scrapy_job("status", jobdir)
    assert text.returncode == 0, text.stderr
    assert f"  many_to_one:   14 rows on 1 landing URL(s): {landing} (14 rows)" in (
        text.stdout.splitlines()
    ), text.stdout
    data = json.loads(scrapy_job("status", jobdir, "--json").stdout)
    assert data["many_to_one"] == {
        "urls": [{"url": landing, "rows": 14}],
        "landings": 1,
        "rows": 14,
        "read_rows": 16,
    }


def test_status_leaves_many_to_one_out_when_the_check_is_off(
    tmp_path: Path, site: SiteServer
) -> None:
    landing = site.url(HOSTS[0], "/ok?landing=all")
    urls = [
        row_url(site, "off", row, f"/redirect/301?to={quote(landing, safe='')}")
        for row in range(1, 13)
    ]
    jobdir = tmp_path / "job"
    crawl = Crawl(write_rows(tmp_path / "in.csv", urls), jobdir, "URLCHECK_CHECK_MANY_TO_ONE=off")
    assert crawl.wait() == ExitCode.FINISHED, crawl.stderr()[-3000:]
    text = scrapy_job("status", jobdir).stdout
    assert "  many_to_one:" not in text, text
    assert json.loads(scrapy_job("status", jobdir, "--json").stdout)["many_to_one"] is None
