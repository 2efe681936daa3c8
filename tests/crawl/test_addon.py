"""Distributed mode as a Scrapy add-on: on only with ``REDIS_URL``, and a one-process crawl loads
nothing of it (no ``urlcheck.cluster`` module, not redis-py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from urlcheck import settings as project_settings
from urlcheck.cluster.crawl.coordinator import ClusterCoordinator
from urlcheck.cluster.crawl.pipeline import ClusterResultsPipeline
from urlcheck.crawl.addon import CLUSTER_SCHEDULER, DistributedMode
from urlcheck.extensions.progress import Progress
from urlcheck.pipelines import ResultsPipeline
from urlcheck.spiders.check import CheckSpider

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from tests.sitefixture import SiteServer

REPO = Path(__file__).resolve().parents[2]


def crawler(**overrides: Any) -> Crawler:
    settings = {k: v for k, v in vars(project_settings).items() if k.isupper()}
    return get_crawler(CheckSpider, {**settings, **overrides})


def components(found: Crawler, name: str) -> list[object]:
    return [load_object(path) for path in build_component_list(found.settings.getwithbase(name))]


def test_the_addon_turns_distributed_mode_on_only_with_redis_url() -> None:
    for plain in (crawler(), crawler(REDIS_URL="  ")):
        assert [type(addon) for addon in plain.addons.addons] == [DistributedMode]
        assert plain.settings["SCHEDULER"] == "urlcheck.crawl.scheduling.MemoryScheduler"
        assert components(plain, "ITEM_PIPELINES") == [ResultsPipeline]
        assert ClusterCoordinator not in components(plain, "EXTENSIONS")
    distributed = crawler(REDIS_URL="redis://127.0.0.1:6379/0")
    assert distributed.settings["SCHEDULER"] == CLUSTER_SCHEDULER
    assert components(distributed, "ITEM_PIPELINES") == [ClusterResultsPipeline, ResultsPipeline]
    extensions = components(distributed, "EXTENSIONS")
    # At 120: after JobControl (100) and Progress (110).
    assert extensions.index(ClusterCoordinator) == extensions.index(Progress) + 1
    # The coordinator extension is off until a spider says this process is the job's coordinator.
    assert distributed.get_extension(ClusterCoordinator) is None


def test_scrapy_redis_host_port_and_db_name_the_job_redis_too() -> None:
    named = crawler(REDIS_HOST="127.0.0.5", REDIS_PORT=6390, REDIS_DB=3)
    assert named.settings["REDIS_URL"] == "redis://127.0.0.5:6390/3"
    assert named.settings["SCHEDULER"] == CLUSTER_SCHEDULER
    assert crawler(REDIS_HOST="::1").settings["REDIS_URL"] == "redis://[::1]:6379/0"
    # REDIS_URL wins, as in scrapy-redis (its REDIS_HOST is then ignored).
    both = crawler(REDIS_URL="redis://127.0.0.6:6379/1", REDIS_HOST="127.0.0.5")
    assert both.settings["REDIS_URL"] == "redis://127.0.0.6:6379/1"


def test_a_scheduler_of_your_own_stays_in_distributed_mode() -> None:
    own = "scrapy.core.scheduler.Scheduler"
    distributed = crawler(REDIS_URL="redis://127.0.0.1:6379/0", SCHEDULER=own)
    assert distributed.settings["SCHEDULER"] == own


# (`scrapy crawl check` itself also loads every Scrapy command of the project, commands.job too.)
@pytest.mark.crawl
def test_a_one_process_crawl_loads_no_module_of_distributed_mode(
    tmp_path: Path, site: SiteServer
) -> None:
    rows = [site.url("127.0.0.2", "/"), site.url("127.0.0.3", "/redirect/301?to=/")]
    csv = tmp_path / "urls.csv"
    csv.write_text("url\n" + "".join(f"{url}\n" for url in rows), encoding="utf-8")
    jobdir = tmp_path / "job"
    done = subprocess.run(
        [sys.executable, "-m", "tests.crawl.importset", str(csv), str(jobdir), "DOWNLOAD_DELAY=0"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report == {"finish_reason": "finished", "loaded": [], "unneeded": []}
    lines = (jobdir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["row"] for line in lines) == [1, 2]
