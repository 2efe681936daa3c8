"""The HTML report in a real browser: Debian's chromium, headless, through its chromedriver.

A real crawl of the test site, then its report: the page loads with no console error and no
request at all, the figures in the DOM are the ones the results give, and the failing-rows
filter works.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.chromium import CHROMEDRIVER, CHROMIUM, MISSING, chromium
from tests.conftest import FAST, crawl, write_csv
from urlcheck.check.result import status_class
from urlcheck.reports.build import write_report

pytestmark = pytest.mark.crawl

pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip(MISSING, allow_module_level=True)


@pytest.fixture
def browser(tmp_path):
    yield from chromium(tmp_path / "profile")


def _bars(driver, chart: str) -> dict[str, int]:
    bars = driver.find_elements("css selector", f"#{chart} g.bar")
    return {b.get_attribute("data-label"): int(b.get_attribute("data-value")) for b in bars}


def _text(driver, selector: str) -> str:
    return driver.find_element("css selector", selector).text


@deferred_f_from_coro_f
async def test_the_report_in_chromium(site, tmp_path, browser):
    u = site.url
    rows = [
        "url,expected",
        f"{u('127.0.0.8', '/chain/2')},{u('127.0.0.8', '/chain/0')}",
        f"{u('127.0.0.8', '/redirect/302?to=/ok')},{u('127.0.0.8', '/ok')}",
        f"{u('127.0.0.8', '/status/404')},{u('127.0.0.8', '/ok')}",
        f"{u('127.0.0.8', '/loop/a')},",
        f"{u('127.0.0.8', '/ok')},",
        f"{u('127.0.0.9', '/status/500')},",
        f"{u('127.0.0.9', '/redirect/301')},",
        f"{u('127.0.0.9', '/redirect/301?to=http://127.0.0.8:{site.port}/ok')},",
        "mailto:someone@example.com,",
        f"{u('127.0.0.9', '/ok?q=<script>alert(1)</script>')},",
    ]
    csv = write_csv(tmp_path / "in.csv", "\n".join(rows) + "\n")
    results, _ = await crawl(csv, tmp_path / "job" / "results.jsonl", **FAST)
    assert len(results) == 10
    page = tmp_path / "report.html"
    write_report(tmp_path / "job", page, "html")

    browser.get(page.as_uri())
    browser.execute_script("console.error('capture-probe')")  # the capture itself must work
    logs = browser.get_log("browser")
    assert any("capture-probe" in entry["message"] for entry in logs)
    errors = [e for e in logs if e["level"] == "SEVERE" and "capture-probe" not in e["message"]]
    assert errors == []
    # Nothing was fetched: the page is the only resource, and the hostile URL did not run.
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert browser.execute_script("return document.querySelectorAll('script').length") == 1

    first = Counter(status_class(r["status"]) for r in results)
    final = Counter(status_class(r["final_status"]) for r in results)
    verdicts = Counter(r["verdict"] or "none" for r in results)
    errors_by_kind = Counter(r["error"] for r in results if r["error"])
    hops = Counter(str(r["hops"]) for r in results)
    assert _text(browser, "#total-rows") == "10"
    assert _text(browser, "#total-fail") == str(verdicts["fail"])
    assert _text(browser, "#total-redirected") == str(sum(1 for r in results if r["hops"]))
    assert {k: v for k, v in _bars(browser, "chart-first-status").items() if v} == dict(first)
    assert {k: v for k, v in _bars(browser, "chart-final-status").items() if v} == dict(final)
    assert {k: v for k, v in _bars(browser, "chart-verdicts").items() if v} == dict(verdicts)
    assert _bars(browser, "chart-errors") == dict(errors_by_kind)
    assert {k: v for k, v in _bars(browser, "chart-chain").items() if v} == dict(hops)
    widths = [
        float(r.get_attribute("width"))
        for r in browser.find_elements("css selector", "#chart-first-status rect")
    ]
    assert max(widths) == 250.0  # the longest bar spans the chart

    hosts = {
        row.get_attribute("data-host"): row.find_elements("tag name", "td")[1].text
        for row in browser.find_elements("css selector", "#hosts-table tbody tr")
    }
    assert hosts == {
        host: str(sum(1 for r in results if r["url"].startswith(f"http://{host}:")))
        for host in ("127.0.0.8", "127.0.0.9")
    }

    failing = {r["row"] for r in results if r["verdict"] == "fail" or r["error"] or r["loop"]}
    table_rows = browser.find_elements("css selector", "#failing-table tbody tr")
    assert {int(row.find_element("tag name", "td").text) for row in table_rows} == failing
    visible = lambda: sum(1 for row in table_rows if row.is_displayed())  # noqa: E731
    assert visible() == len(failing)
    browser.find_element("id", "filter-text").send_keys("/status/404")
    assert visible() == 1 and _text(browser, "#filter-count") == "1 shown"
    browser.find_element("id", "filter-text").clear()
    browser.execute_script(
        "var s = document.getElementById('filter-category'); s.value = 'loop';"
        "s.dispatchEvent(new Event('change'));"
    )
    assert visible() == 1
    shown = next(row for row in table_rows if row.is_displayed())
    assert shown.get_attribute("data-category") == "loop"
    # Sorting by the row column, descending on the second click.
    header = browser.find_element("css selector", "#failing-table thead th")
    header.click()
    header.click()
    browser.execute_script(
        "var s = document.getElementById('filter-category'); s.value = '';"
        "s.dispatchEvent(new Event('change'));"
    )
    order = [
        int(row.find_element("tag name", "td").text)
        for row in browser.find_elements("css selector", "#failing-table tbody tr")
    ]
    assert order == sorted(failing, reverse=True)
    assert Path(page).stat().st_size < 100_000


@deferred_f_from_coro_f
async def test_the_proxy_section_in_chromium(tmp_path, browser):
    """A crawl through two real proxies, one of which the site answers with a captcha: the
    report's proxy table and heatmap come from the proxies.json the crawl wrote."""
    import json

    from tests.sitefixture import ProxyServer, SiteServer, running_proxies

    good, blocked = "127.0.0.33", "127.0.0.32"
    with (
        SiteServer(("127.0.0.3", "127.0.0.4"), log_path=tmp_path / "site.jsonl") as site,
        running_proxies([ProxyServer(listen=h) for h in (blocked, good)]) as proxies,
    ):
        rows = [site.url("127.0.0.3", f"/by-client?blocked={blocked}&i={i}") for i in range(6)]
        rows += [site.url("127.0.0.4", f"/ok?i={i}") for i in range(4)]
        csv = write_csv(tmp_path / "in.csv", "url\n" + "\n".join(rows) + "\n")
        results, _ = await crawl(
            csv,
            tmp_path / "job" / "results.jsonl",
            **FAST,
            URLCHECK_PROXIES=[p.url for p in proxies],
            URLCHECK_PROXY_STICKY="none",
            URLCHECK_PROXY_STRATEGY="round-robin",
        )
        names = {p.listen: p.address for p in proxies}
    assert len(results) == 10
    snapshot = json.loads((tmp_path / "job" / "proxies.json").read_text())
    page = tmp_path / "report.html"
    write_report(tmp_path / "job", page, "html")
    browser.get(page.as_uri())
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []

    table = {
        row.get_attribute("data-proxy"): [td.text for td in row.find_elements("tag name", "td")]
        for row in browser.find_elements("css selector", "#proxies-table tbody tr")
    }
    assert set(table) == set(names.values())
    by_id = {p["display"]: p for p in snapshot["proxies"]}
    for display, cells in table.items():
        assert cells[1] == by_id[display]["state"]
        assert cells[3] == str(sum(1 for r in results if r["proxy"] == display))
    heat = browser.find_element("id", "heatmap-success")
    sites = [th.text for th in heat.find_elements("css selector", "tbody th")]
    assert "127.0.0.3" in sites and set(sites) <= set(snapshot["matrix"])
    columns = [th.text for th in heat.find_elements("css selector", "thead th")][1:]
    row = heat.find_elements("css selector", "tbody tr")[sites.index("127.0.0.3")]
    values = dict(zip(columns, row.find_elements("tag name", "td"), strict=True))
    ids = {p["display"]: p["id"] for p in snapshot["proxies"]}
    for display, cell in values.items():
        expected = snapshot["matrix"]["127.0.0.3"].get(ids[display])
        if expected is None:
            assert cell.get_attribute("data-value") == ""
        else:
            assert float(cell.get_attribute("data-value")) == round(expected["success_rate"], 3)
    assert float(values[names[good]].get_attribute("data-value")) > float(
        values[names[blocked]].get_attribute("data-value") or 0
    )
    # The captcha view: the blocked proxy met captchas on that site.
    browser.find_element("css selector", "input[name=heat][value=captcha]").click()
    captcha = browser.find_element("id", "heatmap-captcha")
    assert captcha.is_displayed() and not heat.is_displayed()
