"""How a CSV row becomes the requests of its chain, and its chain a result line.

The check spider makes one :class:`RowRequests` per crawl and puts it on the crawl's runtime
(:mod:`urlcheck.crawl.runtime`). Distributed mode (:mod:`urlcheck.cluster.crawl`) builds its
tasks, requests and lines with it too, so a row is checked one way whichever process holds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request

from urlcheck.check.hops import RowTask
from urlcheck.check.ledger import RowLedger
from urlcheck.check.result import Result, build_result
from urlcheck.check.urls import host_key, normalise_input, without_userinfo
from urlcheck.check.verdict import VerdictRules
from urlcheck.crawl import meta as m

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.http import Response

    from urlcheck.check.chain import Finish
    from urlcheck.check.hops import Hop
    from urlcheck.config.crawlconfig import CheckConfig
    from urlcheck.input.csvfile import Record


def retries_spent(meta: dict[str, Any]) -> int:
    """Retries spent on the row: earlier hops' plus this request's own (Scrapy's count)."""
    retries: int = meta[m.RETRIES] + meta.get("retry_times", 0)
    return retries


class RowRequests:
    def __init__(
        self,
        config: CheckConfig,
        *,
        callback: Callable[[Response], Any],
        errback: Callable[..., Any],
        finished: Callable[[RowTask], None],
    ) -> None:
        self.method: str = config.method
        self.rules = VerdictRules(
            ignore_trailing_slash=config.ignore_trailing_slash,
            temporary_redirect=config.temporary_redirect,
            max_chain_hops=config.max_chain_hops,
            audit=config.audit,
        )
        # Rows fed, their latest request while open, and rows whose line was written: no row
        # may end without a line, whatever drops its request (urlcheck.check.ledger).
        self.ledger: RowLedger[Request] = RowLedger()
        self._callback = callback
        self._errback = errback
        self._finished = finished

    def task(self, record: Record, host_id: int = -1) -> RowTask:
        """The row's task, its URL normalised (the record was indexed as a valid one)."""
        task = RowTask(record.row, record.url, None, record.expected, record.extra, host_id)
        target = normalise_input(record.url)
        # What goes on the wire: an input's user:password@ is never sent (nor written down).
        task.requested_url = without_userinfo(target.url)
        if target.scheme_added:
            task.notes.append("scheme_added")
        task.notes.extend(target.warnings)
        return task

    def request(
        self,
        task: RowTask,
        url: str,
        chain: list[Hop],
        *,
        retries: int = 0,
        method: str | None = None,
        after_public: bool = False,
    ) -> Request:
        """The request of one hop of the row's chain; the row is open until its line."""
        request = Request(
            without_userinfo(url),
            method=method or self.method,
            callback=self._callback,
            errback=self._errback,
            dont_filter=True,
            # Hops before new rows: finishing chains keeps few rows open.
            priority=len(chain),
            meta={
                m.TASK: task,
                m.CHAIN: chain,
                m.RETRIES: retries,
                "download_slot": host_key(url),
                # Sent as a browser sends it: Request would re-escape "|", "[", "^", ...
                "verbatim_url": True,
                "handle_httpstatus_all": True,
                "dont_redirect": True,
                m.AFTER_PUBLIC: after_public,
            },
        )
        self.ledger.fed(task.row, request)
        return request

    def line(self, task: RowTask, chain: list[Hop], **fields: Any) -> Result:
        """The row's result line, judged by this crawl's verdict rules."""
        return build_result(task, chain, rules=self.rules, **fields)

    def copy_line(self, task: RowTask, of: Result) -> Result:
        """The line of a row that asked for the URL row ``of.row`` asked for: that row's chain
        and its end, judged against this row's own expected target; no request, no retry of its
        own (urlcheck.input.duplicates)."""
        task.notes.append(f"duplicate_of_row_{of.row}")
        result = self.line(
            task,
            of.chain,
            loop=of.loop,
            error=of.error,
            error_message=of.error_message,
            meta_refresh=of.meta_refresh,
            retry_after=of.retry_after,
            proxy=of.proxy,
        )
        result.checked_at = of.checked_at  # when the chain was checked
        return result

    def finish(
        self, response_or_request: Response | Request, chain: list[Hop], end: Finish
    ) -> Result:
        """The line of the row whose chain ``end``\\s at this answer or request."""
        meta = response_or_request.meta
        task: RowTask = meta[m.TASK]
        result = self.line(
            task,
            chain,
            loop=end.loop,
            error=end.error,
            error_message=end.error_message,
            meta_refresh=end.meta_refresh,
            final_page=end.final_page,
            findings=end.findings,
            retries=retries_spent(meta),
            retry_after=meta.get(m.RETRY_AFTER),
            proxy=meta.get(m.PROXY),
        )
        self.finished(task)
        return result

    def finished(self, task: RowTask) -> None:
        """The row has its line (on its way to the pipelines)."""
        self.ledger.finished(task.row)
        self._finished(task)

    def handed_on(self, row: int) -> None:
        """The row's request leaves this process without its line (distributed mode: its next
        step is in Redis); the ledger stops holding it open."""
        self.ledger.finished(row)
