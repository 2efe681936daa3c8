"""Each input kind found from its content and read as the input numbers its rows: plain lists,
sitemaps (plain, gzip, hostile); what is none of them refused in one line."""

from __future__ import annotations

import gzip
import io
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from urlcheck.input.errors import InputError
from urlcheck.input.kind import open_source, sniff_kind
from urlcheck.input.sitemap import SitemapSource, _PlainUrls
from urlcheck.input.sniff import SAMPLE_BYTES

if TYPE_CHECKING:
    from urlcheck.input.record import Record

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def write(tmp_path: Path, data: bytes, name: str = "input") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def read(path: Path) -> tuple[str, list[Record]]:
    """The kind and every record, each checked to come back identical from read_at."""
    source = open_source(path)
    try:
        records = list(source.records())
        for record in reversed(records):
            assert source.read_at(record.offset, record.row) == record
        return source.kind, records
    finally:
        source.close()


def urls(records: list[Record]) -> list[tuple[int, str]]:
    return [(r.row, r.url) for r in records]


# --- what kind ---


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"url,expected\nhttps://a/,https://b/\n", "csv"),
        (b"url\nhttps://a/\nhttps://b/\n", "csv"),  # one named column: still a CSV
        (b"https://a/,https://b/\nhttps://c/,https://d/\n", "csv"),
        (b"#,url\n1,https://a/\n", "csv"),  # "#" as a column name is no comment
        (b'"https://a/"\n"https://b/"\n', "csv"),  # quoted cells
        (b"https://a/\nhttps://b/\n", "list"),
        (b"# mine\nhttps://a/?x=1,2\nwww.b.example\n", "list"),
        (b"\xef\xbb\xbfhttps://a/\r\n", "list"),
        # a delimiter in every line, but in its URL's query or path parameters: the URL's own
        (b"https://a/?ids=1,2\nhttps://a/?ids=3,4\n", "list"),
        (b"https://a/x;jsessionid=A1\nhttps://a/y;jsessionid=B2\nwww.a.example/?c=1|2\n", "list"),
        # ...unless what it would cut off is a URL, a path's comma or words: a CSV's cells
        (b"https://a/?x=1,https://b/\nhttps://a/?x=2,https://b/\n", "csv"),
        (b"https://a/x,301\nhttps://a/y,301\n", "csv"),
        (b"https://a/?x=1;moved away\nhttps://a/?x=2;moved away\n", "csv"),
        (f"<urlset {NS}><url><loc>https://a/</loc></url></urlset>".encode(), "sitemap"),
        (b'<?xml version="1.0"?>\n<!-- hi --><sitemapindex/>', "sitemap"),
        (gzip.compress(b"<urlset/>", mtime=0), "sitemap"),
        # UTF-16, by its byte-order mark or, without one, by "<?xml" (the XML spec's way)
        ('<?xml version="1.0" encoding="UTF-16"?><urlset/>'.encode("utf-16"), "sitemap"),
        ("\ufeff<sitemapindex/>".encode("utf-16-be"), "sitemap"),
        ('<?xml version="1.0"?>\n<urlset/>'.encode("utf-16-le"), "sitemap"),
        ('<?xml version="1.0"?><urlset/>'.encode("utf-16-be"), "sitemap"),
        (gzip.compress("<urlset/>".encode("utf-16"), mtime=0), "sitemap"),
        ("https://a/\n<b>\n".encode("utf-16"), "list"),
        (b"PK\x03\x04rest", "xlsx"),
    ],
)
def test_the_kind_comes_from_the_content(data, kind):
    assert sniff_kind(data, "f") == kind


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"<html><body>hi</body></html>", "f: an HTML page (its root is <html>), not a sitemap"),
        # as pages start: it was "an XML document with a DTD", or "XML" for <!doctype html>
        (b"<!DOCTYPE html>\n<html><body>hi</body></html>", "f: an HTML page (its root is <html>)"),
        (b"\n<!doctype html><title>t</title>", "f: an HTML page (its root is <html>)"),
        (b'<?xml version="1.0"?><rss/>', "f: XML (its root is <rss>), not a sitemap"),
        ("<html><body>hi</body></html>".encode("utf-16"), "f: an HTML page (its root is"),
        (
            '<?xml version="1.0"?><!DOCTYPE u SYSTEM "x"><urlset/>'.encode("utf-16-le"),
            "f: an XML document with a DTD",
        ),
        (gzip.compress(b"https://a/\n", mtime=0), "f: a gzip archive that holds no sitemap"),
        # a sitemap with no entry to check: it was a run "finished", exit 0, that checked nothing
        (f"<urlset {NS}>\n</urlset>".encode(), "f: the sitemap holds no <url> entry"),
        (
            f'\n\n<?xml version="1.0"?><urlset {NS}><url><loc>https://a/</loc></url></urlset>'.encode(),
            "f: not well-formed XML at line 3 (XML declaration allowed only at the start of the "
            "document, line 3, column 6); no <url> entry could be read",
        ),
        # what Excel saves of a sheet with formatted empty rows: no list of the URL ",,,"
        (b",,,\r\n,,,\r\n", "f: the file has no rows, only blank lines"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "f: not a CSV text file, it looks like a PNG image"),
        # a DTD is where entity bombs and external entities live: no sitemap has one
        (
            b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "aaaaaaaa"><!ENTITY b "&a;&a;&a;">]>'
            b"<urlset><url><loc>&b;</loc></url></urlset>",
            "f: an XML document with a DTD; a sitemap has none, refused",
        ),
        (
            b'<!DOCTYPE urlset SYSTEM "file:///etc/passwd"><urlset/>',
            "f: an XML document with a DTD; a sitemap has none, refused",
        ),
    ],
)
def test_what_is_no_input_is_refused_in_one_line(tmp_path, monkeypatch, data, message):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, data, "f")
    with pytest.raises(InputError) as info:
        open_source("f")
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


