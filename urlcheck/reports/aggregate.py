"""One pass over the results: totals, distributions, per-host figures and capped samples.

Memory stays bounded by what is shown, not by the number of rows: counters, at most
``latency_samples`` latencies per host (a seeded reservoir, so the median is exact for hosts
with fewer hops and a close estimate beyond), at most ``failing_cap`` failing rows (the lowest
row numbers) and ``error_samples`` examples per error kind.
"""

from __future__ import annotations

import heapq
import random
from array import array
from collections import Counter
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from urlcheck.check.manytoone import LandingTally
from urlcheck.check.result import STATUS_CLASSES, status_class
from urlcheck.check.urls import host_key
from urlcheck.jobs.counts import VERDICTS
from urlcheck.reports.source import HostInfo

CHAIN_BUCKETS = 10  # chain lengths 0..9 hops, then "10+"
MANY_TO_ONE_SHOWN = 50  # landing URLs listed
UNAVAILABLE = "host_unavailable"  # the error kind of rows given up on a host that is down
BLOCKED = "blocked"  # the error kind of rows a bot wall answered


@dataclass(slots=True)
class FailingRow:
    row: int
    url: str
    expected: str | None
    final_url: str | None
    final_status: int | None
    category: str  # the error kind, "loop", or the first failed check
    reasons: list[str]


@dataclass(slots=True)
class HostRow:
    host: str
    rows: int
    errors: int
    retries: int
    retry_after: float | None  # the longest Retry-After the host sent, in seconds
    median_ms: float | None
    delay: float | None  # learned delay (hosts.json), seconds
    unavailable: bool
    backoff_seconds: float | None = None  # time in back-off (hosts.json)
    walls: int = 0  # rows a bot wall answered (error "blocked")


@dataclass(slots=True)
class ErrorKind:
    kind: str
    count: int
    samples: list[tuple[int, str, str]]  # row, url, message


@dataclass(slots=True)
class ProxyRow:
    display: str
    state: str
    weight: float
    success_rate: float | None
    captcha_rate: float | None
    block_rate: float | None
    latency_p50_ms: float | None
    quarantines: int
    rows: int  # result rows whose final answer came through this proxy


@dataclass(slots=True)
class Heatmap:
    proxies: list[str]  # column labels (proxy display names)
    sites: list[str]  # row labels
    success: list[list[float | None]]  # [site][proxy]
    captcha: list[list[float | None]]
    outcomes: list[list[int]]


@dataclass(slots=True)
class ManyToOneRow:
    """A final URL many rows landed on (docs/urls-and-verdicts.md section 9.1)."""

    url: str
    rows: int
    first_rows: list[int]  # the lowest row numbers, for finding them


@dataclass
class ReportData:
    """Everything a report shows; plain values, ready for a template."""

    source: str
    rows: int
    bad_lines: int
    verdicts: dict[str, int]
    first_status: dict[str, int]
    final_status: dict[str, int]
    first_codes: list[tuple[int, int]]
    final_codes: list[tuple[int, int]]
    chain_lengths: list[tuple[str, int]]
    hop_kinds: list[tuple[str, int]]
    errors: list[ErrorKind]
    reasons: list[tuple[str, int]]
    redirected: int
    loops: int
    error_rows: int
    retried_rows: int
    meta_refresh: int
    with_expected: int
    first_checked: str | None
    last_checked: str | None
    hosts: list[HostRow]
    hosts_total: int
    unavailable_hosts: int
    failing: list[FailingRow]
    failing_total: int
    proxies: list[ProxyRow] = field(default_factory=list)
    heatmap: Heatmap | None = None
    job_state: str | None = None  # from the job's meta.json
    input_rows: int | None = None  # rows in the job's input, checked or not
    warnings: list[tuple[str, int]] = field(default_factory=list)  # rows warned of each check
    many_to_one: list[ManyToOneRow] = field(default_factory=list)
    wall_rows: int = 0  # rows a bot wall answered (error "blocked"), over every host

    @property
    def failing_shown(self) -> int:
        return len(self.failing)

    @property
    def error_counts(self) -> list[tuple[str, int]]:
        return [(error.kind, error.count) for error in self.errors]


class _Host:
    __slots__ = (
        "errors",
        "ms",
        "ms_seen",
        "retries",
        "retry_after",
        "rows",
        "unavailable",
        "walls",
    )

    def __init__(self) -> None:
        self.rows = 0
        self.errors = 0
        self.retries = 0
        self.retry_after: float | None = None
        self.ms = array("I")
        self.ms_seen = 0
        self.unavailable = False
        self.walls = 0


