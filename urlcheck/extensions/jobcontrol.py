"""JobControl: keeps meta.json current during a crawl and obeys control.json.

Driven by the :class:`~urlcheck.jobs.context.JobContext` the spider sets on the crawl's runtime
(:mod:`urlcheck.crawl.runtime`) before its first request. Every ``URLCHECK_JOB_POLL_INTERVAL``
seconds it reads control.json and acts on a new ``seq``: pause (the engine stops taking requests
from the scheduler; requests in flight finish), resume, or cancel (the spider closes with reason
``cancelled``). It writes meta.json when the run opens, on every state change, as a heartbeat
while there is activity or back-off, and when the spider closes. Reference: docs/jobs.md.

Intervals (the heartbeat, the rate) are measured on the monotonic clock; the wall clock only
stamps the times written down. ``last_activity_at`` goes with its monotonic reading and the
boot id (urlcheck.clock), so ``scrapy job status`` and ``scrapy job run`` measure the job's
silence on the monotonic clock: a wall clock step makes no healthy crawl stuck.

meta.json's ``many_to_one`` is judged over the whole job's results.jsonl, read from its start
(a resumed job's earlier rows a bounded part per write, the rest when the spider closes) into a
compact :class:`~urlcheck.jobs.landings.LandingHashes`; judging costs a pass over the
redirected rows, so it is repeated at most every :data:`JUDGE_EVERY` seconds (longer when it is
slow), and once more at the close. That closing judgement is the crawl's only one: the Summary
extension shows and counts it (``Runtime.job_landings``) rather than keeping a tally of its own.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro

from urlcheck.clock import boot_id, parse_utc_iso, utc_iso
from urlcheck.crawl import internals
from urlcheck.crawl.runtime import runtime
from urlcheck.crawl.writefailure import write_failed
from urlcheck.jobs.done import read_tail
from urlcheck.jobs.errors import JobError
from urlcheck.jobs.files import (
    META_FILE,
    BackoffHost,
    Control,
    ControlAction,
    JobMeta,
    JobState,
)
from urlcheck.jobs.landings import LandingHashes, ManyToOneSeen
from urlcheck.jobs.lock import held_since
from urlcheck.jobs.progress import Heartbeat, RunRate
from urlcheck.jobs.reserve import release_reserve
from urlcheck.signals import job_paused, job_resumed

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall
    from twisted.python.failure import Failure

    from urlcheck.clock import Clock
    from urlcheck.config.crawlconfig import JobControlConfig
    from urlcheck.jobs.context import JobContext

logger = logging.getLogger(__name__)

# many_to_one: a resumed job's earlier lines read per write (a 1M-row file in a few minutes),
# and the shortest interval between judgements, which take at most ~5% of the time.
FEED_BUDGET = 8 << 20
JUDGE_EVERY = 10.0
JUDGE_SHARE = 20


def effective_settings(crawler: Crawler) -> dict[str, Any]:
    """The values this run really uses for the settings that shape results and pace, defaults
    included (meta.json's ``settings``): the parsed config, and Scrapy's own as Scrapy reads
    them."""
    config, settings = runtime(crawler).config, crawler.settings
    check, backoff = config.check, config.backoff
    return {
        "URLCHECK_METHOD": check.method,
        "URLCHECK_MAX_HOPS": check.max_hops,
        "URLCHECK_FOLLOW_META_REFRESH": check.follow_meta_refresh,
        "URLCHECK_VERDICT_IGNORE_TRAILING_SLASH": check.ignore_trailing_slash,
        "URLCHECK_TEMPORARY_REDIRECT": check.temporary_redirect,
        "URLCHECK_MAX_CHAIN_HOPS": check.max_chain_hops,
        **check.audit.setting_values(),
        "URLCHECK_MANY_TO_ONE_ROWS": check.audit.many_to_one_rows,
        "URLCHECK_MANY_TO_ONE_SHARE": check.audit.many_to_one_share,
        "URLCHECK_TLS": config.tls.mode,  # whether certificates were verified at all
        "URLCHECK_BACKOFF_BASE": backoff.base,
        "URLCHECK_BACKOFF_MAX": backoff.maximum,
        "URLCHECK_BACKOFF_RETRIES": backoff.retries,
        "URLCHECK_BACKOFF_HTTP_CODES": list(backoff.http_codes),
        "COOKIES_ENABLED": settings.getbool("COOKIES_ENABLED"),
        "ROBOTSTXT_OBEY": settings.getbool("ROBOTSTXT_OBEY"),
        "CONCURRENT_REQUESTS": settings.getint("CONCURRENT_REQUESTS"),
        "CONCURRENT_REQUESTS_PER_DOMAIN": settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN"),
        "DOWNLOAD_DELAY": settings.getfloat("DOWNLOAD_DELAY"),
        "DOWNLOAD_TIMEOUT": settings.getfloat("DOWNLOAD_TIMEOUT"),
        "RETRY_TIMES": settings.getint("RETRY_TIMES"),
        "URLCHECK_JOB_STUCK_AFTER": config.jobs.stuck_after,
        **config.access.described(),  # hosts and names only: the values are secrets
    }


def _host_keys(hosts: list[BackoffHost]) -> list[tuple[str, int]]:
    return [(host.host, host.attempt) for host in hosts]


class JobControl:
    def __init__(
        self,
        crawler: Crawler,
        jobdir: Path,
        config: JobControlConfig,
        *,
        clock: Clock = time.time,
        monotonic: Clock = time.monotonic,
        many_to_one: tuple[int, float] | None = None,
    ) -> None:
        self.crawler = crawler
        self.jobdir = jobdir
        self.config = config
        self.clock = clock  # the wall clock, for the times written down
        self.monotonic = monotonic  # for intervals: every ``now`` below is its reading
        self.context: JobContext | None = None
        self.meta: JobMeta | None = None
        self.state = JobState.PROCESSING
        now = monotonic()
        self._rate = RunRate(0, now)
        self._heartbeat = Heartbeat(config.heartbeat_interval, now)
        self._task: AsyncioLoopingCall | LoopingCall | None = None
        self._last_control: Control | None = None
        self._control_error: str | None = None
        self._cancelling = False
        self._last_write = -math.inf
        self._written_hosts: list[BackoffHost] = []
        self._effective: dict[str, Any] | None = None
        self._many_to_one = many_to_one  # (rows, share), None: the check is off
        self._landings: LandingHashes | None = None
        self._judged_lines = -1  # lines the last judgement covered (-1: none yet)
        self._judge_after = -math.inf
        self._judged_at_close = False  # closing_landings judged (it does once)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        jobdir = crawler.settings.get("JOBDIR")
        if not jobdir:
            raise NotConfigured  # no JOBDIR, no job: nothing to warn about
        config = runtime(crawler).config
        audit = config.check.audit
        many_to_one = (
            (audit.many_to_one_rows, audit.many_to_one_share) if audit.on("many_to_one") else None
        )
        extension = cls(crawler, Path(jobdir), config.jobs, many_to_one=many_to_one)
        if many_to_one is not None and config.results_enabled:
            # (Without results.jsonl the job's judgement has none of this run's rows.)
            runtime(crawler).job_landings = extension.closing_landings
        connect = crawler.signals.connect
        connect(extension.spider_opened, signal=signals.spider_opened)
        connect(extension.spider_closed, signal=signals.spider_closed)
        connect(extension.item_scraped, signal=signals.item_scraped)
        connect(extension.activity, signal=signals.response_received)
        connect(extension.activity, signal=signals.request_left_downloader)
        return extension

    # --- signals ---------------------------------------------------------------------------

    def spider_opened(self) -> None:
        # A request written before this process took the job (e.g. the cancel that ended the
        # last run) is history, not an order for this run; one written since (a pause sent while
        # this crawl was starting: `scrapy job pause` sees the lock held) is for it.
        control = self._read_control()
        since = held_since(self.jobdir)
        # (control.json's time is cut to the millisecond: one written in the lock's own
        # millisecond is this run's)
        if control is not None and since is not None and _written_at(control) >= since - 0.001:
            control = None
        self._last_control = control
        self._find_context()
        self._task = create_looping_call(self._tick)
        self._task.start(self.config.poll_interval, now=False)

    def activity(self) -> None:
        self._heartbeat.activity(self.monotonic())

    def item_scraped(self) -> None:
        # Counting is done from results.jsonl itself (_catch_up): only the sign of life here.
        self._find_context()
        self._heartbeat.activity(self.monotonic())

    def spider_closed(self, reason: str) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()
        context = self._find_context()
        if context is None:
            logger.debug("Spider closed before it set job_context: %s left as it was", self.jobdir)
            release_reserve(self.jobdir)
            return
        now = self.monotonic()
        self._catch_up()
        self.closing_landings()
        if reason == "cancelled":
            self.state = JobState.CANCELLED
        elif reason == "finished" and context.done_rows >= context.total_rows:
            self.state = JobState.DONE
        else:
            self.state = JobState.PAUSED
            if reason == "finished":
                logger.warning(
                    "Spider finished with %d of %d rows done: job %s left paused; run it again",
                    context.done_rows,
                    context.total_rows,
                    self.jobdir,
                )
        try:
            meta = self._write(now, hosts=[], closing_reason=reason)
        finally:
            release_reserve(self.jobdir)
            if context.lock is not None:
                context.lock.release()
        stats = self.crawler.stats
        if stats is not None:
            stats.set_value("urlcheck/job/state", self.state.value)
        logger.info(
            "Job %s %s: %d/%d rows done; results in %s",
            self.jobdir,
            self.state.value,
            meta.done_rows,
            meta.total_rows,
            context.results_path,
        )

    def closing_landings(self) -> ManyToOneSeen | None:
        """many_to_one over the whole job as the crawl closes, judged by the first call: this
        extension's spider_closed, or the Summary's (``Runtime.job_landings``) if it runs first.
        None without a job context (the spider closed before it had one) or with the check off.
        """
        if self._find_context() is None or self.meta is None:
            return None
        if not self._judged_at_close:
            self._judged_at_close = True
            try:
                self._judge_landings(self.monotonic(), closing=True)
            except OSError:  # the job's state is written all the same
                logger.exception("Job %s: could not judge many_to_one", self.jobdir)
        return self.meta.many_to_one

    # --- the tick --------------------------------------------------------------------------

    def _tick(self) -> None:
        now = self.monotonic()
        try:
            self._find_context()
            self._poll_control(now)
            if self.context is None:
                return
            if now - self._last_write < self.config.status_interval:
                return
            hosts = self._backoff_hosts()
            heartbeat = self._heartbeat.due(now, backoff=bool(hosts))
            changed = self._catch_up() or _host_keys(hosts) != _host_keys(self._written_hosts)
            changed = self._judge_landings(now) or changed
            if changed or heartbeat:
                self._write(now, hosts)
        except (OSError, JobError):
            # A hand-edited file (or one that can't be read) must not stop pause/cancel from
            # working; a write that failed has stopped the crawl already (_write).
            logger.exception("Job %s: could not update the job files", self.jobdir)

    def _catch_up(self) -> bool:
        """Count what the results pipeline appended since the last call; True if anything.

        The file is the job's truth, so meta.json's counts are its counts, and
        ``results_bytes`` tells ``scrapy job status`` exactly where to go on after a crash.
        Costs one read of ~2 s of appended lines, from the page cache.
        """
        context = self.context
        if context is None:
            return False
        tail = read_tail(context.results_path, context.results_bytes)
        context.results_bytes = tail.end
        if not tail.lines:
            return False
        context.done_rows += tail.lines
        context.counts.merge(tail.counts)
        return True

    def _judge_landings(self, now: float, *, closing: bool = False) -> bool:
        """Read on in results.jsonl for many_to_one and judge it when due; True if meta.json's
        ``many_to_one`` changed."""
        landings, context, meta = self._landings, self.context, self.meta
        if landings is None or context is None or meta is None:
            return False
        landings.feed(context.results_path, None if closing else FEED_BUDGET)
        if landings.lines == self._judged_lines or not (closing or now >= self._judge_after):
            return False
        # A resumed job keeps the last run's judgement until this one has read as far.
        known = meta.many_to_one
        if not closing and known is not None and landings.lines < known.read_rows:
            return False
        started = self.monotonic()
        seen = landings.result(context.results_path)
        cost = self.monotonic() - started
        self._judge_after = now + max(JUDGE_EVERY, JUDGE_SHARE * cost)
        self._judged_lines = landings.lines
        changed = seen != known
        meta.many_to_one = seen
        return changed

    def _find_context(self) -> JobContext | None:
        if self.context is None:
            context = runtime(self.crawler).job_context
            if context is not None:
                self.context = context
                self._open(context, self.monotonic())
        return self.context

    def _open(self, context: JobContext, now: float) -> None:
        if context.jobdir.resolve() != self.jobdir.resolve():
            logger.warning(
                "job_context.jobdir %s differs from JOBDIR %s; using JOBDIR",
                context.jobdir,
                self.jobdir,
            )
        self.jobdir.mkdir(parents=True, exist_ok=True)
        try:
            meta = JobMeta.load(self.jobdir)
        except JobError as exc:
            logger.warning("Starting %s afresh: %s", self.jobdir, exc)
            meta = None
        self.meta = meta if meta is not None else JobMeta()
        wall = self.clock()
        self.meta.created_at = self.meta.created_at or utc_iso(wall)
        self.meta.started_at = utc_iso(wall)
        self.meta.finished_at = None
        self.meta.finish_reason = None
        known = self.meta.many_to_one
        if self._many_to_one is None or (known is not None and known.read_rows > context.done_rows):
            # Off this run, or judged over lines the file no longer has: not current.
            self.meta.many_to_one = None
        if self._many_to_one is not None:
            self._landings = LandingHashes(*self._many_to_one)
        self.state = JobState.PAUSED if self.crawler.engine.paused else JobState.PROCESSING
        self._rate = RunRate(context.done_rows, now)
        if self.state is JobState.PAUSED:
            self._rate.pause(now)
        self._heartbeat.activity(now)
        self._write(now, self._backoff_hosts())

    def _backoff_hosts(self) -> list[BackoffHost]:
        assert self.context is not None
        try:
            hosts = self.context.paused_hosts()
        except Exception:  # the back-off's report must not stop job control
            logger.exception("job_context.paused_hosts() failed")
            return []
        return [BackoffHost(host, attempt, round(left, 1)) for host, attempt, left in hosts]

    def _write(self, now: float, hosts: list[BackoffHost], closing_reason: str = "") -> JobMeta:
        context, meta = self.context, self.meta
        assert context is not None
        assert meta is not None
        meta.state = self.state
        meta.total_rows = context.total_rows
        meta.done_rows = context.done_rows
        meta.counts = context.counts.copy()
        meta.input_path = str(context.input_path)
        meta.input_sha256 = context.input_checksum
        meta.results_path = str(context.results_path.resolve())
        meta.results_bytes = context.results_bytes
        meta.stuck_after = self.config.stuck_after
        meta.user_agent = context.user_agent
        meta.settings = self._settings()
        wall = self.clock()
        meta.updated_at = utc_iso(wall)
        last_activity = self._heartbeat.last_activity
        meta.last_activity_at = utc_iso(wall - (now - last_activity))
        meta.last_activity_monotonic = last_activity
        meta.boot_id = boot_id()
        meta.rate = self._rate.rate(context.done_rows, now)
        meta.backoff_hosts = hosts
        if closing_reason:
            meta.finish_reason = closing_reason
            meta.finished_at = utc_iso(wall) if self.state.terminal else None
        try:
            meta.save(self.jobdir)
        except OSError as exc:  # a full disk: stop the crawl (urlcheck.crawl.writefailure)
            # With the room kept for this (urlcheck.jobs.reserve), the job's state is still
            # written; the crawl stops all the same, unless it is stopping for this already.
            saved = release_reserve(self.jobdir) and self._save_again(meta)
            if not saved or runtime(self.crawler).write_failure is None:
                write_failed(self.crawler, self.jobdir / META_FILE, exc)
            if not saved:
                return meta
        self._heartbeat.wrote(now)
        self._last_write = now
        self._written_hosts = hosts
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value("urlcheck/job/meta_writes")
        return meta

    def _save_again(self, meta: JobMeta) -> bool:
        try:
            meta.save(self.jobdir)
        except OSError:
            return False
        return True

    def _settings(self) -> dict[str, Any]:
        if self._effective is None:
            self._effective = effective_settings(self.crawler)
        return self._effective

    # --- control.json ----------------------------------------------------------------------

    def _read_control(self) -> Control | None:
        try:
            control = Control.load(self.jobdir)
        except JobError as exc:
            if str(exc) != self._control_error:
                self._control_error = str(exc)
                logger.warning("Ignoring control file: %s", exc)
            return self._last_control
        self._control_error = None
        return control

    def _poll_control(self, now: float) -> None:
        control = self._read_control()
        if control is None or control == self._last_control:
            return
        self._last_control = control
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(f"urlcheck/job/control/{control.action.value}")
        if self._cancelling:
            return
        if control.action is ControlAction.PAUSE:
            self._pause(now, control.seq)
        elif control.action is ControlAction.RESUME:
            self._resume(now, control.seq)
        else:
            self._cancel(control.seq)

    def _pause(self, now: float, seq: int) -> None:
        if self.state is JobState.PAUSED:
            logger.info("Job %s is already paused (control seq %d)", self.jobdir, seq)
            return
        self.crawler.engine.pause()
        self.state = JobState.PAUSED
        self._rate.pause(now)
        logger.info(
            "Job %s paused (control seq %d): requests in flight finish, no new ones start",
            self.jobdir,
            seq,
        )
        if self.context is not None:
            self._write(now, self._backoff_hosts())
        self.crawler.signals.send_catch_log(job_paused)

    def _resume(self, now: float, seq: int) -> None:
        if self.state is not JobState.PAUSED:
            logger.info("Job %s is not paused (control seq %d)", self.jobdir, seq)
            return
        engine = self.crawler.engine
        engine.unpause()
        self.state = JobState.PROCESSING
        self._rate.resume(now)
        self._heartbeat.activity(now)
        logger.info("Job %s resumed (control seq %d)", self.jobdir, seq)
        # Without a nudge the engine would only look at its scheduler again on its 5 s heartbeat.
        internals.wake_engine(engine)
        if self.context is not None:
            self._write(now, self._backoff_hosts())
        self.crawler.signals.send_catch_log(job_resumed)

    def _cancel(self, seq: int) -> None:
        self._cancelling = True
        logger.info("Job %s cancelled (control seq %d): closing the spider", self.jobdir, seq)
        closing = deferred_from_coro(self._close_cancelled())
        closing.addErrback(self._cancel_failed)

    async def _close_cancelled(self) -> None:
        # The rows in hand end first (their hop in flight, or a "cancelled" line), so that a
        # row started is never left without its line.
        wind_down = runtime(self.crawler).wind_down
        if wind_down is not None:
            await wind_down(self.config.cancel_grace)
        await self.crawler.engine.close_spider_async(reason="cancelled")

    def _cancel_failed(self, failure: Failure) -> None:
        logger.error(
            "Job %s: closing the spider for a cancel failed: %s",
            self.jobdir,
            failure.getErrorMessage(),
        )


def _written_at(control: Control) -> float:
    try:
        return parse_utc_iso(control.at)
    except ValueError:
        return -math.inf  # a time no run could have written: history