# --- plain lists ---


def test_a_list_numbers_its_rows_by_line_and_keeps_each_line_whole(tmp_path):
    data = b"# my URLs\nhttps://a.example/\n\n  https://b.example/?q=1,2  \r\n\t# off\nc.example\n"
    kind, records = read(write(tmp_path, data))
    assert kind == "list"
    assert urls(records) == [
        (2, "https://a.example/"),
        (4, "https://b.example/?q=1,2"),
        (6, "c.example"),
    ]
    assert all(r.expected is None and r.extra == {} for r in records)
    assert records[0].offset == data.index(b"https://a")


def test_a_list_keeps_the_delimiters_of_its_urls(tmp_path):
    # every line splits at a ';' or a ',': read as a CSV, each URL was cut there
    data = b"https://a.example/x;jsessionid=A1\r\nhttps://a.example/y;jsessionid=B2\r\n"
    assert urls(read(write(tmp_path, data))[1]) == [
        (1, "https://a.example/x;jsessionid=A1"),
        (2, "https://a.example/y;jsessionid=B2"),
    ]
    data = b"https://a.example/?color=red,blue\nhttps://a.example/?size=1,2\n"
    assert read(write(tmp_path, data))[0] == "list"


@pytest.mark.parametrize("codec", ["utf-8", "utf-16"])
def test_a_list_line_over_the_line_limit_is_a_row_that_is_not_read(tmp_path, monkeypatch, codec):
    # it was dropped without a word: no result line, no warning, as if it were blank
    monkeypatch.setattr("urlcheck.input.lines.MAX_LINE", 5000)
    text = "https://a.example/\nhttps://a.example/?" + "y" * 20_000 + "\nhttps://b.example/\n"
    kind, records = read(write(tmp_path, text.encode(codec)))
    assert (kind, [(r.row, r.url, r.unreadable) for r in records]) == (
        "list",
        [(1, "https://a.example/", False), (2, "", True), (3, "https://b.example/", False)],
    )
    assert records[1].problem is not None
    assert records[1].problem.startswith("the line is over the line limit (")