def failed_checks(result: dict[str, Any], *, detail: bool = True) -> list[str]:
    """Why a row failed: its error (with the message when ``detail``), a loop, then the
    verdict's reasons that do not just repeat those."""
    error = result.get("error")
    loop = bool(result.get("loop"))
    repeats = {"loop", f"error_{error}"} if error else {"loop"}
    found = []
    if error:
        message = result.get("error_message")
        found.append(f"{error}: {message}" if detail and message else str(error))
    if loop:
        found.append("loop")
    found.extend(str(r) for r in result.get("reasons") or () if r not in repeats)
    return found


class Aggregate:
    def __init__(
        self,
        *,
        failing_cap: int = 1000,
        error_samples: int = 5,
        latency_samples: int = 101,
        host_cap: int = 200,
        proxies: bool = False,
        many_to_one: tuple[int, float] | None = (10, 50.0),
    ) -> None:
        """``many_to_one``: its thresholds (rows, share), None when the check is off."""
        self.failing_cap = failing_cap
        self.landings = LandingTally(*many_to_one) if many_to_one is not None else None
        self.error_samples = error_samples
        self.latency_samples = latency_samples
        self.host_cap = host_cap
        self.track_proxies = proxies
        self.rows = 0
        self.verdicts: Counter[str] = Counter(dict.fromkeys(VERDICTS, 0))
        self.first_status: Counter[str] = Counter(dict.fromkeys(STATUS_CLASSES, 0))
        self.final_status: Counter[str] = Counter(dict.fromkeys(STATUS_CLASSES, 0))
        self.first_codes: Counter[int] = Counter()
        self.final_codes: Counter[int] = Counter()
        self.chain_lengths = [0] * (CHAIN_BUCKETS + 1)
        self.hop_kinds: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.error_samples_by_kind: dict[str, list[tuple[int, str, str]]] = {}
        self.reasons: Counter[str] = Counter()
        self.warnings: Counter[str] = Counter()
        self.redirected = self.loops = self.error_rows = self.retried_rows = 0
        self.meta_refresh = self.with_expected = 0
        self.first_checked: str | None = None
        self.last_checked: str | None = None
        self.hosts: dict[str, _Host] = {}
        self.failing_total = 0
        self._failing: list[tuple[int, int, FailingRow]] = []  # max-heap on row: (-row, seq, row)
        self._seq = 0
        self.proxy_rows: Counter[str] = Counter()
        self.proxy_site: dict[tuple[str, str], list[int]] = {}  # rows, captcha rows
        self._random = random.Random(0)  # reservoirs must not change between two reports
        self._netlocs: dict[str, str] = {}

    def _host(self, host: str) -> _Host:
        stats = self.hosts.get(host)
        if stats is None:
            stats = self.hosts[host] = _Host()
        return stats

    def _latency(self, host: str, ms: int) -> None:
        stats = self._host(host)
        stats.ms_seen += 1
        if len(stats.ms) < self.latency_samples:
            stats.ms.append(ms)
        else:
            slot = self._random.randrange(stats.ms_seen)
            if slot < self.latency_samples:
                stats.ms[slot] = ms

    def _host_of(self, url: str) -> str:
        netloc = url.partition("//")[2].partition("/")[0]
        host = self._netlocs.get(netloc)
        if host is None:
            if len(self._netlocs) > 100_000:  # a cache, not a second copy of every host
                self._netlocs.clear()
            host = self._netlocs[netloc] = host_key(url)
        return host

    def add(self, result: dict[str, Any]) -> None:
        get = result.get
        self.rows += 1
        first, final, verdict = get("status"), get("final_status"), get("verdict")
        error, loop, hops = get("error"), get("loop"), get("hops") or 0
        self.verdicts[verdict if isinstance(verdict, str) else "none"] += 1
        if isinstance(first, int):
            self.first_codes[first] += 1
            self.first_status[status_class(first)] += 1
        else:
            self.first_status["error"] += 1
        if isinstance(final, int):
            self.final_codes[final] += 1
            self.final_status[status_class(final)] += 1
        else:
            self.final_status["error"] += 1
        self.chain_lengths[min(int(hops), CHAIN_BUCKETS)] += 1
        if hops:
            self.redirected += 1
        if loop:
            self.loops += 1
        retries = get("retries")
        if retries:
            self.retried_rows += 1
        if get("meta_refresh"):
            self.meta_refresh += 1
        if get("expected"):
            self.with_expected += 1
        reasons = get("reasons")
        if reasons:
            for reason in reasons:
                self.reasons[str(reason)] += 1
        warnings = get("warnings")
        if warnings and isinstance(warnings, list):
            for warning in warnings:
                self.warnings[str(warning)] += 1
        if hops and self.landings is not None:
            self.landings.add_line(result)
        checked = get("checked_at")
        if isinstance(checked, str):
            if self.first_checked is None or checked < self.first_checked:
                self.first_checked = checked
            if self.last_checked is None or checked > self.last_checked:
                self.last_checked = checked
        row = int(result["row"])
        url = str(get("url") or "")
        host = self._host_of(str(get("requested_url") or url))
        chain = get("chain") or ()
        if host:
            stats = self._host(host)
            stats.rows += 1
            if retries:
                stats.retries += int(retries)
            retry_after = get("retry_after")
            if isinstance(retry_after, int | float) and (
                stats.retry_after is None or retry_after > stats.retry_after
            ):
                stats.retry_after = float(retry_after)
            if error:
                stats.errors += 1
                if error == UNAVAILABLE:
                    stats.unavailable = True
                elif error == BLOCKED:
                    stats.walls += 1
        for entry in chain:
            kind = entry.get("kind")
            if kind:
                self.hop_kinds[str(kind)] += 1
            ms = entry.get("ms")
            if isinstance(ms, int) and ms >= 0:
                self._latency(self._host_of(str(entry.get("url") or "")), ms)
        if error:
            self.error_rows += 1
            kind = str(error)
            self.errors[kind] += 1
            samples = self.error_samples_by_kind.setdefault(kind, [])
            if len(samples) < self.error_samples:
                samples.append((row, url, str(get("error_message") or "")))
        if self.track_proxies and get("proxy"):
            self._proxy(result, str(result["proxy"]), host, chain)
        if verdict == "fail" or error or loop:
            self._failing_row(result, row, url, error)

    def _proxy(self, result: dict[str, Any], proxy: str, host: str, chain: Any) -> None:
        self.proxy_rows[proxy] += 1
        last = chain[-1] if chain else {}
        captcha = str(last.get("block") or "").startswith("captcha")
        cell = self.proxy_site.setdefault((proxy, host), [0, 0])
        cell[0] += 1
        cell[1] += int(captcha)

    def _failing_row(self, result: dict[str, Any], row: int, url: str, error: Any) -> None:
        self.failing_total += 1
        if self._failing and len(self._failing) >= self.failing_cap and -self._failing[0][0] < row:
            return  # only the lowest row numbers are kept
        reasons = failed_checks(result)
        if error:
            category = str(error)
        elif result.get("loop"):
            category = "loop"
        else:
            category = str((result.get("reasons") or ["fail"])[0])
        final_status = result.get("final_status")
        entry = FailingRow(
            row=row,
            url=url,
            expected=result.get("expected"),
            final_url=result.get("final_url"),
            final_status=final_status if isinstance(final_status, int) else None,
            category=category,
            reasons=reasons,
        )
        self._seq += 1
        item = (-row, self._seq, entry)
        if len(self._failing) < self.failing_cap:
            heapq.heappush(self._failing, item)
        elif self.failing_cap > 0:
            heapq.heapreplace(self._failing, item)

    # --- the result ------------------------------------------------------------------------

    def _host_rows(self, learned: dict[str, HostInfo]) -> list[HostRow]:
        rows = []
        for host, stats in self.hosts.items():
            info = learned.get(host, HostInfo())
            rows.append(
                HostRow(
                    host=host,
                    rows=stats.rows,
                    errors=stats.errors,
                    retries=stats.retries,
                    retry_after=stats.retry_after,
                    median_ms=float(median(stats.ms)) if stats.ms else None,
                    delay=info.delay,
                    unavailable=stats.unavailable or info.unavailable,
                    backoff_seconds=info.backoff_seconds,
                    walls=stats.walls,
                )
            )
        # Unavailable hosts, then the slowest, then the busiest.
        rows.sort(key=lambda h: (not h.unavailable, -(h.median_ms or 0.0), -h.rows, h.host))
        return rows

    def finish(
        self,
        *,
        source: str = "",
        bad_lines: int = 0,
        learned: dict[str, HostInfo] | None = None,
        proxies: dict[str, Any] | None = None,
    ) -> ReportData:
        hosts = self._host_rows(learned or {})
        chain = [(str(n), self.chain_lengths[n]) for n in range(CHAIN_BUCKETS)]
        chain.append((f"{CHAIN_BUCKETS}+", self.chain_lengths[CHAIN_BUCKETS]))
        while len(chain) > 2 and chain[-1][1] == 0:
            chain.pop()
        many = self.landings.result() if self.landings is not None else None
        warnings = self.warnings.copy()
        failing = [entry for _, _, entry in sorted(self._failing, key=lambda i: -i[0])]
        if many is not None and many.rows:
            warnings["many_to_one"] += len(many.rows)
            for entry in failing:  # flagged on the rows shown (their lines cannot say it)
                if entry.row in many.rows:
                    entry.reasons.append("many_to_one (warning)")
        data = ReportData(
            source=source,
            rows=self.rows,
            bad_lines=bad_lines,
            verdicts=dict(self.verdicts),
            first_status=dict(self.first_status),
            final_status=dict(self.final_status),
            first_codes=sorted(self.first_codes.items()),
            final_codes=sorted(self.final_codes.items()),
            chain_lengths=chain,
            hop_kinds=self.hop_kinds.most_common(),
            errors=[
                ErrorKind(kind, count, self.error_samples_by_kind.get(kind, []))
                for kind, count in self.errors.most_common()
            ],
            reasons=self.reasons.most_common(),
            redirected=self.redirected,
            loops=self.loops,
            error_rows=self.error_rows,
            retried_rows=self.retried_rows,
            meta_refresh=self.meta_refresh,
            with_expected=self.with_expected,
            first_checked=self.first_checked,
            last_checked=self.last_checked,
            hosts=hosts[: self.host_cap],
            hosts_total=len(hosts),
            unavailable_hosts=sum(1 for h in hosts if h.unavailable),
            wall_rows=sum(h.walls for h in hosts),
            failing=failing,
            failing_total=self.failing_total,
            warnings=warnings.most_common(),
            many_to_one=[
                ManyToOneRow(x.url, len(x.rows), sorted(x.rows)[:10])
                for x in (many.landings[:MANY_TO_ONE_SHOWN] if many is not None else [])
            ],
        )
        if proxies is not None:
            data.proxies = self._proxy_rows(proxies)
            data.heatmap = self._heatmap(proxies)
        return data

    def _proxy_rows(self, snapshot: dict[str, Any]) -> list[ProxyRow]:
        rows = []
        for proxy in snapshot.get("proxies") or ():
            p50 = proxy.get("latency_p50")
            display = str(proxy.get("display") or proxy.get("id"))
            rows.append(
                ProxyRow(
                    display=display,
                    state=str(proxy.get("state") or "?"),
                    weight=float(proxy.get("weight") or 0.0),
                    success_rate=proxy.get("success_rate"),
                    captcha_rate=proxy.get("captcha_rate"),
                    block_rate=proxy.get("block_rate"),
                    latency_p50_ms=None if p50 is None else p50 * 1000,
                    quarantines=int(proxy.get("quarantines") or 0),
                    rows=self.proxy_rows.get(display, 0),
                )
            )
        return rows

    def _heatmap(self, snapshot: dict[str, Any], max_sites: int = 40) -> Heatmap | None:
        matrix = snapshot.get("matrix") or {}
        if not matrix:
            return None
        names = {
            str(p.get("id")): str(p.get("display") or p.get("id")) for p in snapshot["proxies"]
        }
        ids = list(names)
        busiest = sorted(
            matrix.items(), key=lambda item: -sum(c.get("outcomes", 0) for c in item[1].values())
        )[:max_sites]
        success: list[list[float | None]] = []
        captcha: list[list[float | None]] = []
        outcomes: list[list[int]] = []
        for site, cells in busiest:
            success.append([])
            captcha.append([])
            outcomes.append([])
            for proxy_id in ids:
                cell = cells.get(proxy_id)
                success[-1].append(None if cell is None else cell.get("success_rate"))
                outcomes[-1].append(0 if cell is None else int(cell.get("outcomes") or 0))
                rate = None if cell is None else cell.get("captcha_rate")
                if rate is None:  # the snapshot has none: rows that ended on a captcha
                    tally = self.proxy_site.get((names[proxy_id], site))
                    rate = tally[1] / tally[0] if tally and tally[0] else None
                captcha[-1].append(rate)
        return Heatmap(
            proxies=[names[i] for i in ids],
            sites=[site for site, _ in busiest],
            success=success,
            captcha=captcha,
            outcomes=outcomes,
        )
