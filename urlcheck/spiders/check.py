"""The ``check`` spider: CSV rows in, one result per row out, every redirect hop its own request.

An adapter between Scrapy and :mod:`urlcheck.check.chain`: Scrapy never follows a redirect here
(REDIRECT_ENABLED is off and every status reaches the callback); the spider hands each answer
to the chain rules and requests each Location itself, so each hop is scheduled in its *own*
host's download slot and obeys that host's politeness. (Scrapy's RedirectMiddleware copies
``download_slot`` into the redirected request, so a cross-host hop would be sent through the
source host's slot.)
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scrapy import Request, Spider, signals
from scrapy.exceptions import CloseSpider
from scrapy.http import TextResponse
from scrapy.utils.httpobj import urlparse_cached

from urlcheck.check.addressguard import is_public
from urlcheck.check.chain import Answer, ChainRules, Finish, Step, too_long
from urlcheck.check.hops import Hop, RowTask, hop
from urlcheck.check.result import Result
from urlcheck.check.tls import hop_tls
from urlcheck.check.urls import InvalidURL, host_key, input_host_and_key, normalise_input
from urlcheck.config.crawlconfig import resolve_user_agent
from urlcheck.config.reader import ConfigError
from urlcheck.crawl import internals
from urlcheck.crawl import meta as m
from urlcheck.crawl.addon import distributed
from urlcheck.crawl.failures import classify_failure
from urlcheck.crawl.requests import RowRequests, retries_spent
from urlcheck.crawl.responsehead import LocationTooLongError
from urlcheck.crawl.runtime import ClusterRole, Runtime, runtime
from urlcheck.crawl.sitemaps import SitemapFetcher, child_urls
from urlcheck.crawl.writefailure import write_failed
from urlcheck.input.csvfile import CsvSource
from urlcheck.input.duplicates import SameURL
from urlcheck.input.errors import InputError
from urlcheck.input.feeder import HostFeeder
from urlcheck.input.files import read_head
from urlcheck.input.kind import open_source
from urlcheck.input.sitemap import INDEX, URLSET, SitemapSource, is_remote, sitemap_root
from urlcheck.jobs.errors import JobError
from urlcheck.jobs.files import JobMeta
from urlcheck.jobs.resultsfile import plan_results

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

    from urlcheck.check.ledger import RowLedger
    from urlcheck.input.kind import Source
    from urlcheck.input.record import Record
    from urlcheck.jobs.prepare import PreparedJob
    from urlcheck.politeness.circuit import Unavailable

logger = logging.getLogger(__name__)

_INDEX_YIELD_EVERY = 20_000
_REMOTE_CONTROL = "scrapy.extensions.remote_control.RemoteControl"


class CheckSpider(Spider):
    name = "check"

    def __init__(
        self,
        csv: str | None = None,
        out: str | None = None,
        job: str | None = None,
        sheet: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.sheet = sheet or None  # a workbook's sheet (-a sheet=NAME); else its first
        if not csv and not job:
            raise ValueError("the check spider needs the input file: -a csv=PATH")
        # Without csv: a worker of the distributed job `job` (docs/distributed.md).
        self.csv_path = Path(csv) if csv else None
        self.input = csv  # as given: a path, or an http(s) URL of a sitemap
        self.job = job
        self.out = Path(out) if out else None
        self._closed_rows = set()

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        preset = settings.get("URLCHECK_USER_AGENT")
        priority = settings.getpriority("URLCHECK_USER_AGENT") or 0
        if preset and (settings.getpriority("USER_AGENT") or 0) <= priority:
            settings.set("USER_AGENT", resolve_user_agent(str(preset)), priority=priority)
        if not settings.getbool("REMOTE_CONTROL_ENABLED"):
            # Off, Scrapy's RemoteControl is not even imported (EXTENSIONS: None would import it
            # to name it): its aiohttp server cost 8 MB of RSS and 90 ms at every start. At the
            # spider's priority, as the crawler process's own settings are applied again later.
            base = settings.getdict("EXTENSIONS_BASE")
            if base.pop(_REMOTE_CONTROL, None) is not None:
                settings.set("EXTENSIONS_BASE", base, "spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.runtime = runtime(crawler)
        spider.runtime.wind_down = spider.wind_down
        config = spider.runtime.config.check
        spider.chain_rules = ChainRules(
            config.max_hops, config.follow_meta_refresh, config.max_url_length, config.bot_walls
        )
        spider.requests = spider.runtime.requests = RowRequests(
            config,
            callback=spider.parse_hop,
            errback=spider.hop_failed,
            finished=spider._row_finished,
        )
        spider.ledger = spider.requests.ledger
        spider.runtime.row_error = spider.internal_error
        crawler.signals.connect(spider._line_written, signal=signals.item_scraped)
        crawler.signals.connect(spider._check_every_row, signal=signals.spider_closed)
        if distributed(crawler.settings):  # the add-on's components find the job here
            if not spider.job:
                raise ConfigError(
                    "REDIS_URL is set (distributed mode): name the job with -a job=NAME"
                )
            spider.runtime.cluster_role = ClusterRole(spider.job, spider.csv_path is not None)
        elif spider.csv_path is None:
            raise ValueError("a worker (-a job=NAME without -a csv) needs -s REDIS_URL=...")
        return spider

    runtime: Runtime
    chain_rules: ChainRules
    requests: RowRequests  # rows to requests, chains to lines (also distributed mode's)
    ledger: RowLedger[Request]  # the requests' (urlcheck.check.ledger): no row without a line

    # --- feeding rows ----------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        rt = self.runtime
        if self.csv_path is None:  # a worker: its scheduler claims work from Redis
            return
        fetcher: SitemapFetcher | None = None
        try:
            # An http(s) URL is a sitemap the crawl fetches first (kept in the job).
            given = self.csv_path
            from_public = False  # a site gave the input (a sitemap fetched from a public address)
            if self.input is not None and is_remote(self.input):
                fetcher = self._sitemaps()
                given = await fetcher.fetch(self.input)
                from_public = fetcher.from_public(self.input)
            results = rt.results = plan_results(
                self.crawler.settings, self.out, given, rt.config.recheck, self.sheet
            )
            if results.job is not None:
                self.sheet = self._job_sheet(results.job)
            # A job reads its own copy of the input (docs/jobs.md, "The job's input").
            read_from = results.input_path or given
            try:
                source = open_source(read_from, sheet=self.sheet)
            except InputError as exc:
                if self.input is None or not is_remote(self.input):
                    raise
                # A fetched sitemap's file is ours (a temporary one, or the job's copy): the
                # user named its URL.
                message = str(exc).replace(os.fspath(read_from), self.input, 1)
                raise InputError(message) from None
            if results.job is not None and isinstance(source, SitemapSource):
                # Resumed from its copy, a sitemap a site gave is still the site's word.
                fetcher = fetcher or self._sitemaps()
                checksum = results.job.meta.input_sha256
                if self.input is not None and is_remote(self.input):
                    fetcher.keep_input_origin(checksum, from_public)
                else:
                    from_public = fetcher.input_from_public(checksum)
            if isinstance(source, SitemapSource) and source.root == INDEX:
                fetcher = fetcher or self._sitemaps()
                source, parts_public = await self._sitemaps_of(source, fetcher, from_public)
                rt.row_after_public = self._rows_after_public(source, parts_public)
            elif from_public:
                rt.row_after_public = _always
        except (InputError, JobError) as exc:
            logger.error("%s", exc)
            raise CloseSpider("input_error") from None
        except OSError as exc:  # the job's copy of the CSV, meta.json... on a full disk
            jobdir = self.crawler.settings.get("JOBDIR") or "."
            write_failed(self.crawler, Path(exc.filename or jobdir), exc)
            return
        done = results.done
        config = rt.config.check
        feeder = rt.feeder = HostFeeder(
            ahead_per_host=config.rows_ahead_per_host,
            ahead_total=config.rows_ahead,
            is_paused=rt.backoff.is_paused,
        )
        # Rows asking for a URL an earlier row asks for wait for that row's chain. Not in
        # distributed mode, whose rows are fed to Redis and ended by any process.
        same = self._same_url = SameURL() if config.same_url_once and rt.feed_rows is None else None
        self._source = source
        invalid: list[tuple[int, int]] = []
        count = 0
        # Past the cap the run is refused before its first request, having read no more.
        cap = config.max_rows - len(done) if config.max_rows is not None else None
        flags = done.flags() if len(done) and isinstance(source, CsvSource) else None
        if flags is not None and isinstance(source, CsvSource):  # done rows skipped by chunks
            rows = source.records(skip_flags=flags)
        else:
            rows = source.records(skip=done.__contains__ if len(done) else None)
        try:
            for record in rows:
                count += 1
                if cap is not None and count > cap:
                    raise InputError(
                        f"{self.input}: more than {config.max_rows:,} rows, the most "
                        "URLCHECK_MAX_ROWS allows"
                    )
                try:
                    host, key = input_host_and_key(record.url)
                except InvalidURL:
                    invalid.append((record.row, record.offset))
                else:
                    feeder.add(record.row, record.offset, host)
                    if same is not None:
                        same.add(key)
                if count % _INDEX_YIELD_EVERY == 0:
                    await asyncio.sleep(0)  # keep the event loop (signals, timers) responsive
        except InputError as exc:  # found past the head: a gzip bomb, a damaged archive
            logger.error("%s", exc)
            raise CloseSpider("input_error") from None
        if same is not None:
            for _ in same.resolve(*feeder.indexed()):
                await asyncio.sleep(0)
        feeder.finish(leave_out=same or ())
        rt.total_rows = count + len(done)
        logger.info(
            "%s: %d rows, %d already done, %d to check across %d hosts (%d invalid, "
            "%d asking for an earlier row's URL: checked with it)",
            self.input,
            rt.total_rows,
            len(done),
            len(feeder),
            len(feeder.hosts),
            len(invalid),
            0 if same is None else len(same),
        )
        if results.job is not None:
            settings = self.crawler.settings
            rt.job_context = results.job.context(
                total_rows=rt.total_rows,
                user_agent=str(settings.get("USER_AGENT")),
                paused_hosts=rt.backoff.paused,
            )
        ledger = self.ledger
        for row, offset in invalid:
            ledger.fed(row)
            yield self._invalid_result(source.read_at(offset, row))
        if rt.feed_rows is not None:  # a distributed job's coordinator: rows go to Redis
            await rt.feed_rows(source, feeder)
            return
        # Until every row fed has its line: a row whose request was dropped is found (and given
        # its line) only once nothing else is left in flight.
        idle_checks = 0
        while not feeder.exhausted or ledger.has_open():
            if rt.write_failure is not None:  # stopping: the rows left are the next run's
                return
            ref = None if feeder.exhausted else feeder.take()
            if ref is None:
                await self._wait_for_room()
                idle_checks = idle_checks + 1 if self._nothing_in_flight() else 0
                if idle_checks >= 2:  # twice, 0.5 s apart: not a request between two steps
                    idle_checks = 0
                    for lost in self._lost_rows():
                        for line in self._with_copies(lost):
                            yield line
                continue
            task = self.requests.task(source.read_at(ref.offset, ref.row), ref.host_id)
            for out in self._first_step(task):
                yield out

    def _first_step(self, task: RowTask) -> Iterator[Request | Result]:
        """The row's first request; or its line (and its copies') when it is not requested."""
        url = task.requested_url
        assert url is not None
        if len(url) > self.chain_rules.max_url_length:
            self.ledger.fed(task.row)
            yield from self._with_copies(self._url_too_long(task, url))
            return
        down = self.runtime.backoff.circuit.unavailable(host_key(url))
        if down is not None:  # given up on: its line at once, without a request
            self.ledger.fed(task.row)
            yield from self._with_copies(self._host_unavailable(task, url, down))
            return
        from_site = self.runtime.row_after_public
        after_public = from_site is not None and from_site(task.row)
        yield self.requests.request(task, url, [], after_public=after_public)

    # --- rows asking for the same URL (urlcheck.input.duplicates) -------------------------------

    _same_url: SameURL | None = None
    _source: Source

    def _with_copies(self, line: Result) -> Iterator[Request | Result]:
        """``line``, then the line of each row held as a copy of its URL, one at a time (a
        million copies are never a million results in memory)."""
        yield line
        same = self._same_url
        if same is None or not same.has_copies(line.row):
            return
        stats = self.crawler.stats
        assert stats is not None
        for row, offset in same.release(line.row):
            task = self.requests.task(self._source.read_at(offset, row))
            if task.requested_url != line.requested_url:  # only its URL's hash was the same
                yield from self._first_step(task)
                continue
            self.ledger.fed(row)
            stats.inc_value("urlcheck/duplicate_rows")
            yield self.requests.copy_line(task, line)

    def _line(self, line: Result) -> Result | Iterator[Request | Result]:
        """A row's line as a callback returns it: with its copies' only when it has any."""
        same = self._same_url
        if same is not None and same.has_copies(line.row):
            return self._with_copies(line)
        return line

    def _wake(self) -> None:
        if self._room is not None and not self._room.done():
            self._room.set_result(None)

    def _job_sheet(self, job: PreparedJob) -> str | None:
        """The workbook sheet the job reads: the one named, else the one it was started with;
        an unfinished job is not resumed on another sheet (its rows would be other rows)."""
        kept = job.meta.input_sheet or None
        if self.sheet is None or job.fresh:
            sheet = self.sheet if job.fresh else kept
        elif kept is not None and kept != self.sheet:
            raise JobError(
                f"{job.jobdir} was started on the sheet {kept!r}, not {self.sheet!r}: leave out "
                "the sheet to go on with it, or cancel the job first (scrapy job cancel DIR)"
            )
        else:
            sheet = self.sheet
        if (sheet or "") != job.meta.input_sheet:
            job.meta.input_sheet = sheet or ""
            job.meta.save(job.jobdir)
        return sheet

    def _sitemaps(self) -> SitemapFetcher:
        """Where fetched sitemaps are kept: the job's, reused when the job resumes."""
        jobdir = self.crawler.settings.get("JOBDIR")
        meta = JobMeta.load(Path(jobdir)) if jobdir else None
        reuse = meta is not None and not meta.state.terminal
        fetcher = SitemapFetcher(self.crawler, Path(jobdir) if jobdir else None, reuse=reuse)
        self.crawler.signals.connect(fetcher.close, signal=signals.spider_closed, weak=False)
        return fetcher

    async def _sitemaps_of(
        self, index: SitemapSource, fetcher: SitemapFetcher, from_public: bool
    ) -> tuple[SitemapSource, list[bool]]:
        """The index with its sitemaps fetched, in its order, and for each whether it came
        after a public answer; one that cannot be had is skipped with a warning naming it (its
        rows are missing, the others are checked). ``from_public``: the index itself was
        answered from a public address, so the sitemaps it names are hops after it."""
        parts, public = [], []
        for url in child_urls(index.sitemaps, self.input or str(index.path)):
            try:
                path = await fetcher.fetch(url, after_public=from_public)
                if sitemap_root(read_head(path, url), url) != URLSET:
                    raise InputError(f"{url}: a sitemap index inside an index; not followed")
            except InputError as exc:
                logger.warning("%s (its URLs are not checked)", exc)
                continue
            parts.append(path)
            public.append(fetcher.from_public(url))
        logger.info(
            "%s: a sitemap index of %d sitemaps, %d read (%d fetched now)",
            self.input,
            len(index.sitemaps),
            len(parts),
            fetcher.fetched,
        )
        if index.sitemaps and not parts:  # nothing to check: the run ends as for a bad input
            raise InputError(
                f"{self.input}: none of the {len(index.sitemaps)} sitemaps it names could be "
                "read (the warnings before say why)"
            )
        return index.with_parts(parts), public

    @staticmethod
    def _rows_after_public(source: SitemapSource, public: list[bool]) -> Callable[[int], bool]:
        """Whether a row of the index ``source`` was given by a site: its sitemap's flag."""
        if not any(public):
            return _never
        if all(public):
            return _always
        return lambda row: public[source.part_of(row)]

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
        feeder = self.runtime.feeder
        if feeder is not None and task.host_id >= 0:
            feeder.done(task.host_id)
        self._wake()

    def _invalid_result(self, record: Record) -> Result:
        task = RowTask(record.row, record.url, None, record.expected, record.extra)
        if record.unreadable:  # a line over the limit: the row keeps its number and its line
            assert record.problem is not None
            return self.requests.line(task, [], error="invalid_row", error_message=record.problem)
        try:
            normalise_input(record.url)
        except InvalidURL as exc:
            message = str(exc)
        else:  # pragma: no cover - indexed as invalid, so it raises
            message = "invalid URL"
        return self.requests.line(task, [], error="invalid_url", error_message=message)

    def _url_too_long(self, task: RowTask, url: str) -> Result:
        limit = self.chain_rules.max_url_length
        chain = [hop(url, error="url_too_long")]
        result = self.requests.line(
            task, chain, error="url_too_long", error_message=too_long(url, limit)
        )
        self.requests.finished(task)
        return result

    def _host_unavailable(self, task: RowTask, url: str, down: Unavailable) -> Result:
        result = self.requests.line(
            task,
            [hop(url, error="host_unavailable")],
            error="host_unavailable",
            error_message=down.message(),
            retry_after=down.last.retry_after,
        )
        self.requests.finished(task)
        return result

    # --- no row without a line -------------------------------------------------------------------

    def _nothing_in_flight(self) -> bool:
        engine = self.crawler.engine
        return engine is not None and internals.nothing_in_flight(engine)

    def _lost_rows(self) -> list[Result]:
        """Lines for rows still open when nothing is in flight: some component dropped their
        request without an answer or an error (a middleware filtering it, for instance)."""
        lost = self.ledger.open_tasks()
        if not lost:
            return []
        logger.error(
            "%d rows had their request dropped without an answer by a Scrapy component "
            "(rows %s): recorded with error 'ignored'",
            len(lost),
            ", ".join(str(row) for row in sorted(lost)[:20]),
        )
        lines = []
        for request in lost.values():
            chain: list[Hop] = [*request.meta[m.CHAIN]]
            end = self.chain_rules.on_failure(
                chain,
                request.url,
                "ignored",
                "the request was dropped by a Scrapy component without an answer or an error",
            )
            lines.append(self.requests.finish(request, chain, end))
        return lines

    def internal_error(
        self, response: Response, exception: BaseException
    ) -> Iterator[Request | Result] | None:
        """The line of the row whose callback raised ``exception`` (RowErrorsMiddleware), and
        those of its copies."""
        if m.TASK not in response.meta:
            return None
        chain: list[Hop] = [*response.meta[m.CHAIN]]
        message = f"urlcheck failed on this answer ({type(exception).__name__}: {exception})"
        end = self.chain_rules.on_failure(chain, response.url, "internal_error", message)
        chain[-1]["status"] = response.status
        return self._with_copies(self.requests.finish(response, chain, end))

    def _line_written(self, item: object) -> None:
        if isinstance(item, Result):
            self.ledger.written(item.row)

    def _check_every_row(self, reason: str) -> None:
        if reason != "finished" or self.csv_path is None:
            # paused, cancelled or stopped: the rows left are for the resume; or a worker of a
            # distributed job, whose lines the coordinator writes (and checks there)
            return
        count, first = self.ledger.missing()
        if not count:
            return
        assert self.crawler.stats is not None
        self.crawler.stats.set_value("urlcheck/rows_missing", count)
        logger.error(
            "%d rows fed to the crawl have no result line (rows %s%s): results are incomplete; "
            "this is a bug, please report it",
            count,
            ", ".join(map(str, first)),
            ", ..." if count > len(first) else "",
        )

    # --- one hop ---------------------------------------------------------------------------------

    def parse_hop(self, response: Response) -> Request | Result | Iterator[Request | Result] | None:
        meta = response.meta
        if meta[m.TASK].row in self._closed_rows:
            return None  # a cancel already gave this row its line
        latency = meta.get("download_latency")
        locations = response.headers.getlist(b"Location")
        status = response.status
        page = 200 <= status < 300  # only a 2xx final page is read for its indexing
        tls_warnings, cert_expires = self._certificate(response)
        answer = Answer(
            url=response.url,
            status=status,
            method=response.request.method if response.request is not None else "GET",
            location=locations[0] if locations else None,
            extra_locations=tuple(locations[1:]),
            text=response.text if isinstance(response, TextResponse) and response.body else None,
            ms=None if latency is None else round(latency * 1000),
            blocked=meta.get(m.BLOCKED),
            content_type=_header(response, b"Content-Type") if page else None,
            robots_headers=_headers(response, b"X-Robots-Tag") if page else (),
            link_headers=_headers(response, b"Link") if page else (),
            proxied=bool(meta.get(m.PROXY)),
            tls_warnings=tls_warnings,
            cert_expires=cert_expires,
        )
        chain: list[Hop] = [*meta[m.CHAIN]]
        step = self.chain_rules.on_answer(meta[m.TASK], chain, answer)
        out = self._next(response, chain, step)
        return self._line(out) if isinstance(out, Result) else out

    def hop_failed(self, failure: Failure) -> Result | Iterator[Request | Result] | None:
        request: Request = failure.request  # type: ignore[attr-defined]
        if request.meta[m.TASK].row in self._closed_rows:
            return None  # a cancel already gave this row its line
        chain: list[Hop] = [*request.meta[m.CHAIN]]
        refused = failure.value
        if isinstance(refused, LocationTooLongError):  # an answer: its status and Location kept
            end = self.chain_rules.on_location_too_long(
                chain, request.url, refused.status, refused.location, refused.size
            )
            return self._line(self.requests.finish(request, chain, end))
        try:
            kind, message = classify_failure(failure)
        except Exception as exc:  # an errback that raised would leave the row without a line
            logger.exception("Internal error classifying %r for %s", failure.value, request.url)
            kind, message = (
                "internal_error",
                f"urlcheck failed on this error ({type(exc).__name__}: {exc})",
            )
        certificate = self._refused_certificate(request) if kind == "tls" else ()
        if certificate:
            message = (
                f"certificate refused (URLCHECK_TLS=strict): {', '.join(certificate)}; "
                "a browser shows an error page"
            )
        end = self.chain_rules.on_failure(chain, request.url, kind, message, certificate)
        return self._line(self.requests.finish(request, chain, end))

    def _certificate(self, response: Response) -> tuple[tuple[str, ...], str | None]:
        """An https hop's certificate check (urlcheck.check.tls): its warnings and expiry."""
        ledger = self.runtime.certificates
        check = None if ledger is None else ledger.of_response(response)
        if check is None:
            return (), None
        warnings, expires = hop_tls(check, datetime.now(UTC))
        return tuple(warnings), expires

    def _refused_certificate(self, request: Request) -> tuple[str, ...]:
        ledger = self.runtime.certificates
        url = urlparse_cached(request)
        check = None if ledger is None else ledger.refused(url.hostname or "", url.port or 443)
        return () if check is None else tuple(check.problems)

    def _next(self, response: Response, chain: list[Hop], step: Step) -> Request | Result:
        if isinstance(step, Finish):
            return self.requests.finish(response, chain, step)
        meta = response.meta
        # Once a public address has answered, the rest of the chain may not reach private space.
        after_public = bool(meta.get(m.AFTER_PUBLIC)) or is_public(response.ip_address)
        return self.requests.request(
            meta[m.TASK],
            step.url,
            chain,
            retries=retries_spent(meta),
            method=step.method,
            after_public=after_public,
        )

    # --- cancel (docs/jobs.md, "cancel") --------------------------------------------------------

    _closed_rows: set[int]  # rows a cancel ended; a late answer for them is dropped

    async def wind_down(self, grace: float) -> None:
        """A cancel: no new row starts; rows in hand finish the hop in flight (up to ``grace``
        seconds); those still open then get their line, ``error: "cancelled"`` with the chain so
        far. Rows whose first request never left the queue get none (they were not started)."""
        engine = self.crawler.engine
        if not engine.paused:
            engine.pause()  # the scheduler is drained no more; downloads in flight go on
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while internals.requests_in_downloader(engine.downloader) and loop.time() < deadline:
            await asyncio.sleep(0.05)
        # By row: a retry is a copy of the request the row last made.
        in_flight = {
            request.meta[m.TASK].row
            for request in internals.requests_in_downloader(engine.downloader)
            if m.TASK in request.meta
        }
        message = "the job was cancelled before this row's chain ended"
        # The ledger's open rows, each with its latest request (whose meta holds the chain).
        for row, request in sorted(self.ledger.open_tasks().items()):
            chain: list[Hop] = [*request.meta[m.CHAIN]]
            if row in in_flight:
                end = self.chain_rules.on_failure(chain, request.url, "cancelled", message)
            elif chain:
                end = Finish(error="cancelled", error_message=message)
            else:
                continue  # never started
            self._closed_rows.add(row)
            await internals.process_item(self.crawler, self.requests.finish(request, chain, end))


def _always(row: int) -> bool:
    return True


def _never(row: int) -> bool:
    return False


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return None if value is None else value.decode("latin-1")


def _headers(response: Response, name: bytes) -> tuple[str, ...]:
    # A few values at most: a page may repeat a header, not flood the result with it.
    return tuple(v.decode("latin-1") for v in response.headers.getlist(name)[:8])
