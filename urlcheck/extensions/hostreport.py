"""At the end of a crawl: which hosts were given up on and which delays were learned, logged
once and written to ``hosts.json`` in the job directory (when there is one) for reports.

``hosts.json`` maps each host that was slowed, paused or given up on to ``{"delay": seconds,
"too_fast": 429s, "backoff_seconds": seconds, "unavailable": {...evidence...} | null}``. A
resumed job updates the hosts it met again and keeps the others; ``backoff_seconds`` adds up
over the job's runs (the time its rows waited), the other fields are the latest run's.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals

from urlcheck.runtime import runtime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from urlcheck.backoff import HostBackoff

logger = logging.getLogger(__name__)

HOSTS_FILE = "hosts.json"


class HostReport:
    def __init__(self, crawler: Crawler, backoff: HostBackoff) -> None:
        self.crawler = crawler
        self.backoff = backoff

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = cls(crawler, runtime(crawler).backoff)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def hosts(self) -> dict[str, dict[str, Any]]:
        """Every host that was slowed, paused or given up on this run."""
        backoff = self.backoff
        found: dict[str, dict[str, Any]] = {}

        def entry(host: str) -> dict[str, Any]:
            known = found.get(host)
            if known is None:
                known = found[host] = {
                    "delay": round(backoff.pace.delay(host), 3),
                    "too_fast": 0,
                    "backoff_seconds": 0.0,
                    "unavailable": None,
                }
            return known

        for host, learned in backoff.pace.learned().items():
            entry(host)["too_fast"] = learned.too_fast
        for host, seconds in backoff.paused_seconds().items():
            entry(host)["backoff_seconds"] = round(seconds, 3)
        for down in backoff.circuit.hosts():
            entry(down.host)["unavailable"] = down.as_dict()
        return dict(sorted(found.items()))

    def spider_closed(self) -> None:
        hosts = self.hosts()
        stats = self.crawler.stats
        assert stats is not None
        for host, entry in hosts.items():
            if entry["too_fast"]:
                stats.set_value(f"urlcheck/pace/delay/{host}", entry["delay"])
        if not hosts:
            return
        lines = ["urlcheck hosts:"]
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
        if jobdir:
            write_hosts(Path(jobdir), hosts)


def write_hosts(jobdir: Path, hosts: dict[str, dict[str, Any]]) -> None:
    """Merge ``hosts`` into ``jobdir/hosts.json``, atomically."""
    path = jobdir / HOSTS_FILE
    try:
        known = json.loads(path.read_text(encoding="utf-8")).get("hosts", {})
    except (OSError, ValueError, AttributeError):
        known = {}
    for host, entry in hosts.items():
        before = known.get(host)
        earlier = before.get("backoff_seconds") if isinstance(before, dict) else None
        known[host] = entry
        if isinstance(earlier, int | float):
            total = earlier + (entry.get("backoff_seconds") or 0.0)
            known[host] = {**entry, "backoff_seconds": round(total, 3)}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"hosts": known}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
