"""An upload, read as hostile input: the body is capped while it streams (413 past the cap, before
the rest is read), the form may hold the input file and the allowlisted options only (a form can
never pass a raw ``-s`` or ``-a``), and the file (a CSV, a plain list, a sitemap, a workbook: the
kind found from its content, as ``urlcheck check`` finds it) is read by the crawl's own reader
before a job exists, so a bad file is a 400 with the reader's words and no job. Nothing the file
names is fetched here: a sitemap index's sitemaps are fetched by its job's crawl, politely and
through the address guard, as any row is."""

from __future__ import annotations

import re
import shutil
import unicodedata
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from urlcheck.config.crawlconfig import USER_AGENTS
from urlcheck.input.errors import InputError
from urlcheck.input.kind import open_source
from urlcheck.serve.sites import index_sites, input_sites, is_index, is_sitemap_url

if TYPE_CHECKING:
    from starlette.requests import Request

FILE_FIELD = "file"
URL_FIELD = "sitemap_url"  # instead of a file: a sitemap (or index) the job's crawl fetches
METHODS = ("GET", "HEAD")
TEMPORARY = ("fail", "warn")
MAX_HOPS_LIMIT = 30
NAME_MAX = 100
SHEET_MAX = 31  # Excel allows a sheet name 31 characters
_FORM_FIELDS = frozenset(
    {FILE_FIELD, URL_FIELD, "user_agent", "method", "max_hops", "temporary_redirect", "name"}
    | {"sheet"}
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


class UploadError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class JobOptions:
    """What the upload form may choose, and nothing else."""

    user_agent: str = "urlcheck"
    method: str = "GET"
    max_hops: int = 10
    temporary_redirect: str = "fail"
    sheet: str = ""  # a workbook's sheet to read (-a sheet=); empty: its first

    @classmethod
    def from_form(cls, form: Mapping[str, str]) -> JobOptions:
        agent = (form.get("user_agent") or "urlcheck").strip().lower()
        if agent not in USER_AGENTS:
            raise UploadError(
                400, f"user_agent must be one of {', '.join(USER_AGENTS)}, got {_shown(agent)}"
            )
        method = (form.get("method") or "GET").strip().upper()
        if method not in METHODS:
            raise UploadError(400, f"method must be GET or HEAD, got {_shown(method)}")
        hops_text = (form.get("max_hops") or "10").strip()
        if not hops_text.isdigit() or not 0 <= int(hops_text) <= MAX_HOPS_LIMIT:
            raise UploadError(
                400, f"max_hops must be a whole number 0-{MAX_HOPS_LIMIT}, got {_shown(hops_text)}"
            )
        temporary = (form.get("temporary_redirect") or "fail").strip().lower()
        if temporary not in TEMPORARY:
            raise UploadError(
                400, f"temporary_redirect must be fail or warn, got {_shown(temporary)}"
            )
        # Any text: the workbook's reader finds the sheet or names the ones it has.
        sheet = clean_text(form.get("sheet") or "", 4 * SHEET_MAX)
        if len(sheet) > SHEET_MAX:
            raise UploadError(400, f"sheet: a sheet's name is at most {SHEET_MAX} characters")
        return cls(agent, method, int(hops_text), temporary, sheet)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobOptions:
        """Options read back from serve.json, checked again: the file is not trusted."""
        return cls.from_form({k: str(v) for k, v in data.items() if k in _FORM_FIELDS})

    def to_dict(self) -> dict[str, Any]:
        return {
            "user_agent": self.user_agent,
            "method": self.method,
            "max_hops": self.max_hops,
            "temporary_redirect": self.temporary_redirect,
            "sheet": self.sheet,
        }

    def settings(self) -> list[str]:
        """The crawl's ``-s NAME=VALUE`` for these options."""
        return [
            f"URLCHECK_USER_AGENT={self.user_agent}",
            f"URLCHECK_METHOD={self.method}",
            f"URLCHECK_MAX_HOPS={self.max_hops}",
            f"URLCHECK_TEMPORARY_REDIRECT={self.temporary_redirect}",
        ]


def _shown(value: str) -> str:
    return repr(clean_text(value, 40))


def clean_text(value: str, limit: int) -> str:
    """A name fit to show: no control or bidi characters, NFC, at most ``limit`` characters."""
    text = _CONTROL.sub("", unicodedata.normalize("NFC", value)).strip()
    return text[:limit]


@dataclass
class Upload:
    csv: Path | None  # the uploaded file (any input kind), in the job's directory-to-be
    filename: str  # as the browser named it, cleaned; or the sitemap's URL
    name: str
    options: JobOptions
    sitemap_url: str = ""  # given instead of a file: fetched by the job's crawl


async def _capped(request: Request, cap: int, limit: int) -> AsyncGenerator[bytes, None]:
    """The body, cut off past ``cap`` (the file's ``limit`` plus room for the form)."""
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > cap:
            raise UploadError(413, f"the upload is over the limit of {limit:,} bytes")
        yield chunk


async def receive(request: Request, target: Path, max_bytes: int) -> Upload:
    """Read the multipart form into ``target`` (the CSV) and the options; raises UploadError."""
    # The multipart framing adds a few hundred bytes to the file; the cap is the file's.
    cap = max_bytes + 64 * 1024
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > cap:
        raise UploadError(413, f"the upload is over the limit of {max_bytes:,} bytes")
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise UploadError(
            400,
            "send the input file as multipart/form-data, in a field named 'file' (or a "
            "sitemap's URL in 'sitemap_url')",
        )
    parser = MultiPartParser(
        request.headers,
        _capped(request, cap, max_bytes),
        max_files=1,
        max_fields=8,
        max_part_size=4096,
    )
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise UploadError(400, f"the form could not be read: {exc}") from None
    try:
        unknown = sorted(set(form.keys()) - _FORM_FIELDS)
        if unknown:
            raise UploadError(400, f"unknown form fields: {', '.join(map(_shown, unknown))}")
        upload = form.get(FILE_FIELD)
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        options = JobOptions.from_form(fields)
        url = sitemap_url(fields.get(URL_FIELD, ""))
        # A browser sends a file field with no file chosen as an empty part without a name.
        chosen = isinstance(upload, UploadFile) and bool(upload.filename or upload.size)
        if url and chosen:
            raise UploadError(400, "give an input file or a sitemap's URL, not both")
        if url:
            name = clean_text(fields.get("name", ""), NAME_MAX) or clean_text(url, NAME_MAX)
            return Upload(None, url, name, options, url)
        if not chosen or not isinstance(upload, UploadFile):
            raise UploadError(
                400,
                "no input file in the form (a file field named 'file'), nor a sitemap's URL "
                "('sitemap_url')",
            )
        size = 0
        with target.open("xb") as out:
            while chunk := await upload.read(1 << 20):
                size += len(chunk)
                if size > max_bytes:
                    raise UploadError(413, f"the file is over the limit of {max_bytes:,} bytes")
                out.write(chunk)
        filename = clean_text(Path(upload.filename or "upload.csv").name, NAME_MAX) or "upload.csv"
        name = clean_text(fields.get("name", ""), NAME_MAX) or filename
        return Upload(target, filename, name, options)
    finally:
        await form.close()


def sitemap_url(value: str) -> str:
    """A sitemap's URL as the form gave it, checked (empty: none given); UploadError 400 for
    one that is no http(s) URL. Fetched later by the job's crawl, under its rules (the address
    guard, robots.txt, the host's pace), never by the server."""
    url = value.strip()
    if not url:
        return ""
    if _CONTROL.search(url) or not is_sitemap_url(url):
        raise UploadError(400, f"sitemap_url must be an http(s) URL, got {_shown(url)}")
    return url


def inspect_csv(path: Path, shown_as: str, max_rows: int, sheet: str = "") -> tuple[int, list[str]]:
    """The input's rows (``sheet``'s, of a workbook) and the sites they name; UploadError 400
    for a file the crawl would refuse (in the reader's words, naming the file as the user knows
    it), 413 past ``max_rows``. A sitemap index: 0 rows (its crawl counts them once it has
    fetched its sitemaps, and holds them to ``max_rows`` then) and its sitemaps' sites."""
    rows = 0
    sites: set[str] = set()
    try:
        source = open_source(path, sheet=sheet or None)
        try:
            if is_index(source):
                sites = index_sites(source)
                if not sites:
                    raise UploadError(
                        400, f"{shown_as}: a sitemap index that names no http(s) sitemap"
                    )
                return 0, sorted(sites)
            for record in source.records():
                rows += 1
                if rows > max_rows:
                    raise UploadError(413, f"the input has more than {max_rows:,} rows")
                sites.update(input_sites(record.url, record.expected))
        finally:
            source.close()
    except InputError as exc:
        raise UploadError(400, str(exc).replace(str(path), shown_as)) from None
    except (OSError, UnicodeError, ValueError) as exc:
        why = str(exc).replace(str(path), shown_as)
        raise UploadError(400, f"{shown_as}: the file could not be read ({why})") from None
    return rows, sorted(sites)


def discard(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
