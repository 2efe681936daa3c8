"""The metric families of a crawl (urlcheck.extensions.metrics), in a registry of their own.

A module apart so that prometheus-client (12 MB resident) is imported only by a crawl that
asks for metrics: the extension is loaded by every crawl, and off in most.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["ACQUIRE_BUCKETS", "CrawlMetrics"]

# Pool acquire is a dict lookup in memory and a Lua call in Redis: 50 us to 100 ms.
ACQUIRE_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1)


class CrawlMetrics:
    """The metric families, in their own registry."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.input_rows = Gauge("urlcheck_input_rows", "Rows in the input CSV", registry=r)
        self.done_rows = Gauge(
            "urlcheck_done_rows", "Rows with a result, earlier runs of the job included", registry=r
        )
        self.rows = Counter("urlcheck_rows", "Result rows written by this run", registry=r)
        self.results = Counter(
            "urlcheck_results",
            "Result rows by the status class of their final answer",
            ["status_class"],
            registry=r,
        )
        self.verdicts = Counter(
            "urlcheck_verdicts", "Result rows by verdict", ["verdict"], registry=r
        )
        self.errors = Counter(
            "urlcheck_errors", "Result rows without a final answer, by kind", ["kind"], registry=r
        )
        self.in_flight = Gauge(
            "urlcheck_requests_in_flight", "Requests in the downloader", registry=r
        )
        self.backoff = Gauge("urlcheck_hosts_backoff", "Hosts in back-off now", registry=r)
        self.unavailable = Gauge(
            "urlcheck_hosts_unavailable", "Hosts given up on as unavailable", registry=r
        )
        # Learned delays as two figures rather than one series per host: a crawl of a million
        # URLs can meet a hundred thousand hosts, and a label per host would be as many series.
        self.slowed = Gauge(
            "urlcheck_hosts_slowed", "Hosts whose delay was raised after 429 answers", registry=r
        )
        self.delay_max = Gauge(
            "urlcheck_host_delay_max_seconds",
            "The longest delay between requests learned for a host (0: none learned)",
            registry=r,
        )
        self.backoff_seconds = Counter(
            "urlcheck_backoff_seconds",
            "Time hosts spent paused by the back-off, added up over hosts",
            registry=r,
        )
        self.proxy_state = Gauge(
            "urlcheck_proxy_state",
            "1 for the state each proxy is in",
            ["proxy", "state"],
            registry=r,
        )
        self.proxy_success = Gauge(
            "urlcheck_proxy_success_ratio",
            "Share of a proxy's recent outcomes that succeeded",
            ["proxy"],
            registry=r,
        )
        self.proxy_captcha = Gauge(
            "urlcheck_proxy_captcha_ratio",
            "Share of a proxy's recent outcomes that met a captcha",
            ["proxy"],
            registry=r,
        )
        self.proxy_responses = Counter(
            "urlcheck_proxy_responses",
            "Leases released, by proxy and outcome (ok, soft, captcha, block, error_<kind>)",
            ["proxy", "outcome"],
            registry=r,
        )
        self.acquire = Histogram(
            "urlcheck_proxy_acquire_seconds",
            "Time the proxy pool took to lease a proxy",
            buckets=ACQUIRE_BUCKETS,
            registry=r,
        )
