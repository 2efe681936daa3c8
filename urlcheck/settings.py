"""Scrapy settings of the urlcheck project.

Every default here is a promise to the sites we check: see docs/politeness.md. Each can be
overridden per run with ``-s NAME=VALUE``. urlcheck's own settings (``URLCHECK_*``) are parsed
once, validated, into typed configs (:mod:`urlcheck.config.crawlconfig`); their defaults live there.
"""

BOT_NAME = "urlcheck"
SPIDER_MODULES = ["urlcheck.spiders"]
NEWSPIDER_MODULE = "urlcheck.spiders"
COMMANDS_MODULE = "urlcheck.commands"

# --- Politeness (docs/politeness.md) -------------------------------------------------------------
CONCURRENT_REQUESTS = 5  # in flight overall
CONCURRENT_REQUESTS_PER_DOMAIN = 1  # in flight per host (download slot = hostname)
DOWNLOAD_DELAY = 0.3  # seconds between the starts of two requests to one host
# Scrapy randomises the delay by +-50% by default, which breaks the 300 ms floor.
DOWNLOAD_DELAY_JITTER = 0
# AutoThrottle may only raise a slow host's delay: its floor is DOWNLOAD_DELAY.
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.3
AUTOTHROTTLE_MAX_DELAY = 60
AUTOTHROTTLE_TARGET_CONCURRENCY = 1.0
# Pops a host only when it is idle, past its delay and not backing off (no head-of-line blocking).
SCHEDULER_PRIORITY_QUEUE = "urlcheck.crawl.scheduling.PoliteHostQueue"
# results.jsonl is the job's source of truth; Scrapy's pickled queue and requests.seen are not
# crash-safe (docs/jobs.md), so the scheduler keeps its (small, lazily fed) queue in memory.
SCHEDULER = "urlcheck.crawl.scheduling.MemoryScheduler"
DUPEFILTER_CLASS = "scrapy.dupefilters.BaseDupeFilter"  # chains detect their own loops

# --- What reaches the spider ---------------------------------------------------------------------
# Every hop is its own scheduled request (so it gets its own host's politeness): Scrapy must not
# follow redirects or meta refreshes itself, and every status is a result.
REDIRECT_ENABLED = False
METAREFRESH_ENABLED = False
HTTPERROR_ALLOW_ALL = True
# 429/503 are handled by the per-host back-off (urlcheck.middlewares.backoff); 5xx and 4xx are
# results, not reasons to retry. Network errors get Scrapy's retry, twice.
RETRY_HTTP_CODES: list[int] = []
RETRY_TIMES = 2
DOWNLOAD_TIMEOUT = 20
# URL length is judged by the spider (URLCHECK_MAX_URL_LENGTH): an over-long URL or Location gets
# its line with url_too_long, where Scrapy's UrlLengthMiddleware (2,083) drops it silently.
URLLENGTH_LIMIT = 0
# Bodies are cut at URLCHECK_BODY_MAX_BYTES by urlcheck.middlewares.bodycap; no Scrapy-side limit.
DOWNLOAD_MAXSIZE = 0
DOWNLOAD_WARNSIZE = 0
# Only encodings whose decompression we can bound (a gzip bomb must not cost memory).
DEFAULT_REQUEST_HEADERS = {
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "Accept-Language": "en",
    "Accept-Encoding": "gzip, deflate",
}
# A preset (urlcheck, chrome, firefox, safari, googlebot, googlebot-smartphone, bingbot) or any
# string; it becomes USER_AGENT unless USER_AGENT itself is set with a higher priority.
URLCHECK_USER_AGENT = "urlcheck"
# A checker sees each URL as a first-time visitor would: no cookie jar. robots.txt is not
# consulted because a redirect audit must see what users and search engines are sent, and
# urlcheck's own politeness is stricter than most crawl-delay rules. Both are settings.
COOKIES_ENABLED = False
ROBOTSTXT_OBEY = False

# The address guard (docs/security.md): what a hop may connect to is judged on the address
# actually connected to, so the HTTP handler itself checks it.
DOWNLOAD_HANDLERS = {
    "http": "urlcheck.crawl.downloadhandler.GuardedHTTPDownloadHandler",
    "https": "urlcheck.crawl.downloadhandler.GuardedHTTPDownloadHandler",
}

