"""Debian's chromium, headless, through its chromedriver, as the browser tests drive it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
MISSING = (
    "Debian's chromium and chromium-driver are not installed (apt-get install chromium "
    "chromium-driver; .ci/run does)"
)


def chromium(profile: Path, *, downloads: Path | None = None) -> Iterator[Any]:
    """A driver (quit when the generator closes), its console log captured; ``downloads``:
    where files the page downloads go."""
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--window-size=1280,1600",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)  # no Selenium Manager
    driver = webdriver.Chrome(options=options, service=service)
    try:
        if downloads is not None:
            driver.execute_cdp_cmd(
                "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
            )
        yield driver
    finally:
        driver.quit()
