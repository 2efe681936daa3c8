"""At the end of a crawl: which hosts were given up on and which delays were learned, logged
once and written to ``hosts.json`` in the job directory (when there is one) for reports.

``hosts.json`` maps each host that was slowed, paused or given up on to ``{"delay": seconds,
"too_fast": 429s, "backoff_seconds": seconds, "unavailable": {...evidence...} | null, "pace":
{"bad": s, "good": s, "patience": n} | null}``. A resumed job updates the hosts it met again and
keeps the others; ``backoff_seconds`` adds up over the job's runs (the time its rows waited),
the other fields are the latest run's.

What a job learned, it keeps: when a run of the job opens, each host's delay, 429 count and pace
state are read back from ``hosts.json`` (:meth:`urlcheck.politeness.pace.HostPace.resume`), so the
run starts at the pace the last one ended with instead of taking a new 429 to learn it again;
``too_fast`` is then the job's count. A host given up on is tried again by a new run.

In a distributed job, the coordinator's report is the whole job's, read from Redis in one call:
every host any process slowed, paused or gave up on, with the 429s and back-off time of all of
them (a total, not added up again on a restart). A worker's shows what it met itself.

The log block also names the hosts whose rows a bot wall answered (``blocked``), with the count
of rows: this run's, in this process.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals

from urlcheck.check.result import Result
from urlcheck.check.urls import host_key
from urlcheck.crawl.runtime import runtime
from urlcheck.crawl.writefailure import write_failed
from urlcheck.jobs.errors import JobFileError
from urlcheck.jobs.nofollow import open_nofollow, replace_temp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.crawler import Crawler

    from urlcheck.cluster.frontier import JobHost
    from urlcheck.politeness.backoff import HostBackoff
    from urlcheck.politeness.circuit import Unavailable

logger = logging.getLogger(__name__)

HOSTS_FILE = "hosts.json"


class HostReport:
    def __init__(self, crawler: Crawler, backoff: HostBackoff) -> None:
        self.crawler = crawler
        self.backoff = backoff
        self.walls: Counter[str] = Counter()  # rows a bot wall answered, by host (this run)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = cls(crawler, runtime(crawler).backoff)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(extension.item_scraped, signal=signals.item_scraped)
        return extension

    def item_scraped(self, item: object) -> None:
        if isinstance(item, Result) and item.error == "blocked" and item.chain:
            self.walls[host_key(item.chain[-1]["url"])] += 1

    def spider_opened(self) -> None:
        """Start each host at the pace the job's last run ended with (one process: a distributed
        job's pace lives in its Redis)."""
        jobdir = self.crawler.settings.get("JOBDIR")
        pace = self.backoff.pace
        if not jobdir or not pace.enabled or runtime(self.crawler).cluster_role is not None:
            return
        carried = []
        for host, entry in read_hosts(Path(jobdir)).items():
            state = entry.get("pace")
            state = state if isinstance(state, dict) else {}
            delay, too_fast = _number(entry.get("delay")), entry.get("too_fast")
            if delay is None or not isinstance(too_fast, int) or too_fast < 0:
                continue
            pace.resume(
                host,
                delay,
                too_fast=too_fast,
                bad=_number(state.get("bad")),
                good=_number(state.get("good")),
                patience=state["patience"] if isinstance(state.get("patience"), int) else 0,
            )
            if host in pace.learned():
                carried.append(f"{host} {pace.delay(host):.2f} s")
        if carried:
            shown = ", ".join(carried[:10]) + (
                f" and {len(carried) - 10} more" if len(carried) > 10 else ""
            )
            logger.info("urlcheck: delays carried over from the job's last run: %s", shown)

    def hosts(self) -> tuple[dict[str, dict[str, Any]], bool]:
        """Every host that was slowed, paused or given up on this run; on the coordinator of a
        distributed job, the whole job's (from Redis), whichever process met the host. And
        whether they are the job's: their back-off times are then its totals so far."""
        floor = self.backoff.pace.floor  # the delay of a host that taught nothing
        job = self._job_hosts()
        if job is not None:
            return {
                host: _entry(
                    met.pace if met.pace is not None else floor,
                    met.too_fast,
                    met.backoff_seconds,
                    met.down,
                )
                for host, met in job.items()
            }, True
        backoff = self.backoff
        learned = backoff.pace.learned()
        paused = backoff.paused_seconds()
        down = {d.host: d for d in backoff.circuit.hosts()}
        return {
            host: _entry(
                backoff.pace.delay(host),
                learned[host].too_fast if host in learned else 0,
                paused.get(host, 0.0),
                down.get(host),
                learned[host].state() if host in learned else None,
            )
            for host in sorted(learned.keys() | paused.keys() | down.keys())
        }, False

    def _job_hosts(self) -> Mapping[str, JobHost] | None:
        job_hosts = runtime(self.crawler).job_hosts  # set on a distributed job's coordinator
        return job_hosts() if job_hosts is not None else None

    def spider_closed(self) -> None:
        hosts, totals = self.hosts()
        stats = self.crawler.stats
        assert stats is not None
        for host, entry in hosts.items():
            if entry["too_fast"]:
                stats.set_value(f"urlcheck/pace/delay/{host}", entry["delay"])
        walls = [f"{h} {n}" for h, n in sorted(self.walls.items(), key=lambda i: (-i[1], i[0]))]
        if not hosts and not walls:
            return
        lines = ["urlcheck hosts:"]
        if walls:
            more = f" and {len(walls) - 20} more" if len(walls) > 20 else ""
            shown = ", ".join(walls[:20]) + more
            lines.append(f"  bot walls (rows answered by a captcha or block page): {shown}")
        down = [h for h, e in hosts.items() if e["unavailable"]]
        if down:
            lines.append("  unavailable (rows recorded as host_unavailable): " + ", ".join(down))
        slowed = [
            f"{h} {e['delay']:.2f} s ({e['too_fast']} 429s)"
            for h, e in hosts.items()
            if e["too_fast"]
        ]
        if slowed:
            lines.append("  learned delays after 429s: " + ", ".join(slowed))
        paused = [
            f"{h} {e['backoff_seconds']:.1f} s" for h, e in hosts.items() if e["backoff_seconds"]
        ]
        if paused:
            lines.append("  time in back-off: " + ", ".join(paused))
        logger.info("\n".join(lines))
        jobdir = self.crawler.settings.get("JOBDIR")
        if jobdir and hosts:
            try:
                write_hosts(Path(jobdir), hosts, totals=totals)
            except OSError as exc:  # a full disk: one line, not a traceback
                write_failed(self.crawler, Path(jobdir) / HOSTS_FILE, exc)


