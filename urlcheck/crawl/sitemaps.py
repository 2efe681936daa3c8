"""Sitemaps fetched by the crawl itself: an input given as an http(s) URL, and the sitemaps a
sitemap index names (docs/csv-input.md, "Sitemaps").

Each is one request through the engine's downloader (``download_async``): the downloader
middlewares apply (robots.txt, the address guard, proxies, the user agent) and so does the
host's download slot, so a sitemap is fetched as politely as any checked URL. Redirects are
followed by hand (the crawl's redirects are off), at most :data:`MAX_REDIRECTS`, http(s) only.
Scrapy's DOWNLOAD_MAXSIZE bounds each body; the reader caps a gzip body once decompressed.

The address guard judges each fetch as it judges a row's chain (docs/security.md): a sitemap
given by the user is an input row; a redirect after a public answer, and a sitemap an index
fetched from a public address names, are hops after a public answer (they came from a site, not
from the user), and so are the URLs such a sitemap lists: :meth:`SitemapFetcher.from_public`.

What is fetched is kept: in the job directory under ``sitemaps/`` (so that a resume reads the
same documents without fetching them again), or without a job in a temporary directory.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK

from urlcheck.check.addressguard import is_public
from urlcheck.crawl import meta as m
from urlcheck.input.errors import InputError
from urlcheck.input.sitemap import is_remote
from urlcheck.jobs.nofollow import open_nofollow, replace_temp

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

SITEMAPS_DIR = "sitemaps"
MAX_REDIRECTS = 5
META = "urlcheck_sitemap"  # marks the request of a sitemap (not a row)
# Beside each kept sitemap: whether it came after a public answer ("public") or not ("input").
_ORIGIN_SUFFIX = ".origin"
_FROM_INPUT = b"input"


class SitemapFetcher:
    """Fetches sitemaps through ``crawler``'s engine into ``folder``; with ``reuse`` (resuming
    a job) a document fetched before is read from there instead."""

    def __init__(self, crawler: Crawler, jobdir: Path | None, *, reuse: bool) -> None:
        self.crawler = crawler
        self._temporary = jobdir is None
        self.folder = (
            Path(tempfile.mkdtemp(prefix="urlcheck-sitemaps-"))
            if jobdir is None
            else jobdir / SITEMAPS_DIR
        )
        self.reuse = reuse and jobdir is not None
        self.fetched = 0
        self._from_public: dict[str, bool] = {}

    def path_for(self, url: str) -> Path:
        digest = hashlib.sha256(url.encode("utf-8", "surrogateescape")).hexdigest()
        return self.folder / f"{digest[:24]}.xml"

    def from_public(self, url: str) -> bool:
        """Whether the sitemap fetched from ``url`` came after a public answer (it, or what
        named it, was answered from a public address): what it names is then judged as a hop
        after a public answer, never as an input row."""
        return self._from_public.get(url, True)  # not fetched here: judged the strict way

    def _input_origin_path(self, checksum: str) -> Path:
        return self.folder / f"input-{checksum[:24]}{_ORIGIN_SUFFIX}"

    def keep_input_origin(self, checksum: str, public: bool) -> None:
        """Remember, for the job's copy of its input (sha256 ``checksum``: a sitemap fetched by
        URL), whether it came after a public answer: a resume from the copy judges it the same."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.folder.is_symlink():
            raise InputError(f"{self.folder}: a symbolic link; refused")
        _write(self._input_origin_path(checksum), b"public" if public else _FROM_INPUT)

    def input_from_public(self, checksum: str) -> bool:
        """Whether the job's input (sha256 ``checksum``) is a sitemap fetched after a public
        answer; an input never fetched (the user's file) is not."""
        if not checksum:
            return False
        kept = _read_origin(self._input_origin_path(checksum))
        return kept is not None and kept != _FROM_INPUT

    async def fetch(self, url: str, *, after_public: bool = False) -> Path:
        """The file holding the sitemap at ``url``; InputError (one line) when it cannot be
        had. ``after_public``: what named it was answered from a public address."""
        path = self.path_for(url)
        origin = path.with_name(path.name + _ORIGIN_SUFFIX)
        if self.reuse and path.is_file() and not path.is_symlink():
            # A kept sitemap without its origin (or with one unreadable) counts as public.
            kept = _read_origin(origin)
            self._from_public[url] = after_public or kept != _FROM_INPUT
            return path
        body, public = await self._download(url, after_public)
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.folder.is_symlink():
            raise InputError(f"{self.folder}: a symbolic link; refused")
        # The origin first: a sitemap kept without it is judged as public on a resume.
        _write(origin, b"public" if public else _FROM_INPUT)
        _write(path, body)
        self._from_public[url] = public
        self.fetched += 1
        return path

    async def _download(self, url: str, after_public: bool) -> tuple[bytes, bool]:
        """The body, and whether a public address answered on the way (or before)."""
        engine = self.crawler.engine
        assert engine is not None
        where = url
        for _ in range(MAX_REDIRECTS + 1):
            if not is_remote(where):
                raise InputError(f"{url}: the sitemap redirects to {where!r}, not an http(s) URL")
            request = Request(
                where,
                callback=NO_CALLBACK,
                dont_filter=True,
                meta={META: True, m.AFTER_PUBLIC: after_public},
            )
            try:
                response = await engine.download_async(request)
            except IgnoreRequest as exc:
                raise InputError(
                    f"{url}: the sitemap was not fetched ({exc or 'refused, robots.txt?'})"
                ) from None
            except Exception as exc:  # noqa: BLE001 (any failure to download: one line)
                raise InputError(
                    f"{url}: the sitemap could not be fetched ({type(exc).__name__}: {exc})"
                ) from None
            # As in a row's chain: once a public address has answered, private space is out.
            after_public = after_public or is_public(response.ip_address)
            location = response.headers.get(b"Location")
            if response.status in (301, 302, 303, 307, 308) and location:
                where = urljoin(where, location.decode("latin-1").strip())
                continue
            if response.status != 200:
                raise InputError(
                    f"{url}: the sitemap could not be fetched (HTTP {response.status})"
                )
            return response.body, after_public
        raise InputError(f"{url}: the sitemap redirects more than {MAX_REDIRECTS} times")

    def close(self) -> None:
        if self._temporary:
            shutil.rmtree(self.folder, ignore_errors=True)


def _write(path: Path, data: bytes) -> None:
    tmp = replace_temp(path)
    try:
        with open_nofollow(tmp, "xb") as out:
            out.write(data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _read_origin(path: Path) -> bytes | None:
    try:
        with open_nofollow(path, "rb") as f:
            return f.read(16).strip()
    except OSError:
        return None


def child_urls(children: list[str], index: str) -> list[str]:
    """The http(s) sitemaps an index names, relative ones resolved against the index's URL
    (when it has one); the others are skipped with a warning."""
    base = index if is_remote(index) else ""
    found = []
    for child in children:
        url = urljoin(base, child) if base else child
        if is_remote(url):
            found.append(url)
        else:
            logger.warning("%s: skipped the sitemap %r (not an http(s) URL)", index, child)
    return found
