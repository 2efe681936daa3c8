"""The web face in a real browser: Debian's chromium, headless, through its chromedriver, against
the real server and real crawls of the demo site.

A user uploads a CSV through the file input, sees the counts move, pauses and sees no new rows,
resumes, opens a row's chain, filters, downloads the CSV and cancels; another gives a sitemap's
URL instead of a file. A job whose site sends
hostile Locations (``javascript:``, ``"><img onerror=...>``) renders with no dialog, no injected
element, no ``javascript:`` link and no CSP violation in the browser's log.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

from tests.chromium import CHROMEDRIVER, CHROMIUM, MISSING, chromium
from tests.serve.test_crawls import rows_csv

pytestmark = pytest.mark.crawl

pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip(MISSING, allow_module_level=True)

from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

HOSTILE_RAW = '"><img src=x onerror=alert(1)>'


@pytest.fixture
def browser(tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for driver in chromium(tmp_path / "profile", downloads=downloads):
        driver.downloads = downloads
        yield driver


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def text(driver, selector: str) -> str:
    return str(driver.find_element("css selector", selector).text)


def number(driver, selector: str) -> int:
    return int(text(driver, selector) or 0)


def shown_rows(driver) -> list[str]:
    """The row numbers the results table shows, read in one go (the table is redrawn live)."""
    return list(
        driver.execute_script(
            "return Array.from(document.querySelectorAll('tr.result'), r => r.dataset.row)"
        )
    )


def polls(driver) -> int:
    """The job page's status polls answered so far (the Resource Timing API's entries)."""
    return int(
        driver.execute_script(
            "return performance.getEntriesByType('resource').filter(e => {"
            "  const path = new URL(e.name).pathname;"
            "  return path.startsWith('/api/jobs/') && !path.slice(10).includes('/');"
            "}).length"
        )
    )


def wait_polls(driver, count: int, what: str) -> None:
    """Until the page has been answered ``count`` more polls."""
    start = polls(driver)
    wait_for(lambda: polls(driver) >= start + count, what)


def severe(driver) -> list[dict[str, Any]]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_a_user_checks_a_sitemaps_url_in_chromium(serve, site, browser):
    server = serve()
    browser.get(server.url + "/new")
    # Neither a file nor a URL: the server's words, in the form.
    browser.find_element("id", "upload-submit").click()
    wait_for(lambda: text(browser, "#upload-error"), "the form's error")
    assert "no input file in the form" in text(browser, "#upload-error")
    assert browser.current_url.endswith("/new")
    index = site.url("127.0.0.6", "/sitemap-index.xml?parts=2&n=2&t=browser-url")
    browser.find_element("id", "sitemap_url").send_keys(index)
    browser.find_element("id", "upload-submit").click()
    wait_for(lambda: "/jobs/" in browser.current_url, "the job page")
    wait_for(lambda: text(browser, "#state") == "done", "the job done", 90)
    assert text(browser, "#total") == "4" and text(browser, "#done") == "4"
    # A URL carrying markup is shown as the text it is, on the job page and in the jobs list.
    hostile = site.url("127.0.0.6", '/status/404?"><img/src=x/onerror=alert(1)>')
    browser.get(server.url + "/new")
    browser.find_element("id", "sitemap_url").send_keys(hostile)
    browser.find_element("id", "upload-submit").click()
    wait_for(lambda: "/jobs/" in browser.current_url, "the hostile URL's job page")
    wait_for(lambda: text(browser, "#state") == "failed", "the hostile URL's job failed", 90)
    assert text(browser, "#csv-name") == hostile
    browser.get(server.url + "/")
    wait_for(lambda: hostile in browser.find_element("tag name", "body").text, "the jobs list")
    assert browser.find_elements("css selector", "img") == []
    try:
        browser.switch_to.alert.accept()
        raise AssertionError("a dialog opened")
    except NoAlertPresentException:
        pass
    # (the refused form's 400 is logged as a failed load: nothing else went wrong)
    assert [e for e in severe(browser) if "/api/upload - " not in e["message"]] == []


def test_a_user_checks_a_csv_in_chromium(serve, site, tmp_path, browser):
    server = serve()
    rows = 140  # about 20 s of crawling on two hosts: it is still running when cancelled
    csv = rows_csv(site, "browser", rows, hosts=("127.0.0.7", "127.0.0.8"))
    csv += "".join(site.url("127.0.0.9", f"/status/404?r={n}") + "\n" for n in (141, 142))
    upload = tmp_path / "migration.csv"
    upload.write_text(csv, encoding="utf-8")

    browser.get(server.url + "/new")
    browser.find_element("id", "file").send_keys(str(upload))
    browser.find_element("id", "name").send_keys("Spring migration")
    Select(browser.find_element("id", "user_agent")).select_by_value("chrome")
    browser.find_element("id", "upload-submit").click()
    wait_for(lambda: "/jobs/" in browser.current_url, "the job page")
    job_id = browser.current_url.rsplit("/", 1)[1]
    assert text(browser, "#job-name") == "Spring migration"
    assert text(browser, "#total") == str(rows + 2)

    # The counts move while it runs: poll after poll, the page shows more rows done.
    wait_for(lambda: text(browser, "#state") == "processing", "processing")
    seen = [number(browser, "#done")]

    def more_done() -> int | None:
        now = number(browser, "#done")
        return now if now > seen[-1] else None

    for _ in range(3):
        seen.append(wait_for(more_done, "more rows done"))
    assert seen == sorted(set(seen)), seen  # strictly growing

    browser.find_element("id", "btn-pause").click()
    wait_for(lambda: text(browser, "#state") == "paused", "paused")
    # The requests in flight at the pause finish and are shown by the next poll.
    wait_polls(browser, 1, "a poll after the pause")
    wait_for(
        lambda: number(browser, "#done") == server.status(job_id)["done_rows"],
        "the rows in flight at the pause",
    )
    done, shown = number(browser, "#done"), shown_rows(browser)
    wait_polls(browser, 2, "a poll while paused")
    assert (number(browser, "#done"), shown_rows(browser)) == (done, shown)
    assert browser.find_element("id", "btn-pause").get_attribute("disabled") is not None
    browser.find_element("id", "btn-resume").click()
    wait_for(lambda: number(browser, "#done") > done, "rows after the resume")

    # A row's chain.
    first = browser.find_element("css selector", "tr.result")
    first.find_element("css selector", "button.chain-toggle").click()
    chain = browser.find_element("css selector", "tr.detail:not([hidden]) .chain-table")
    hops = chain.find_elements("css selector", ":scope > tbody > tr")
    assert len(hops) == 1 and "/ok?t=browser" in hops[0].text, [h.text for h in hops]

    # Filters: the two 404 rows, once the crawl has reached them.
    wait_for(lambda: server.status(job_id)["counts"]["status"].get("4xx") == 2, "the 404 rows", 90)
    Select(browser.find_element("id", "f-status")).select_by_value("4xx")
    browser.find_element("id", "f-apply").click()
    wait_for(lambda: shown_rows(browser) == ["141", "142"], "the filtered rows")
    browser.find_element("id", "f-reset").click()
    wait_for(lambda: len(shown_rows(browser)) > 2, "all rows again")

    # The CSV download, as the page links it.
    browser.find_element("id", "dl-csv").click()
    downloaded = wait_for(lambda: list(browser.downloads.glob("*.csv")), "the CSV download")
    lines = downloaded[0].read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("row,url,") and len(lines) >= done + 1

    assert text(browser, "#state") == "processing"
    browser.find_element("id", "btn-cancel").click()
    wait_for(lambda: text(browser, "#state") == "cancelled", "the cancelled state")
    assert server.status(job_id)["done_rows"] < rows + 2
    wait_for(
        lambda: browser.find_element("id", "btn-rerun").get_attribute("disabled") is None,
        "re-run enabled",
    )
    assert severe(browser) == []


def test_a_rerun_shows_the_new_runs_results_on_any_page(serve, site, browser):
    """The page's results start again with a re-run's, whichever page of the old ones it shows
    (on a page before the last, its polls read no rows, so the server cannot say reset)."""
    server = serve()
    rows = 56  # more than one page of 50
    job_id = server.upload(rows_csv(site, "browser-rerun", rows, hosts=("127.0.0.7", "127.0.0.8")))
    server.wait(job_id, lambda s: s["state"] == "done", "the first run", 120)
    browser.get(f"{server.url}/jobs/{job_id}")
    wait_for(lambda: len(shown_rows(browser)) == 50, "the first page")
    # The old run's rows are marked, so the new run's (with the same numbers) are told apart.
    browser.execute_script("document.querySelectorAll('tr.result').forEach(r => r.dataset.old = 1)")
    browser.find_element("id", "btn-rerun").click()
    wait_for(
        lambda: text(browser, "#state") == "done" and number(browser, "#done") == rows,
        "the re-run",
        120,
    )
    wait_for(
        lambda: not browser.find_elements("css selector", "tr.result[data-old]"),
        "the old run's rows to go",
        10,
    )
    first = wait_for(lambda: len(shown_rows(browser)) == 50 and shown_rows(browser), "page 1")
    assert browser.find_element("id", "prev").get_attribute("disabled") is not None
    browser.find_element("id", "next").click()
    second = wait_for(lambda: len(shown_rows(browser)) == rows - 50 and shown_rows(browser), "2")
    assert sorted(map(int, first + second)) == list(range(1, rows + 1))
    assert severe(browser) == []


def test_the_page_says_the_server_is_back_after_a_restart(serve, site, browser):
    """A job page open while the server restarts says the server did not answer, then, once
    it answers again (on its port, as a restart of the service has it), no longer."""
    server = serve()
    job_id = server.upload(rows_csv(site, "browser-restart", 4, hosts=("127.0.0.7",)))
    server.wait(job_id, lambda s: s["state"] == "done", "the job")
    browser.get(f"{server.url}/jobs/{job_id}")
    wait_for(lambda: text(browser, "#state") == "done", "the job page")
    port = int(server.url.rpartition(":")[2])
    server.stop()
    wait_for(lambda: "did not answer" in text(browser, "#message"), "the page to see it gone")
    serve(port=port)
    wait_for(lambda: text(browser, "#message") == "", "the page to see it back", 15)
    assert text(browser, "#state") == "done"
    # A button's answer is not taken for a poll's trouble: it stays.
    browser.find_element("id", "btn-rerun").click()
    wait_for(lambda: "runs again" in text(browser, "#message"), "the re-run's answer")
    wait_polls(browser, 2, "two polls")
    assert "runs again" in text(browser, "#message")


def test_a_page_loaded_full_leads_on_to_the_rows_that_come_later(serve, site, browser):
    """A page loaded holding exactly a page of rows (50) while the job runs on: Next opens the
    rows that come later (the polls of a full page read no rows, so nothing else would)."""
    server = serve()
    early = [site.url("127.0.0.7", f"/status/404?t=full&r={n}") for n in range(1, 51)]
    slow = [site.url("127.0.0.8", f"/delay/5?t=full&r={n}") for n in range(51, 56)]
    late = [site.url("127.0.0.8", f"/status/404?t=full&r={n}") for n in range(56, 59)]
    job_id = server.upload("url\n" + "".join(f"{url}\n" for url in early + slow + late))
    server.wait(job_id, lambda s: s["counts"]["status"].get("4xx") == 50, "the early 404s")
    browser.get(f"{server.url}/jobs/{job_id}")
    wait_for(lambda: shown_rows(browser), "the first page")
    Select(browser.find_element("id", "f-status")).select_by_value("4xx")
    browser.find_element("id", "f-apply").click()
    wait_for(lambda: len(shown_rows(browser)) == 50, "a full page of 404s")
    answer = server.client.get(f"/api/jobs/{job_id}/results", params={"status": "4xx"})
    assert len(answer.json()["results"]) == 50, "the late 404s came too soon to test this"
    wait_for(
        lambda: browser.find_element("id", "next").get_attribute("disabled") is None,
        "Next to lead on",
        60,
    )
    browser.find_element("id", "next").click()
    wait_for(lambda: sorted(shown_rows(browser)) == ["56", "57", "58"], "the late 404s", 60)
    assert severe(browser) == []


def test_the_jobs_list_follows_the_jobs_root(serve, site, tmp_path, browser):
    """The jobs list shows a job made while it is open, and none once its directory is gone."""
    server = serve()
    browser.get(server.url + "/")
    wait_for(lambda: "No jobs yet" in text(browser, "#jobs"), "the empty list")
    job_id = server.upload(rows_csv(site, "browser-list", 2, hosts=("127.0.0.7",)), name="gone")
    wait_for(lambda: "gone" in text(browser, "#jobs"), "the new job in the list")
    server.wait(job_id, lambda s: s["state"] == "done" and not s["running"], "the job's end")
    shutil.rmtree(tmp_path / "jobs" / job_id)
    wait_for(lambda: "No jobs yet" in text(browser, "#jobs"), "the list without it", 15)
    assert severe(browser) == []


def test_hostile_locations_are_inert(serve, site, browser):
    server = serve()
    host = "127.0.0.9"
    urls = [
        site.url(host, "/redirect/301?to=" + quote("javascript:alert(1)")),
        site.url(host, "/redirect/302?to=" + quote("javascript:alert(document.cookie)//")),
        site.url(host, "/raw-location/301?hex=" + HOSTILE_RAW.encode().hex()),
        site.url(host, "/redirect/301?to=" + quote(HOSTILE_RAW)),
        site.url(host, "/ok?q=" + quote("<script>alert(3)</script>")),
    ]
    # Three rows of one host land on one page whose URL carries the hostile text: many_to_one
    # lists it on the job page (the share rule).
    landing = site.url("127.0.0.7", "/ok?q=" + quote(HOSTILE_RAW))
    urls += [
        site.url("127.0.0.8", f"/redirect/301?n={n}&to=" + quote(landing, safe=""))
        for n in range(3)
    ]
    job_id = server.upload("url\n" + "".join(f'"{u}"\n' for u in urls), filename="<b>x</b>.csv")
    server.wait(job_id, lambda s: s["state"] == "done", "the hostile job")

    browser.get(f"{server.url}/jobs/{job_id}")
    browser.execute_script("console.error('capture-probe')")  # the capture itself works
    wait_for(lambda: len(shown_rows(browser)) == len(urls), "rows")
    for toggle in browser.find_elements("css selector", "button.chain-toggle"):
        toggle.click()
    wait_for(
        lambda: len(browser.find_elements("css selector", "tr.detail:not([hidden])")) == len(urls),
        "every chain open",
    )
    page = browser.find_element("id", "results").text
    assert "javascript:alert(1)" in page and HOSTILE_RAW in page  # shown, as text
    landed = wait_for(
        lambda: "(3 rows)" in (found := text(browser, "#many-to-one")) and found, "many_to_one"
    )
    assert landed.startswith(site.url("127.0.0.7", "/ok?q=")) and landed.endswith("(3 rows)")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    assert (
        browser.execute_script("return document.querySelectorAll('img, iframe, object').length")
        == 0
    )
    assert browser.execute_script("return document.querySelectorAll('script').length") == 1
    links = [a.get_attribute("href") for a in browser.find_elements("css selector", "a[href]")]
    assert not [h for h in links if not h.startswith(("http://", "https://"))], links
    wait_polls(browser, 1, "a poll more")
    logs = browser.get_log("browser")
    assert any("capture-probe" in e["message"] for e in logs)
    problems = [e for e in logs if e["level"] == "SEVERE" and "capture-probe" not in e["message"]]
    assert problems == []
    assert not [e for e in logs if "Content Security Policy" in e["message"]]