def _entry(
    delay: float,
    too_fast: int,
    backoff_seconds: float,
    down: Unavailable | None,
    pace: dict[str, float | int | None] | None = None,
) -> dict[str, Any]:
    return {
        "delay": round(delay, 3),
        "too_fast": too_fast,
        "backoff_seconds": round(backoff_seconds, 3),
        "unavailable": None if down is None else down.as_dict(),
        "pace": pace,
    }


def _number(value: object) -> float | None:
    """A finite, non-negative number from a job file, else None (the file is not trusted)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def read_hosts(jobdir: Path) -> dict[str, dict[str, Any]]:
    """``jobdir/hosts.json``'s hosts; empty when it is missing or unreadable."""
    try:
        with open_nofollow(jobdir / HOSTS_FILE, "r", encoding="utf-8") as src:
            known = json.load(src).get("hosts", {})
    except (OSError, ValueError, AttributeError, JobFileError):
        return {}
    if not isinstance(known, dict):
        return {}
    return {str(h): e for h, e in known.items() if isinstance(e, dict)}


def write_hosts(jobdir: Path, hosts: dict[str, dict[str, Any]], *, totals: bool = False) -> None:
    """Merge ``hosts`` into ``jobdir/hosts.json``, atomically. ``totals``: their back-off times
    are the job's so far (a distributed job's, from Redis), not this run's to add up."""
    path = jobdir / HOSTS_FILE
    known = read_hosts(jobdir)
    for host, entry in hosts.items():
        before = known.get(host)
        earlier = before.get("backoff_seconds") if isinstance(before, dict) else None
        known[host] = entry
        if isinstance(earlier, int | float) and not totals:
            total = earlier + (entry.get("backoff_seconds") or 0.0)
            known[host] = {**entry, "backoff_seconds": round(total, 3)}
    tmp = replace_temp(path)
    with open_nofollow(tmp, "x", encoding="utf-8", like=path) as out:
        out.write(json.dumps({"hosts": known}, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