DOWNLOADER_MIDDLEWARES = {
    # process_request runs in ascending order, process_response in descending order.
    # With ROBOTSTXT_OBEY: Scrapy's, with robots.txt requests judged by the address guard as the
    # request that caused them (docs/security.md).
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "urlcheck.middlewares.robotstxt.GuardedRobotsTxtMiddleware": 100,
    # Below RetryMiddleware (550): sees each request's last outcome; gives up on down hosts.
    # Below them all that retry: a captcha or block page met without a proxy ends the row
    # ``blocked`` (the proxy middleware judges proxied responses itself).
    "urlcheck.middlewares.walls.BotWallMiddleware": 530,
    "urlcheck.middlewares.circuit.HostCircuitMiddleware": 540,
    "urlcheck.middlewares.backoff.HostBackoffMiddleware": 560,
    # Off (NotConfigured) unless URLCHECK_PROXIES or URLCHECK_PROXY_FILE name proxies.
    "urlcheck.middlewares.proxy.ProxyPoolMiddleware": 580,
    "urlcheck.middlewares.bodycap.BodyCapMiddleware": 595,
    # Off (NotConfigured) unless URLCHECK_HEADERS, URLCHECK_COOKIES or URLCHECK_AUTH is set;
    # after Scrapy's CookiesMiddleware (700), so the configured cookies join the jar's.
    "urlcheck.middlewares.siteaccess.SiteAccessMiddleware": 710,
}
SPIDER_MIDDLEWARES = {
    # Closest to the spider: a callback that raises still gives its row a line (internal_error).
    "urlcheck.middlewares.rowerrors.RowErrorsMiddleware": 950,
}
ITEM_PIPELINES = {
    "urlcheck.pipelines.ResultsPipeline": 300,
}
# Distributed mode (docs/distributed.md), only when REDIS_URL is set: the scheduler that leases
# work from Redis, the pipeline that commits results there (290) and the coordinator (120).
# Without REDIS_URL a crawl loads nothing of it, not even redis-py.
ADDONS = {
    "urlcheck.crawl.addon.DistributedMode": 0,
}
EXTENSIONS = {
    # A job's -o exports are written from results.jsonl at the end of each run (docs/jobs.md).
    "scrapy.extensions.feedexport.FeedExporter": None,
    # A job directory is untrusted input (docs/security.md): SpiderState would unpickle
    # JOBDIR/spider.state, running whatever code it names. urlcheck keeps no spider state.
    "scrapy.extensions.spiderstate.SpiderState": None,
    # Every log line printable: a CSV's or a site's ESC sequences and bidi controls escaped.
    "urlcheck.extensions.printablelogs.PrintableLogs": 0,
    "urlcheck.extensions.jobfeeds.JobFeeds": 0,
    "urlcheck.extensions.jobcontrol.JobControl": 100,
    "urlcheck.extensions.progress.Progress": 110,
    # Off (NotConfigured) unless URLCHECK_METRICS_PORT or URLCHECK_METRICS_FILE is set.
    "urlcheck.extensions.metrics.Metrics": 520,
    "urlcheck.extensions.summary.Summary": 500,
    "urlcheck.extensions.hostreport.HostReport": 505,
    # Off (NotConfigured) unless ROBOTSTXT_OBEY: robots.txt's Crawl-delay per host.
    "urlcheck.extensions.crawldelay.CrawlDelay": 506,
    "urlcheck.extensions.proxyprobes.ProxyProbes": 510,
    "scrapy.extensions.telnet.TelnetConsole": None,
}

# --- Feed exports (-o results.csv): flat columns, the chain in one readable cell -----------------
# -o results.csv:excel (a BOM, URLCHECK_EXCEL_DELIMITER) and -o results.xlsx: for Excel.
# -o report.md:markdown and -o junit.xml:junit: a summary with the failing rows, and a CI artefact.
FEED_EXPORTERS = {
    "csv": "urlcheck.crawl.exporters.SafeCsvItemExporter",
    "excel": "urlcheck.crawl.exporters.ExcelCsvItemExporter",
    "xlsx": "urlcheck.crawl.exporters.XlsxItemExporter",
    "markdown": "urlcheck.crawl.exporters.MarkdownItemExporter",
    "junit": "urlcheck.crawl.exporters.JUnitItemExporter",
}
FEED_EXPORT_ENCODING = "utf-8"

# Each callback returns one result or one next hop. Scrapy 2.19 starts CONCURRENT_ITEMS asyncio
# tasks for every callback's output (100 by default): profiled as the largest CPU cost per URL.
CONCURRENT_ITEMS = 1

# Scrapy 2.19's RemoteControl runs arbitrary Python sent to a local port, inside the process
# that holds the proxy credentials; `scrapy job` is urlcheck's control channel instead.
REMOTE_CONTROL_ENABLED = False

LOG_LEVEL = "INFO"
