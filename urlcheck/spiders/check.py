"""The ``check`` spider: CSV rows in, one result per row out, every redirect hop its own request.

Scrapy never follows a redirect here (REDIRECT_ENABLED is off and every status reaches the
callback): the spider requests each Location itself, so each hop is scheduled in its *own*
host's download slot and obeys that host's politeness. (Scrapy's RedirectMiddleware copies
``download_slot`` into the redirected request, so a cross-host hop would be sent through the
source host's slot.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scrapy import Request, Spider
from scrapy.exceptions import CloseSpider
from w3lib.html import get_meta_refresh

from urlcheck.backoff import HostBackoff
from urlcheck.config import CheckConfig, resolve_user_agent
from urlcheck.csvinput import CsvSource, InputError, Record
from urlcheck.errors import classify_failure
from urlcheck.feeder import HostFeeder
from urlcheck.jobs.errors import JobError
from urlcheck.middlewares.backoff import META_RETRY_AFTER
from urlcheck.middlewares.proxy import META_BLOCKED, META_PROXY
from urlcheck.results import RowTask, build_result, hop
from urlcheck.resultsfile import ResultsPlan, plan_results
from urlcheck.urls import InvalidURL, hop_kind, host_key, normalise_input, resolve_location
from urlcheck.verdict import VerdictRules

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

META_TASK = "urlcheck_task"
META_CHAIN = "urlcheck_chain"
META_RETRIES = "urlcheck_retries"
_META_GET_FALLBACK = "_urlcheck_get_fallback"
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_INDEX_YIELD_EVERY = 20_000
# Settings that change what a result says; recorded in the job's meta.json.
SHAPING_SETTINGS = (
    "URLCHECK_METHOD",
    "URLCHECK_MAX_HOPS",
    "URLCHECK_FOLLOW_META_REFRESH",
    "URLCHECK_VERDICT_IGNORE_TRAILING_SLASH",
    "URLCHECK_TEMPORARY_REDIRECT",
    "URLCHECK_MAX_CHAIN_HOPS",
    "URLCHECK_BACKOFF_RETRIES",
    "COOKIES_ENABLED",
    "ROBOTSTXT_OBEY",
)


class CheckSpider(Spider):
    name = "check"

    def __init__(self, csv: str | None = None, out: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not csv:
            raise ValueError("the check spider needs the input file: -a csv=PATH")
        self.csv_path = Path(csv)
        self.out = Path(out) if out else None
        self.results: ResultsPlan | None = None
        self.feeder: HostFeeder | None = None
        self.total_rows = 0

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        preset = settings.get("URLCHECK_USER_AGENT")
        priority = settings.getpriority("URLCHECK_USER_AGENT") or 0
        if preset and (settings.getpriority("USER_AGENT") or 0) <= priority:
            settings.set("USER_AGENT", resolve_user_agent(str(preset)), priority=priority)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.config = CheckConfig.from_settings(crawler.settings)
        spider.rules = VerdictRules(
            ignore_trailing_slash=spider.config.ignore_trailing_slash,
            temporary_redirect=spider.config.temporary_redirect,
            max_chain_hops=spider.config.max_chain_hops,
        )
        spider.backoff = HostBackoff.for_crawler(crawler)
        return spider

    @property
    def results_path(self) -> Path | None:
        return self.results.path if self.results else None

    config: CheckConfig
    rules: VerdictRules
    backoff: HostBackoff

    # --- feeding rows ----------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        try:
            source = CsvSource(self.csv_path)
            self.results = plan_results(self.crawler.settings, self.out, self.csv_path)
        except (InputError, JobError) as exc:
            logger.error("%s", exc)
            raise CloseSpider("input_error") from None
        done = self.results.done
        feeder = self.feeder = HostFeeder(
            ahead_per_host=self.config.rows_ahead_per_host,
            ahead_total=self.config.rows_ahead,
            is_paused=self.backoff.is_paused,
        )
        invalid: list[tuple[int, int]] = []
        count = 0
        for record in source.records(skip=done.__contains__):
            count += 1
            try:
                target = normalise_input(record.url)
            except InvalidURL:
                invalid.append((record.row, record.offset))
            else:
                feeder.add(record.row, record.offset, target.host)
            if count % _INDEX_YIELD_EVERY == 0:
                await asyncio.sleep(0)  # keep the event loop (signals, timers) responsive
        feeder.finish()
        self.total_rows = count + len(done)
        logger.info(
            "%s: %d rows, %d already done, %d to check across %d hosts (%d invalid)",
            self.csv_path,
            self.total_rows,
            len(done),
            len(feeder),
            len(feeder.hosts),
            len(invalid),
        )
        if self.results.job is not None:
            settings = self.crawler.settings
            self.job_context = self.results.job.context(
                total_rows=self.total_rows,
                user_agent=str(settings.get("USER_AGENT")),
                shaping_settings={name: settings.get(name) for name in SHAPING_SETTINGS},
                paused_hosts=self.backoff.paused,
            )
        for row, offset in invalid:
            yield self._invalid_result(source.read_at(offset, row))
        while not feeder.exhausted:
            ref = feeder.take()
            if ref is None:
                await self._wait_for_room()
                continue
            task = self._task(source.read_at(ref.offset, ref.row), ref.host_id)
            assert task.requested_url is not None
            yield self._request(task, task.requested_url, [])

    async def _wait_for_room(self) -> None:
        # Woken when a row finishes; the timeout covers hosts whose back-off ends.
        loop = asyncio.get_running_loop()
        self._room = loop.create_future()
        try:
            await asyncio.wait_for(asyncio.shield(self._room), timeout=0.5)
        except TimeoutError:
            pass
        finally:
            self._room = None

    _room: asyncio.Future[None] | None = None

    def _row_finished(self, task: RowTask) -> None:
        if self.feeder is not None and task.host_id >= 0:
            self.feeder.done(task.host_id)
        if self._room is not None and not self._room.done():
            self._room.set_result(None)

    def _task(self, record: Record, host_id: int = -1) -> RowTask:
        task = RowTask(record.row, record.url, None, record.expected, record.extra, host_id)
        target = normalise_input(record.url)
        task.requested_url = target.url
        if target.scheme_added:
            task.notes.append("scheme_added")
        return task

    def _invalid_result(self, record: Record) -> dict[str, Any]:
        task = RowTask(record.row, record.url, None, record.expected, record.extra)
        try:
            normalise_input(record.url)
        except InvalidURL as exc:
            message = str(exc)
        else:  # pragma: no cover - indexed as invalid, so it raises
            message = "invalid URL"
        return build_result(task, [], rules=self.rules, error="invalid_url", error_message=message)

    # --- one hop ---------------------------------------------------------------------------------

    def _request(
        self,
        task: RowTask,
        url: str,
        chain: list[dict[str, Any]],
        *,
        retries: int = 0,
        method: str | None = None,
    ) -> Request:
        return Request(
            url,
            method=method or self.config.method,
            callback=self.parse_hop,
            errback=self.hop_failed,
            dont_filter=True,
            # Hops before new rows: finishing chains keeps few rows open.
            priority=len(chain),
            meta={
                META_TASK: task,
                META_CHAIN: chain,
                META_RETRIES: retries,
                "download_slot": host_key(url),
                "handle_httpstatus_all": True,
                "dont_redirect": True,
            },
        )

    def _finish(self, response_or_request: Response | Request, **fields: Any) -> dict[str, Any]:
        meta = response_or_request.meta
        task: RowTask = meta[META_TASK]
        result = build_result(
            task,
            meta[META_CHAIN],
            rules=self.rules,
            retries=meta[META_RETRIES] + meta.get("retry_times", 0),
            retry_after=meta.get(META_RETRY_AFTER),
            proxy=meta.get(META_PROXY),
            **fields,
        )
        self._row_finished(task)
        return result

    def parse_hop(self, response: Response) -> Any:
        meta = response.meta
        task: RowTask = meta[META_TASK]
        status = response.status
        if (
            response.request is not None
            and response.request.method == "HEAD"
            and status in (405, 501)
        ):
            if "head_fallback_get" not in task.notes:
                task.notes.append("head_fallback_get")
            return self._request(
                task,
                response.url,
                meta[META_CHAIN],
                method="GET",
                retries=meta[META_RETRIES] + meta.get("retry_times", 0),
            )
        chain: list[dict[str, Any]] = [*meta[META_CHAIN]]
        latency = meta.get("download_latency")
        entry = hop(
            response.url, status=status, ms=None if latency is None else round(latency * 1000)
        )
        chain.append(entry)
        meta[META_CHAIN] = chain
        blocked = meta.get(META_BLOCKED)
        if blocked is not None:  # every try through the proxy pool met a captcha or block
            entry["block"] = blocked
            return self._finish(
                response,
                error="blocked",
                error_message=f"{blocked} (status {status}) on every proxy tried",
            )
        if status in REDIRECT_STATUSES or (300 <= status < 400 and b"Location" in response.headers):
            return self._follow(response, entry, response.headers.get(b"Location"))
        if 300 <= status < 400:
            return self._finish(
                response, error="bad_location", error_message=f"{status} without a Location header"
            )
        refresh = self._meta_refresh(response)
        if refresh is not None and self.config.follow_meta_refresh and 200 <= status < 300:
            return self._follow(response, entry, refresh.encode())
        return self._finish(response, meta_refresh=refresh)

    def _follow(self, response: Response, entry: dict[str, Any], location: bytes | None) -> Any:
        meta = response.meta
        chain: list[dict[str, Any]] = meta[META_CHAIN]
        try:
            target = resolve_location(response.url, location)
        except InvalidURL as exc:
            raw = location.decode("latin-1") if location else None
            entry["location"] = raw
            return self._finish(response, error=exc.code, error_message=str(exc))
        entry["location"] = target
        entry["kind"] = hop_kind(response.url, target)
        if any(earlier["url"] == target for earlier in chain):
            return self._finish(response, loop=True)
        if len(chain) > self.config.max_hops:
            return self._finish(
                response,
                error="too_many_hops",
                error_message=f"more than {self.config.max_hops} redirects (URLCHECK_MAX_HOPS)",
            )
        task: RowTask = meta[META_TASK]
        retries = meta[META_RETRIES] + meta.get("retry_times", 0)
        return self._request(task, target, chain, retries=retries)

    def _meta_refresh(self, response: Response) -> str | None:
        text = getattr(response, "text", None)
        if text is None or not response.body:
            return None
        _, url = get_meta_refresh(text[:65536], response.url)
        return url

    def hop_failed(self, failure: Failure) -> dict[str, Any]:
        request: Request = failure.request  # type: ignore[attr-defined]
        kind, message = classify_failure(failure)
        chain = [*request.meta[META_CHAIN], hop(request.url, error=kind)]
        request.meta[META_CHAIN] = chain
        return self._finish(request, error=kind, error_message=message)