def test_a_list_in_utf16_and_a_list_of_comments(tmp_path):
    data = "https://a.example/ü\r\nhttps://b.example/\r\n".encode("utf-16")
    kind, records = read(write(tmp_path, data))
    assert (kind, urls(records)) == (
        "list",
        [(1, "https://a.example/ü"), (2, "https://b.example/")],
    )
    with pytest.raises(InputError, match="the list holds no URL, only blank or # lines"):
        open_source(write(tmp_path, b"# nothing yet\n\n# really\n", "empty.txt"))


def test_a_resume_skips_done_lines(tmp_path):
    source = open_source(write(tmp_path, b"https://a/\n# c\nhttps://b/\nhttps://c/\n"))
    assert urls(list(source.records(skip={1, 3}.__contains__))) == [(4, "https://c/")]


# --- sitemaps ---

URLSET = f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- made by hand -->
<urlset {NS} xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc>
      https://a.example/
    </loc>
    <lastmod>2024-01-02</lastmod>
    <image:image><image:loc>https://img.example/1.png</image:loc></image:image>
  </url>
  <url><lastmod>2024-03-04T05:06:07+00:00</lastmod></url>
  <url><changefreq>daily</changefreq><loc>https://b.example/?a=1&amp;b=2</loc></url>
  <url><loc>https://c.example/tab\there</loc><lastmod>
