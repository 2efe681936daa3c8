"""The only module that touches Scrapy internals: undocumented attributes of the engine, the
downloader and its slots that urlcheck's politeness needs and Scrapy has no API for.

- ``engine._slot.nextcall``: the engine re-polls the scheduler only when a download ends, a
  request is scheduled, or on its 5 s heartbeat; a host whose 0.3 s delay has passed must wake
  it sooner, and so must a job resumed from pause.
- ``downloader.active``: every request handed to the downloader, including those waiting in a
  slot for their delay; counted per host to keep one request in flight per host.
- ``downloader.slots[key].lastseen / .delay / .concurrency`` and ``domain_concurrency``: when a
  host last dispatched, its delay (AutoThrottle may raise it) and its concurrency.
- ``DownloaderAwarePriorityQueue._downloader_interface``: how the queue reaches the downloader.
- ``engine.scraper.slot.is_idle()``: whether responses or items are still being processed; with
  the downloader and scheduler empty, a row still open was dropped by some component.
- ``engine.scraper.start_itemproc_async``: a cancel writes the lines of rows it cut short
  through the item pipelines, outside any callback.

pyproject pins ``scrapy<2.20`` because of them; :func:`check` (run when the queue is built,
and by tests/crawl/test_internals.py) names what changed if an upgrade moves one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Downloader
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.pqueues import DownloaderAwarePriorityQueue


class ScrapyInternalsChangedError(RuntimeError):
    """This Scrapy no longer has an internal attribute urlcheck relies on."""


class SlotTimes(NamedTuple):
    lastseen: float  # time.monotonic() of the slot's last dispatch
    delay: float
    concurrency: int


def queue_downloader(queue: DownloaderAwarePriorityQueue) -> Downloader:
    return queue._downloader_interface.downloader


def requests_in_downloader(downloader: Downloader) -> Iterable[Request]:
    return downloader.active


def slot_key(downloader: Downloader, request: Request) -> str:
    return downloader.get_slot_key(request)


def slot_times(downloader: Downloader, key: str) -> SlotTimes | None:
    slot = downloader.slots.get(key)
    if slot is None:
        return None
    return SlotTimes(slot.lastseen, slot.delay, slot.concurrency)


def raise_slot_delay(downloader: Downloader, key: str, delay: float) -> None:
    """At least `delay` between the slot's requests from now on, as AutoThrottle sets it."""
    slot = downloader.slots.get(key)
    if slot is not None and slot.delay < delay:
        slot.delay = delay


def default_concurrency(downloader: Downloader) -> int:
    return downloader.domain_concurrency


def active_hosts(downloader: Downloader) -> int:
    """Hosts with a request in the downloader now."""
    return sum(1 for slot in downloader.slots.values() if slot.active)


def nothing_in_flight(engine: ExecutionEngine) -> bool:
    """No request in the downloader or the scheduler and no response or item being processed
    (``engine.spider_is_idle()`` says False while ``start()`` runs, which is when the check
    spider asks)."""
    if engine.paused or engine.downloader.active:
        return False
    scheduler = engine.scheduler
    if scheduler is None or scheduler.has_pending_requests():
        return False
    slot = engine.scraper.slot
    return slot is None or slot.is_idle()


async def process_item(crawler: Crawler, item: object) -> None:
    """Send ``item`` through the item pipelines (and item_scraped) as a callback's item goes."""
    await crawler.engine.scraper.start_itemproc_async(item, response=None)


def wake_engine(engine: ExecutionEngine | None) -> None:
    """Have the engine poll its scheduler on the next loop turn."""
    slot = getattr(engine, "_slot", None)
    if slot is not None:
        slot.nextcall.schedule()


_EXPECTED = (
    ("ExecutionEngine", "_slot"),
    ("DownloaderAwarePriorityQueue", "_downloader_interface"),
    ("Downloader", "active"),
    ("ExecutionEngine", "scraper"),
    ("Downloader", "slots"),
    ("Downloader", "domain_concurrency"),
    ("Slot", "lastseen"),
    ("Slot", "delay"),
    ("Slot", "concurrency"),
    ("Slot", "active"),
    ("Scraper", "slot"),
)


def check(
    engine: ExecutionEngine,
    queue: DownloaderAwarePriorityQueue | None = None,
) -> None:
    """Raise ScrapyInternalsChangedError naming every internal attribute this Scrapy lacks."""
    from scrapy import __version__
    from scrapy.core.downloader import Slot

    downloader = engine.downloader
    probe_slot = Slot(concurrency=1, delay=0.0, jitter=0.0)
    objects: dict[str, object] = {
        "ExecutionEngine": engine,
        "Downloader": downloader,
        "Slot": probe_slot,
        "Scraper": engine.scraper,
    }
    if queue is not None:
        objects["DownloaderAwarePriorityQueue"] = queue
    missing = [
        f"{owner}.{attr}"
        for owner, attr in _EXPECTED
        if owner in objects and not hasattr(objects[owner], attr)
    ]
    if missing:
        raise ScrapyInternalsChangedError(
            f"Scrapy {__version__} lacks {', '.join(missing)}, which urlcheck's politeness "
            "uses (urlcheck/crawl/internals.py); urlcheck supports Scrapy 2.19"
        )
