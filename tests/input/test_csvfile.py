"""The CSV reader: every input quirk of issue 2, byte offsets and read_at, bad files."""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import os
import random
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import pytest

from urlcheck.input import csvfile
from urlcheck.input.csvfile import CsvSource, InputError, Record, sha256_file
from urlcheck.input.lines import CHUNK


def write(tmp_path: Path, data: bytes, name: str = "urls.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def load(path: Path) -> tuple[CsvSource, list[Record]]:
    """All records, each checked to come back identical from read_at."""
    source = CsvSource(path)
    records = list(source.records())
    with source:
        for record in records:
            assert source.read_at(record.offset, record.row) == record
    return source, records


def at(data: bytes, text: str, encoding: str = "utf-8") -> int:
    return data.index(text.encode(encoding))


# --- encodings ---


def test_utf8_with_header_expected_and_other_columns(tmp_path: Path) -> None:
    data = (
        b"url,expected,note\r\n"
        b"https://a.example/,https://b.example/,first\r\n"
        b"http://c.example/x,,second\r\n"
    )
    source, records = load(write(tmp_path, data))
    assert (source.encoding, source.delimiter, source.has_header) == ("utf-8", ",", True)
    assert (source.header, source.url_column, source.expected_column) == (
        ["url", "expected", "note"],
        "url",
        "expected",
    )
    assert records == [
        Record(
            1, at(data, "https://a"), "https://a.example/", "https://b.example/", {"note": "first"}
        ),
        Record(2, at(data, "http://c"), "http://c.example/x", None, {"note": "second"}),
    ]


def test_utf8_with_bom(tmp_path: Path) -> None:
    data = codecs.BOM_UTF8 + "URL;Ziel\r\nhttps://bücher.example/straße;grün\r\n".encode()
    source, records = load(write(tmp_path, data))
    assert (source.encoding, source.delimiter, source.header) == ("utf-8-sig", ";", ["URL", "Ziel"])
    assert source.url_column == "URL"
    assert records == [
        Record(1, at(data, "https://b"), "https://bücher.example/straße", None, {"Ziel": "grün"})
    ]


# U+0A0A and U+0D0A are 0A 0A and 0A 0D in UTF-16-LE: a reader splitting bytes on \n breaks them;
# str.splitlines() also breaks at U+2028 and U+0085.
TRAPS = "\u0a0a\u0d0a\u2028\x85"


@pytest.mark.parametrize(
    ("bom", "codec"), [(codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")]
)
def test_utf16_excel_unicode_text(tmp_path: Path, bom: bytes, codec: str) -> None:
    text = (
        "Old URL\tNew URL\tTitel\r\n"
        f'https://a.example/é\thttps://b.example/\t"two\r\nlines\t{TRAPS}"\r\n'
        "https://c.example/😀\t\t日本\r\n"
        f"https://d.example/{TRAPS}\thttps://e.example/\t\r\n"
    )
    data = bom + text.encode(codec)
    source, records = load(write(tmp_path, data))
    assert (source.encoding, source.delimiter, source.has_header) == (codec, "\t", True)
    assert (source.url_column, source.expected_column) == ("Old URL", "New URL")
    assert records == [
        Record(
            1,
            at(data, "https://a", codec),
            "https://a.example/é",
            "https://b.example/",
            {"Titel": f"two\r\nlines\t{TRAPS}"},
        ),
        Record(2, at(data, "https://c", codec), "https://c.example/😀", None, {"Titel": "日本"}),
        Record(
            3,
            at(data, "https://d", codec),
            f"https://d.example/{TRAPS}",
            "https://e.example/",
            {"Titel": ""},
        ),
    ]


def test_cp1252_when_not_utf8(tmp_path: Path) -> None:
    # é as 0xE9, € as 0x80; 0x81 is undefined in cp1252 and is read as latin-1 (U+0081).
    data = b"url;titre\nhttps://a.example/caf\xe9;\x80uro \x81\n"
    source, records = load(write(tmp_path, data))
    assert (source.encoding, source.delimiter) == ("cp1252", ";")
    assert records == [
        Record(1, at(data, "https://a"), "https://a.example/café", None, {"titre": "€uro \x81"})
    ]


def test_utf8_and_cp1252_lines_mixed(tmp_path: Path) -> None:
    data = "url\nhttps://a.example/é\n".encode() + b"https://b.example/\xe9\n"
    source, records = load(write(tmp_path, data))
    assert source.encoding == "cp1252"
    assert [r.url for r in records] == ["https://a.example/é", "https://b.example/é"]


# --- delimiters and header ---


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_delimiters(tmp_path: Path, delimiter: str) -> None:
    others = "".join(c for c in ",;|" if c != delimiter)
    rows = [
        ["url", "expected", "note"],
        [f"https://a.example/?q=1{others}2", "https://b.example/", f"x{others}y"],
        ["https://c.example/", "", "z"],
    ]
    data = "".join(delimiter.join(row) + "\r\n" for row in rows).encode()
    source, records = load(write(tmp_path, data))
    assert source.delimiter == delimiter
    assert records == [
        Record(1, at(data, "https://a"), rows[1][0], "https://b.example/", {"note": rows[1][2]}),
        Record(2, at(data, "https://c"), "https://c.example/", None, {"note": "z"}),
    ]


def test_single_column_without_header(tmp_path: Path) -> None:
    data = b"https://a.example/\nwww.b.example/page\n"
    source, records = load(write(tmp_path, data))
    assert (source.delimiter, source.has_header, source.header) == (",", False, [])
    assert (source.url_column, source.expected_column) == (0, None)
    assert records == [
        Record(1, 0, "https://a.example/", None, {}),
        Record(2, at(data, "www.b"), "www.b.example/page", None, {}),
    ]


def test_single_column_with_header(tmp_path: Path) -> None:
    data = b"Address\nhttps://a.example/\n"
    source, records = load(write(tmp_path, data))
    assert (source.delimiter, source.has_header, source.url_column) == (",", True, "Address")
    assert records == [Record(1, at(data, "https://a"), "https://a.example/", None, {})]


def test_headerless_first_row_with_a_column_name_in_it(tmp_path: Path) -> None:
    # "new" is an expected-column name, but the row starts with a URL: it is data.
    data = b"https://a.example/,new\nhttps://b.example/,old,extra\n"
    source, records = load(write(tmp_path, data))
    assert (source.has_header, source.url_column) == (False, 0)
    assert records == [
        Record(1, 0, "https://a.example/", None, {"col2": "new"}),
        Record(
            2, at(data, "https://b"), "https://b.example/", None, {"col2": "old", "col3": "extra"}
        ),
    ]


def test_header_with_unknown_names_is_recognised(tmp_path: Path) -> None:
    data = b"Link,Notes\nhttps://a.example/,n1\nb.example,n2\n"
    source, records = load(write(tmp_path, data))
    assert (source.has_header, source.url_column, source.expected_column) == (True, "Link", None)
    assert [(r.row, r.url, r.extra) for r in records] == [
        (1, "https://a.example/", {"Notes": "n1"}),
        (2, "b.example", {"Notes": "n2"}),
    ]


def test_column_names_any_case_trimmed_blank_and_duplicate(tmp_path: Path) -> None:
    data = b" ID ,Old-URL, NEW URL ,Notes,,Notes\n1,https://a.example/,https://b.example/,n,e,f\n"
    source, records = load(write(tmp_path, data))
    assert source.header == ["ID", "Old-URL", "NEW URL", "Notes", "col5", "Notes.1"]
    assert (source.url_column, source.expected_column) == ("Old-URL", "NEW URL")
    assert records == [
        Record(
            1,
            at(data, "1,"),
            "https://a.example/",
            "https://b.example/",
            {"ID": "1", "Notes": "n", "col5": "e", "Notes.1": "f"},
        ),
    ]


@pytest.mark.parametrize(
    ("names", "url", "expected"),
    [
        ("source,destination", "source", "destination"),
        ("FROM,TO", "FROM", "TO"),
        ("old,new", "old", "new"),
        ("old_url,new_url", "old_url", "new_url"),
        ("address,redirect", "address", "redirect"),
        ("Url,Target", "Url", "Target"),
        ("page,expected", "page", "expected"),  # no URL name: the first column
        # redirect maps' own headers: they gave no expected column, so no row a verdict
        ("Source URL,Destination URL", "Source URL", "Destination URL"),
        ("From URL,To URL", "From URL", "To URL"),
        ("URL,Expected URL", "URL", "Expected URL"),
        ("Page,Target URL", "Page", "Target URL"),
    ],
)
def test_column_names(tmp_path: Path, names: str, url: str, expected: str) -> None:
    source, records = load(
        write(tmp_path, f"{names}\nhttps://a.example/,https://b.example/\n".encode())
    )
    assert (source.url_column, source.expected_column) == (url, expected)
    assert (records[0].url, records[0].expected) == ("https://a.example/", "https://b.example/")


def test_missing_and_extra_cells_and_blank_expected(tmp_path: Path) -> None:
    data = b"url,expected,note\nhttps://a.example/\nhttps://b.example/,  ,n,beyond,,\n"
    _, records = load(write(tmp_path, data))
    assert records == [
        Record(1, at(data, "https://a"), "https://a.example/", None, {"note": ""}),
        Record(
            2, at(data, "https://b"), "https://b.example/", None, {"note": "n", "col4": "beyond"}
        ),
    ]


# --- quoting, blank lines, line endings ---


def test_quoted_fields_with_delimiters_quotes_and_newlines(tmp_path: Path) -> None:
    data = (
        b"url,expected,note\r\n"
        b'"https://a.example/?q=1,2","https://b.example/","He said ""hi""\r\nsecond, line"\r\n'
        b'https://c.example/,,"x"\r\n'
    )
    _, records = load(write(tmp_path, data))
    assert records == [
        Record(
            1,
            at(data, '"https://a'),
            "https://a.example/?q=1,2",
            "https://b.example/",
            {"note": 'He said "hi"\r\nsecond, line'},
        ),
        Record(2, at(data, "https://c"), "https://c.example/", None, {"note": "x"}),
    ]


def test_space_after_delimiter_before_a_quote(tmp_path: Path) -> None:
    data = (
        b"url, expected\n"
        b'https://a.example/, "https://b.example/?x=1,2"\n'
        b"https://c.example/, d.example\n"
    )
    _, records = load(write(tmp_path, data))
    assert [(r.url, r.expected) for r in records] == [
        ("https://a.example/", "https://b.example/?x=1,2"),
        ("https://c.example/", "d.example"),
    ]


def test_blank_lines_are_skipped_and_not_counted(tmp_path: Path) -> None:
    data = (
        b"\r\n  \r\nurl,expected\r\n\r\n  \r\n,,\r\n\t, \r\n"
        b"https://a.example/,x\r\n"
        b'\r\n"",""\r\n ,\r\n'
        b"https://b.example/,\r\n\r\n"
    )
    source, records = load(write(tmp_path, data))
    assert source.has_header
    assert records == [
        Record(1, at(data, "https://a"), "https://a.example/", "x", {}),
        Record(2, at(data, "https://b"), "https://b.example/", None, {}),
    ]


@pytest.mark.parametrize("eol", ["\r\n", "\n", "\r"])
@pytest.mark.parametrize("final_eol", [True, False])
def test_line_endings(tmp_path: Path, eol: str, final_eol: bool) -> None:
    text = eol.join(
        [
            "url,note",
            "https://a.example/,plain",
            f'https://b.example/,"multi{eol}line"',
            "https://c.example/,last",
        ]
    ) + (eol if final_eol else "")
    data = text.encode()
    _, records = load(write(tmp_path, data))
    assert records == [
        Record(1, at(data, "https://a"), "https://a.example/", None, {"note": "plain"}),
        Record(2, at(data, "https://b"), "https://b.example/", None, {"note": f"multi{eol}line"}),
        Record(3, at(data, "https://c"), "https://c.example/", None, {"note": "last"}),
    ]


@pytest.mark.parametrize("quoted", [False, True])
def test_very_long_cells(tmp_path: Path, quoted: bool) -> None:
    long_url = "https://a.example/" + "p" * 300_000
    note = "n" * 1_000_000  # csv's default limit is 131,072 characters
    q = '"' if quoted else ""
    data = f"url,note\n{q}{long_url}{q},{q}{note}{q}\nhttps://b.example/,x\n".encode()
    _, records = load(write(tmp_path, data))
    assert records == [
        Record(1, at(data, q + "https://a"), long_url, None, {"note": note}),
        Record(2, at(data, "https://b"), "https://b.example/", None, {"note": "x"}),
    ]


# --- malformed rows ---

UNCLOSED = "a quoted field is never closed; read from its first line only"


def test_unclosed_quote_does_not_swallow_the_rest(tmp_path: Path) -> None:
    data = (
        b"url,note\n"
        b"https://a.example/,ok\n"
        b'https://b.example/,"never closed\n'
        b"https://c.example/,after\n"
        b'https://d.example/,"at the very end'
    )
    _, records = load(write(tmp_path, data))
    assert records == [
        Record(1, at(data, "https://a"), "https://a.example/", None, {"note": "ok"}),
        Record(
            2, at(data, "https://b"), "https://b.example/", None, {"note": "never closed"}, UNCLOSED
        ),
        Record(3, at(data, "https://c"), "https://c.example/", None, {"note": "after"}),
        Record(
            4,
            at(data, "https://d"),
            "https://d.example/",
            None,
            {"note": "at the very end"},
            UNCLOSED,
        ),
    ]


def test_quote_left_open_stops_at_the_first_line_that_does_not_fit(tmp_path: Path) -> None:
    # A lenient reader would close the field at the quote of row 3 and swallow rows 2-3.
    data = (
        b"url,note\n"
        b'https://a.example/,"open\n'
        b'https://b.example/,"quoted"\n'
        b"https://c.example/,plain\n"
    )
    _, records = load(write(tmp_path, data))
    assert records == [
        Record(1, at(data, "https://a"), "https://a.example/", None, {"note": "open"}, UNCLOSED),
        Record(2, at(data, "https://b"), "https://b.example/", None, {"note": "quoted"}),
        Record(3, at(data, "https://c"), "https://c.example/", None, {"note": "plain"}),
    ]


def test_quote_quirks_within_one_line_are_read_leniently(tmp_path: Path) -> None:
    data = b'url,note\n"https://a.example/" ,"x"y\nhttps://b.ex"ample/,"z"\n'
    _, records = load(write(tmp_path, data))
    assert records == [
        Record(1, at(data, '"https://a'), "https://a.example/ ", None, {"note": "xy"}),
        Record(2, at(data, "https://b"), 'https://b.ex"ample/', None, {"note": "z"}),
    ]


def test_field_over_the_limit_is_read_from_its_first_line(tmp_path: Path) -> None:
    lines = "\n".join(f"https://x{i}.example/,filler" for i in range(100))
    data = f'url,note\nhttps://a.example/,"open\n{lines}\nhttps://b.example/,"closed"\n'.encode()
    source = CsvSource(write(tmp_path, data))
    limit = csv.field_size_limit(1000)  # process-wide; CsvSource() raised it to 32 MiB
    try:
        records = list(source.records())
        with source:
            for record in records:
                assert source.read_at(record.offset, record.row) == record
    finally:
        csv.field_size_limit(limit)
    assert len(records) == 102
    assert records[0] == Record(
        1,
        at(data, "https://a"),
        "https://a.example/",
        None,
        {"note": "open"},
        "a field is over the size limit; read from its first line only",
    )
    assert records[1] == Record(
        2, at(data, "https://x0."), "https://x0.example/", None, {"note": "filler"}
    )
    assert records[-1] == Record(
        102, at(data, "https://b"), "https://b.example/", None, {"note": "closed"}
    )
    assert source.read_at(records[1].offset, 2) == records[1]


def test_nul_after_the_sample_keeps_its_row(tmp_path: Path) -> None:
    filler = b"".join(b"https://f%d.example/,x\n" % i for i in range(4000))  # > 64 KiB
    data = (
        b"url,note\n"
        + filler
        + b'https://n.example/\x00,y\nhttps://q.example/,"\x00z"\nlast.example,w\n'
    )
    _, records = load(write(tmp_path, data))
    assert len(records) == 4003
    assert records[-3:] == [
        Record(4001, at(data, "https://n"), "https://n.example/\x00", None, {"note": "y"}),
        Record(4002, at(data, "https://q"), "https://q.example/", None, {"note": "\x00z"}),
        Record(4003, at(data, "last."), "last.example", None, {"note": "w"}),
    ]


@pytest.mark.parametrize(("bom", "codec"), [(b"", "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le")])
def test_a_line_over_the_line_limit_is_a_row_that_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bom: bytes, codec: str
) -> None:
    """It keeps its row number (the rows after it keep theirs: issue 22 point 12), without
    cells, its problem saying why; read_at finds it again."""
    monkeypatch.setattr("urlcheck.input.lines.MAX_LINE", 5000)
    text = "url,note\nhttps://a.example/,1\n" + "y" * 20_000 + "\r\nhttps://b.example/,2\n"
    data = bom + text.encode(codec)
    source, records = load(write(tmp_path, data))
    unread = records[1]
    assert records == [
        Record(1, at(data, "https://a", codec), "https://a.example/", None, {"note": "1"}),
        unread,
        Record(3, at(data, "https://b", codec), "https://b.example/", None, {"note": "2"}),
    ]
    size = len(("y" * 20_000 + "\r\n").encode(codec))
    assert (unread.row, unread.offset, unread.url, unread.extra) == (
        2,
        at(data, "yyy", codec),
        "",
        {"note": ""},
    )
    assert unread.unreadable and unread.problem is not None
    assert unread.problem.startswith(f"the line is over the line limit ({size} bytes")
    assert not records[0].unreadable
    assert source.read_at(unread.offset, 2) == unread


# --- big files: chunk boundaries against an independent parse ---


def random_rows(rng: random.Random, count: int) -> list[list[str]]:
    pieces = ["a", "Z", "9", " ", ",", ";", "\t", '"', "\n", "\r\n", "é", "日本", "😀", TRAPS, "-"]
    return [
        [
            f"https://h{rng.randrange(40)}.example/{i}/{rng.choice(['é', 'x', '?q=1,2'])}",
            rng.choice(["", f"https://new.example/{i}"]),
            "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 400))),
        ]
        for i in range(count)
    ]


@pytest.mark.parametrize(("codec", "bom"), [("utf-8", b""), ("utf-16-le", codecs.BOM_UTF16_LE)])
def test_large_file_matches_an_independent_parse(tmp_path: Path, codec: str, bom: bytes) -> None:
    rows = random_rows(random.Random(7), 4000)
    chunks = [bom, "url,expected,note\r\n".encode(codec)]
    offsets = []
    position = sum(map(len, chunks))
    for i, row in enumerate(rows):
        if i % 97 == 0:  # blank lines here and there
            chunks.append("\r\n".encode(codec))
            position += len(chunks[-1])
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\r\n" if i % 2 else "\n").writerow(row)
        offsets.append(position)
        chunks.append(buffer.getvalue().encode(codec))
        position += len(chunks[-1])
    data = b"".join(chunks)
    assert len(data) > 1_500_000  # more than one read chunk
    path = write(tmp_path, data)
    source = CsvSource(path)
    records = list(source.records())
    assert [(r.row, r.offset, r.url, r.expected, r.extra) for r in records] == [
        (i + 1, offsets[i], url, expected or None, {"note": note})
        for i, (url, expected, note) in enumerate(rows)
    ]
    with source:
        for record in records[::7]:
            assert source.read_at(record.offset, record.row) == record


def test_records_stream_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with path.open("w", newline="") as f:
        f.write("url,expected\r\n")
        f.writelines(
            f"https://h{i % 50}.example.com/page/{i},https://n{i % 50}.example.com/{i}\r\n"
            for i in range(60_000)
        )
    assert path.stat().st_size > 3_800_000
    source = CsvSource(path)
    tracemalloc.start()
    try:
        count = sum(1 for _ in source.records())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 60_000
    assert peak < 2_000_000  # measured 1.4 MB, the same for a 10 MB file


# --- skip, read_at, checksum ---


def test_skip_counts_rows_without_building_them(tmp_path: Path) -> None:
    data = b'url,note\na.example,1\n\nb.example,"2\n2"\nc.example,3\nd.example,"4"\ne.example,5\n'
    source, records = load(write(tmp_path, data))
    asked: list[int] = []

    def skip(row: int) -> bool:
        asked.append(row)
        return row % 2 == 1

    assert list(source.records(skip=skip)) == [r for r in records if r.row % 2 == 0]
    assert asked == [1, 2, 3, 4, 5]
    assert [r.url for r in records] == [
        "a.example",
        "b.example",
        "c.example",
        "d.example",
        "e.example",
    ]


def test_read_at_rejects_an_offset_where_no_row_starts(tmp_path: Path) -> None:
    data = b"url\nhttps://a.example/\n\nhttps://b.example/\n"
    path = write(tmp_path, data)
    with CsvSource(path) as source:
        for offset in (0, at(data, "https://a") + 3, at(data, "\n\n") + 1, len(data) + 10):
            with pytest.raises(InputError) as info:
                source.read_at(offset, 1)
            assert str(info.value) == (
                f"{path}: no row starts at byte {offset}; has the file changed since it was read?"
            )


def test_checksum_is_sha256_of_the_bytes(tmp_path: Path) -> None:
    data = b"url\nhttps://a.example/\n" * 1000
    assert CsvSource(write(tmp_path, data)).checksum() == hashlib.sha256(data).hexdigest()


def test_sha256_file_reads_a_big_file_in_chunks(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    data = b"url\nhttp://a/\n" * 300_000  # several read chunks
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()


# --- bad files ---

UNREADABLE = "unreadable text encoding"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "the file is empty"),
        (codecs.BOM_UTF8, "the file is empty"),
        (codecs.BOM_UTF16_LE, "the file is empty"),
        (b"\r\n  \n,,\n", "the file has no rows, only blank lines"),
        (b"url,expected\r\n", "the file has a header but no data rows"),
        (b"\nurl;expected\n\n;\n", "the file has a header but no data rows"),
        (
            b"url,expected\nhttps://a.example/\x00,x\n",
            "not a CSV text file, it contains binary data",
        ),
        (bytes(range(1, 32)) * 20, "not a CSV text file, it contains binary data"),
        (
            b"PK\x03\x04\x14\x00\x06\x00",
            "not a CSV text file, it looks like a ZIP archive (an .xlsx or .ods workbook?)",
        ),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not a CSV text file, it looks like a PNG image"),
        (
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
            "not a CSV text file, it looks like an old Excel .xls workbook",
        ),
        (
            "url\nhttps://a.example/\n".encode("utf-16-le"),
            f"{UNREADABLE} (UTF-16 without a byte-order mark); save the file as UTF-8 CSV",
        ),
        (
            "url\nhttps://a.example/\n".encode("utf-32"),
            f"{UNREADABLE} (UTF-32 text); save the file as UTF-8 CSV",
        ),
        (
            "url\nhttps://a.example/\n".encode("utf-32-be"),
            f"{UNREADABLE} (UTF-32 text); save the file as UTF-8 CSV",
        ),
        (
            codecs.BOM_UTF16_LE + "url\nhttps://a.example/\n".encode("utf-16-le") + b"!",
            f"{UNREADABLE} (not valid UTF-16: truncated data at byte 48); "
            "save the file as UTF-8 CSV",
        ),
        (
            codecs.BOM_UTF16_LE + b"url\nhttps://a.example/\nhttps://b.example/\n",
            f"{UNREADABLE} (not UTF-8, UTF-16 or Windows-1252 text); save the file as UTF-8 CSV",
        ),
        (
            "url\nhttps://a.example/x\nhttps://b.example/y\n".encode("cp500"),  # EBCDIC
            f"{UNREADABLE} (not UTF-8, UTF-16 or Windows-1252 text); save the file as UTF-8 CSV",
        ),
    ],
)
def test_bad_files(tmp_path: Path, data: bytes, problem: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(InputError) as info:
        CsvSource(path)
    assert str(info.value) == f"{path}: {problem}"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        CsvSource(tmp_path / "nope.csv")
    assert str(info.value) == f"{tmp_path / 'nope.csv'}: no such file"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        CsvSource(str(tmp_path))
    assert str(info.value) == f"{tmp_path}: is a directory, not a CSV file"


def test_file_removed_after_sniffing(tmp_path: Path) -> None:
    path = write(tmp_path, b"url\nhttps://a.example/\n")
    source = CsvSource(path)
    path.unlink()
    with pytest.raises(InputError) as info:
        list(source.records())
    assert str(info.value) == f"{path}: no such file"


def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, b"url\nhttps://a.example/\n", "secret.csv")
    path.chmod(0)
    script = textwrap.dedent(
        """
        import os, sys
        from urlcheck.input.csvfile import CsvSource, InputError
        if os.geteuid() == 0:  # root reads anything: become nobody, once imports are done
            os.setgid(65534)
            os.setuid(65534)
        try:
            CsvSource(sys.argv[1])
        except InputError as exc:
            print(exc)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(csvfile.__file__).parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(csvfile.__file__).parents[2])},
    )
    assert run.stdout.strip() == f"{path}: permission denied"


def _rows_text(rng: random.Random, rows: int, *, quote_at: int | None, newline: str) -> str:
    lines = ["url,note"]
    for i in range(1, rows + 1):
        kind = rng.random()
        if kind < 0.02:
            lines.append("")  # blank lines are no rows
        elif kind < 0.03:
            lines.append(" ,\t")
        lines.append(f"https://h{i % 7}.example/p?i={i},n{i}" + ("," if kind > 0.97 else ""))
        if i == quote_at:
            lines.append('"https://q.example/a",\'two' + newline + 'lines"')
    return newline.join(lines)


@pytest.mark.parametrize(
    ("newline", "quote_at", "trailing"),
    [("\n", None, "\n"), ("\r\n", 9000, ""), ("\n", 100, "\n"), ("\r\n", None, "\r\n\r\n")],
)
def test_skip_flags_give_what_the_row_by_row_skip_gives(
    tmp_path: Path, newline: str, quote_at: int | None, trailing: str
) -> None:
    rng = random.Random(f"{newline}{quote_at}")
    path = tmp_path / "in.csv"
    path.write_text(_rows_text(rng, 30_000, quote_at=quote_at, newline=newline) + trailing)
    assert path.stat().st_size > 3 * CHUNK  # several chunks
    source = CsvSource(path)
    done = {row for row in range(1, 28_000) if rng.random() < 0.8} | set(range(2000, 9000))
    flags = bytes(1 if row in done else 0 for row in range(27_000))  # rows past it: not done

    def key(r: Record) -> tuple[int, int, str, str | None, dict[str, str], str | None]:
        return (r.row, r.offset, r.url, r.expected, r.extra, r.problem)

    expected = [key(r) for r in source.records(skip=lambda row: row < 27_000 and row in done)]
    assert [key(r) for r in source.records(skip_flags=flags)] == expected
    assert len(expected) > 6000
    for row, offset, url, *_ in expected[::97]:  # the offsets lead back to the rows
        assert (source.read_at(offset, row).url, source.read_at(offset, row).row) == (url, row)
