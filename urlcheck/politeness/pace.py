"""Learned per-host pace: a host that answers 429 to our pace gets a longer delay for the rest of
the run, so it stops paying a back-off pause row after row.

A 429 still pauses the host and retries the row (:mod:`urlcheck.politeness.backoff`); it also
doubles that host's delay between requests (at least to the default 0.3 s, at most ``maximum``), or
raises it to a ``Retry-After`` short enough to be a pace rather than an outage. After ``ease_after``
clean answers in a row the delay eases back toward the floor, but only halfway to the largest delay
that drew a 429: the host's limit lies between that delay and the current one, and each wrong
guess costs a 429 and a back-off pause. Once the two are within 20 % the delay stays put, until
ten more such runs of clean answers make it forget the 429 and try lower again.

In distributed mode the same rule runs in the job's Redis, on every process's answers from the
host (``pace_step`` in ``urlcheck/cluster/lua/_prelude.lua``), with this module's numbers sent
along (``urlcheck.cluster.frontier.PaceRule``): :attr:`HostPace.listener` hands each answer to
the process's completion, which applies it there.

What a run learned, the next run of the job starts from: the host report writes each host's
delay and state to the job's ``hosts.json`` at the end, and :meth:`HostPace.resume` sets them
again before the first request (:mod:`urlcheck.extensions.hostreport`).

Measured (bench/politeness.py, a host that 429s arrivals closer than 1 s): the delay goes
0.3 -> 0.6 -> 1.2 s, probes 0.9 s once, and settles at 1.05 s: three 429s for 100 rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Doubling from a zero delay (DOWNLOAD_DELAY=0) would never slow anything: start from Scrapy's
# project default instead.
MIN_STEP = 0.3
CONVERGED = 0.2  # stop probing when the known-bad and known-good delays are this close
FORGET_AFTER = 10  # converged runs of clean answers before a 429 is forgotten

TOO_FAST = "fast"
ANSWERED = "ok"
# (host, TOO_FAST or ANSWERED, Retry-After seconds or None): what the rule was told, as told.
PaceListener = Callable[[str, str, float | None], None]


@dataclass(slots=True)
class HostDelay:
    delay: float
    too_fast: int = 0  # 429s received (the job's, with what earlier runs carried over)
    bad: float | None = None  # the largest delay that drew a 429
    good: float | None = None  # the last delay with a full run of clean answers
    clean: int = 0
    patience: int = 0

    def state(self) -> dict[str, float | int | None]:
        """What a later run needs besides the delay to go on from here (hosts.json's
        ``pace``): the run of clean answers in progress is not kept."""
        return {"bad": self.bad, "good": self.good, "patience": self.patience}


class HostPace:
    def __init__(
        self,
        floor: float = 0.3,
        maximum: float = 10.0,
        ease_after: int = 20,
        *,
        enabled: bool = True,
    ) -> None:
        self.floor = floor
        self.maximum = max(maximum, floor)
        self.ease_after = ease_after
        self.enabled = enabled
        self._hosts: dict[str, HostDelay] = {}
        self._asked: dict[str, float] = {}  # host -> the Crawl-delay of its robots.txt
        self.listener: PaceListener | None = None

    def delay(self, host: str) -> float:
        known = self._hosts.get(host)
        learned = self.floor if known is None else known.delay
        return max(learned, self._asked.get(host, 0.0))

    def ask(self, host: str, seconds: float) -> float:
        """``host`` asks for ``seconds`` between requests (robots.txt's Crawl-delay): its delay
        is never less, learned or not, up to ``maximum``. Returns the delay it gets."""
        self._asked[host] = granted = min(seconds, self.maximum)
        return granted

    def asked(self, host: str) -> float:
        """The Crawl-delay ``host`` gets (0.0: it asked for none)."""
        return self._asked.get(host, 0.0)

    def resume(
        self,
        host: str,
        delay: float,
        *,
        too_fast: int = 0,
        bad: float | None = None,
        good: float | None = None,
        patience: int = 0,
    ) -> None:
        """Start ``host`` where an earlier run of the job left it (hosts.json), within this
        run's floor and maximum; it eases back by the same rule as a delay learned now. A host
        that taught nothing (no 429, at the floor) is left alone."""
        if not self.enabled or (not too_fast and bad is None and delay <= self.floor):
            return
        self._hosts[host] = HostDelay(
            min(max(delay, self.floor), self.maximum),
            too_fast=too_fast,
            bad=None if bad is None else min(bad, self.maximum),
            good=None if good is None else min(max(good, self.floor), self.maximum),
            patience=min(max(patience, 0), FORGET_AFTER - 1),
        )

    def too_fast(self, host: str, retry_after: float | None = None) -> float:
        """``host`` answered 429; returns its new delay."""
        if not self.enabled:
            return self.floor
        if self.listener is not None:
            self.listener(host, TOO_FAST, retry_after)
        known = self._hosts.setdefault(host, HostDelay(self.floor))
        known.too_fast += 1
        known.clean = known.patience = 0
        known.bad = max(known.bad or 0.0, known.delay)
        if known.good is not None and known.good > known.delay:
            new = known.good  # a probe below the last good delay failed: back to it
        else:
            new = max(known.delay * 2, MIN_STEP)
        if retry_after is not None and retry_after <= self.maximum:
            new = max(new, retry_after)
        known.delay = min(new, self.maximum)
        return known.delay

    def answered(self, host: str) -> None:
        """``host`` gave an answer other than 429."""
        if self.enabled and self.listener is not None:
            self.listener(host, ANSWERED, None)
        known = self._hosts.get(host)
        if known is None or known.delay <= self.floor:
            return
        known.clean += 1
        if known.clean < self.ease_after:
            return
        known.clean = 0
        known.good = known.delay
        if known.bad is not None and known.good - known.bad <= CONVERGED * known.good:
            known.patience += 1
            if known.patience < FORGET_AFTER:
                return
            known.bad = None
            known.patience = 0
        lower = known.good / 2 if known.bad is None else (known.bad + known.good) / 2
        known.delay = max(self.floor, lower)

    def learned(self) -> dict[str, HostDelay]:
        """Hosts that answered 429, with what was learned."""
        return {host: known for host, known in sorted(self._hosts.items()) if known.too_fast}
