"""Which sites a job visits, for politeness across jobs: two jobs that share a site never run at
once (docs/serve.md, "Politeness across jobs").

A site is a host's registrable domain (``www.example.co.uk`` -> ``example.co.uk``, from the
public suffix list bundled with tldextract, never fetched), or the host itself for an address or
a name without one. Grouping by site rather than host is deliberately coarse: the usual
redirects (``example.com`` -> ``www.example.com``, ``old.example.com`` -> ``new.example.com``)
stay within one site, so a job whose rows redirect into another job's hosts is kept apart
from it too. Too coarse costs parallelism, never politeness.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import TypeGuard

from tldextract import TLDExtract

from urlcheck.check.urls import InvalidURL, host_key, normalise_input
from urlcheck.input.kind import Source, open_source
from urlcheck.input.sitemap import INDEX, SitemapSource, is_remote

_EXTRACT = TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True)
URL_MAX = 2048  # a sitemap's URL given instead of a file


@functools.lru_cache(maxsize=65536)
def site_of(host: str) -> str:
    host = host.strip("[]").lower().rstrip(".")
    if not host:
        return ""
    return _EXTRACT(host).top_domain_under_public_suffix or host


def site_of_url(url: str) -> str:
    return site_of(host_key(url))


def input_sites(url: str, expected: str | None) -> Iterable[str]:
    """The sites an input row names: its URL's and its expected target's."""
    for raw in (url, expected):
        if raw:
            try:
                site = site_of(normalise_input(raw).host)
            except InvalidURL:
                continue
            if site:
                yield site


def is_sitemap_url(value: str) -> bool:
    """Whether a sitemap's URL, given instead of a file (the form, or serve.json read back),
    is one a crawl may be started on: http(s), printable, no spaces, at most URL_MAX."""
    return len(value) <= URL_MAX and value.isprintable() and " " not in value and is_remote(value)


def is_index(source: Source) -> TypeGuard[SitemapSource]:
    return isinstance(source, SitemapSource) and source.root == INDEX


def index_sites(index: SitemapSource) -> set[str]:
    """The sites of the http(s) sitemaps an index names: its rows' sites before the crawl has
    fetched them (sitemaps.org keeps a sitemap's URLs on its own host), to which the sites its
    chains visit are added as they come."""
    sites: set[str] = set()
    for url in index.sitemaps:
        if is_remote(url):  # as the crawl takes them (a relative one has no base in a file)
            sites.update(input_sites(url, None))
    return sites


def csv_sites(path: Path) -> tuple[int, set[str]]:
    """The rows of a job's input (any kind) and the sites they name (a full read of the file);
    for a sitemap index (a job made by ``urlcheck check``), the sites of the sitemaps it names."""
    sites: set[str] = set()
    rows = 0
    source = open_source(path)
    try:
        if is_index(source):
            return 0, index_sites(source)
        for record in source.records():
            rows += 1
            sites.update(input_sites(record.url, record.expected))
    finally:
        source.close()
    return rows, sites