</lastmod></url>
</urlset>
""".encode()


@pytest.mark.parametrize("packed", [False, True], ids=["xml", "xml.gz"])
def test_a_sitemap_gives_each_url_its_ordinal_and_lastmod(tmp_path, packed):
    data = gzip.compress(URLSET) if packed else URLSET
    kind, records = read(write(tmp_path, data, "sitemap.xml.gz" if packed else "sitemap.xml"))
    assert kind == "sitemap"
    assert [(r.row, r.url, r.extra) for r in records] == [
        (1, "https://a.example/", {"lastmod": "2024-01-02"}),
        (2, "", {"lastmod": "2024-03-04T05:06:07+00:00"}),  # no <loc>: an invalid_url row
        (3, "https://b.example/?a=1&b=2", {}),
        (4, "https://c.example/tab\there", {}),
    ]


def test_a_utf16_sitemap_is_read_whole_even_when_its_head_ends_mid_character(tmp_path):
    entries = "".join(f"<url><loc>https://ü.example/{i}</loc></url>" for i in range(1, 3_001))
    data = f"<urlset {NS}>{entries}</urlset>".encode("utf-16")
    assert len(data) > SAMPLE_BYTES and SAMPLE_BYTES % 2 == 0
    cut = data[: SAMPLE_BYTES - 1]  # the sniffers' head, cut in the middle of a character
    assert sniff_kind(cut, "f") == "sitemap"
    kind, records = read(write(tmp_path, data))
    assert (kind, len(records), records[-1].url) == ("sitemap", 3_000, "https://ü.example/3000")


def test_a_sitemap_without_namespace_and_a_resume(tmp_path):
    entries = "".join(f"<url><loc>https://a.example/{i}</loc></url>" for i in range(1, 10_001))
    path = write(tmp_path, f"<urlset>{entries}</urlset>".encode())
    kind, records = read(path)
    assert (kind, len(records), records[-1].url) == ("sitemap", 10_000, "https://a.example/10000")
    source = open_source(path)
    left = list(source.records(skip=lambda row: row <= 9_998))
    assert urls(left) == [(9_999, "https://a.example/9999"), (10_000, "https://a.example/10000")]
    assert source.read_at(left[0].offset, 9_999) == left[0]


def test_a_sitemap_that_breaks_off_keeps_the_entries_before(tmp_path, caplog):
    path = write(tmp_path, URLSET[: URLSET.index(b"<changefreq>")])
    with caplog.at_level(logging.WARNING):
        _kind, records = read(path)
    assert [r.row for r in records] == [1, 2]
    assert f"{path}: not well-formed XML at line" in caplog.text
    assert "the entries after it are not read" in caplog.text


def test_a_gzip_bomb_stops_at_the_cap(tmp_path):
    entry = b"<url><loc>https://a.example/</loc></url>"
    bomb = write(tmp_path, gzip.compress(b"<urlset>" + entry * 100_000 + b"</urlset>"))
    source = SitemapSource(bomb, max_bytes=1 << 20)
    with pytest.raises(InputError, match="over 1,048,576 bytes once decompressed"):
        for _ in source.records():
            pass
    source.close()


def test_entities_are_never_expanded(tmp_path):
    # past the DTD check (none declared): an undeclared entity is an XML error, not a fetch
    path = write(
        tmp_path,
        f"<urlset {NS}><url><loc>https://a/</loc></url><url><loc>&x;</loc></url></urlset>".encode(),
    )
    _kind, records = read(path)
    assert urls(records) == [(1, "https://a/")]


def test_an_index_names_http_sitemaps_only(caplog):
    from urlcheck.crawl.sitemaps import child_urls
    from urlcheck.input.sitemap import is_remote

    children = ["https://a.example/s1.xml", "/s2.xml.gz", "file:///etc/passwd", "ftp://x/s.xml"]
    with caplog.at_level(logging.WARNING):
        assert child_urls(children, "https://a.example/index.xml") == [
            "https://a.example/s1.xml",
            "https://a.example/s2.xml.gz",
        ]
        assert child_urls(children, "index.xml") == ["https://a.example/s1.xml"]  # a local index
    assert "skipped the sitemap 'file:///etc/passwd' (not an http(s) URL)" in caplog.text
    assert [is_remote(a) for a in ("https://a/", "HTTP://a/x", "http:/a", "a.xml", "-")] == [
        True,
        True,
        False,
        False,
        False,
    ]


def test_a_local_index_reads_its_sitemaps_in_order(tmp_path):
    index = write(
        tmp_path,
        f"<sitemapindex {NS}><sitemap><loc> https://a.example/1.xml </loc></sitemap>"
        f"<sitemap><loc>https://a.example/2.xml</loc><lastmod>x</lastmod></sitemap>"
        "</sitemapindex>".encode(),
        "index.xml",
    )
    one = write(tmp_path, f"<urlset {NS}><url><loc>https://a/1</loc></url></urlset>".encode(), "1")
    two = write(tmp_path, gzip.compress(URLSET), "2")
    source = open_source(index)
    assert isinstance(source, SitemapSource)
    assert (source.root, source.sitemaps) == (
        "sitemapindex",
        ["https://a.example/1.xml", "https://a.example/2.xml"],
    )
    assert list(source.records()) == []  # its sitemaps are the crawl's to fetch
    records = list(source.with_parts([one, two]).records())
    assert urls(records)[:3] == [(1, "https://a/1"), (2, "https://a.example/"), (3, "")]
    assert records[-1].row == 5
    # Which sitemap each row came from (the address guard judges a row by its sitemap's origin).
    assert [source.part_of(r.row) for r in records] == [0, 1, 1, 1, 1]
    source.close()


# --- a sitemap as most sites write it, read by pattern; anything else, by lxml ---


def _entry(n: int) -> str:
    """Entry ``n`` of a sitemap that holds each kind of entry the pattern reads, in turn."""
    loc = f"https://a.example/{n}?x=1&amp;y=2"
    return {
        0: f"<url><loc>{loc}</loc></url>",
        1: f"\n  <url>\n    <loc>\n      {loc}\n    </loc>\n    <lastmod>2024-01-02</lastmod>\n"
        "    <changefreq>daily</changefreq>\n    <priority>0.5</priority>\n  </url>",
        2: f"<url><loc>{loc}&#13;&#233;</loc><lastmod> </lastmod><priority>1</priority></url>",
        3: f"<url><loc>{loc}\r\nend</loc><lastmod>2024-&#x30;3</lastmod></url>",
    }[n % 4]


def _urlset(entries: int, odd_after: int | None, first: int = 1) -> bytes:
    body = []
    for n in range(first, first + entries):
        body.append(_entry(n))
        if n == odd_after:  # an image extension: lxml reads on from here
            body.append(
                f"<url><loc>https://i.example/{n}</loc><image:image><image:loc>"
                f"https://i.example/{n}.png</image:loc></image:image></url>"
            )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS} '
        'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
        + "".join(body)
        + "</urlset>\n"
    ).encode()


def test_a_sitemap_reads_the_same_by_pattern_and_by_lxml(tmp_path):
    entries = 1_500  # past the first read (64 KiB): the switch comes mid-document
    documents = {
        "plain": _urlset(entries, None),
        "lxml": _urlset(entries, None).replace(b"<url>", b"<!-- --><url>", 1),
        "switch": _urlset(entries, 1_200),
    }
    plain = _PlainUrls(io.BytesIO(documents["plain"]))
    assert sum(len(batch) for batch in plain.batches()) == entries and plain.finished
    switch = _PlainUrls(io.BytesIO(documents["switch"]))
    assert sum(len(batch) for batch in switch.batches()) == switch.read
    assert 0 < switch.read < 1_200 and not switch.finished
    lxml = _PlainUrls(io.BytesIO(documents["lxml"]))
    assert list(lxml.batches()) == [] and lxml.read == 0

    read_as = {}
    for name, data in documents.items():
        _, records = read(write(tmp_path, data, f"{name}.xml"))
        read_as[name] = [(r.row, r.url, r.extra) for r in records]
    image = read_as["switch"].pop(1_200)  # the entry with an image: only in that one
    assert image == (1_201, "https://i.example/1200", {})
    assert (
        read_as["plain"]
        == read_as["lxml"]
        == [(row, url, extra) for row, url, extra in read_as["switch"][:1_200]]
        + [(row - 1, url, extra) for row, url, extra in read_as["switch"][1_200:]]
    )
    found = {row: (url, extra) for row, url, extra in read_as["plain"]}
    assert found[4] == ("https://a.example/4?x=1&y=2", {})
    assert found[5] == ("https://a.example/5?x=1&y=2", {"lastmod": "2024-01-02"})
    # a reference to a carriage return is kept, a line end in the text is LF, as in lxml
    assert found[6] == ("https://a.example/6?x=1&y=2\ré", {})
    assert found[7] == ("https://a.example/7?x=1&y=2\nend", {"lastmod": "2024-03"})


def test_an_index_switching_to_lxml_in_its_second_sitemap_numbers_rows_across(tmp_path):
    index = write(tmp_path, f"<sitemapindex {NS}/>".encode(), "index.xml")
    one = write(tmp_path, _urlset(10, None), "1.xml")
    two = write(tmp_path, gzip.compress(_urlset(1_500, 1_300, first=11)), "2.xml.gz")
    source = open_source(index)
    assert isinstance(source, SitemapSource)
    records = list(source.with_parts([one, two]).records())
    assert [r.row for r in records] == list(range(1, 1_512))
    assert records[7].url == "https://a.example/8?x=1&y=2"  # from the first sitemap
    assert records[11].url == "https://a.example/12?x=1&y=2"  # from the second
    assert records[1_300].url == "https://i.example/1300"  # row 1,301: the image entry
    assert records[1_301].url == "https://a.example/1301?x=1&y=2"
    assert source.part_of(1_301) == 1 and source.part_of(10) == 0
    assert source.read_at(records[1_400].offset, 1_401) == records[1_400]
    source.close()


@pytest.mark.parametrize("odd", ["]]>", "\x01", "&#1;", "&#xFFFE;", "a & b", "&nbsp;"])
def test_what_a_parser_refuses_is_left_to_the_parser(tmp_path, odd):
    data = f"<urlset {NS}><url><loc>https://a/1</loc></url><url><loc>{odd}</loc></url></urlset>"
    plain = _PlainUrls(io.BytesIO(data.encode()))
    assert list(plain.batches()) == [] and plain.read == 0
    by_lxml = data.replace("<url>", "<!-- --><url>", 1)

    def outcome(text: str) -> object:
        """The rows lxml read before the error, or the error (when it read none)."""
        try:
            return urls(read(write(tmp_path, text.encode(), "sitemap.xml"))[1])
        except InputError as exc:
            return re.sub(r"column \d+", "column N", str(exc))  # the comment moves them

    assert outcome(data) == outcome(by_lxml)
