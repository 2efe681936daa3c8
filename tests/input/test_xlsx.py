"""The .xlsx reader on workbooks written by openpyxl (inline strings, styles, dates) and as Excel
saves them (shared strings: tests/input/workbooks.py): the CSV's columns and header detection,
the sheet's own row numbers, a named sheet, and what is refused."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.utils.datetime import CALENDAR_MAC_1904

from tests.input import workbooks
from tests.input.workbooks import write_xlsx
from urlcheck.input.errors import InputError
from urlcheck.input.kind import open_source
from urlcheck.input.xlsxfile import XlsxSource, _PlainRows

DAY, WHEN = dt.date(2024, 5, 6), dt.datetime(2024, 1, 2, 3, 4, 5)
NO_WORKBOOK = "a ZIP archive that is no .xlsx workbook"


def book(path: Path, sheets: dict[str, list[tuple[int, list[Any]]]]) -> Path:
    """A workbook with ``sheets``: name -> (sheet row, cells) pairs."""
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for name, rows in sheets.items():
        ws = wb.create_sheet(name)
        for number, cells in rows:
            for column, value in enumerate(cells, 1):
                if value is not None:
                    ws.cell(row=number, column=column, value=value)
    wb.save(path)
    return path


def read(source):
    try:
        records = list(source.records())
        for record in reversed(records):
            assert source.read_at(record.offset, record.row) == record
        return records
    finally:
        source.close()


def test_header_columns_and_the_sheets_row_numbers(tmp_path):
    path = book(
        tmp_path / "links.xlsx",
        {
            "Links": [
                (1, ["Old URL", "Target", "Notes", "Checked", "Count", "Live"]),
                (
                    2,
                    [
                        "https://a.example/",
                        "https://b.example/",
                        "first",
                        dt.date(2024, 5, 6),
                        3,
                        True,
                    ],
                ),
                # rows 3 and 4 blank: skipped, their numbers kept
                (
                    5,
                    [
                        "https://c.example/?a=1&b=2",
                        None,
                        None,
                        dt.datetime(2024, 1, 2, 3, 4, 5),
                        1.5,
                        False,
                    ],
                ),
                (6, [None, "https://d.example/"]),  # no URL: an invalid_url row
            ]
        },
    )
    source = open_source(path)
    assert isinstance(source, XlsxSource)
    assert (source.header, source.url_column, source.expected_column) == (
        ["Old URL", "Target", "Notes", "Checked", "Count", "Live"],
        "Old URL",
        "Target",
    )
    records = read(source)
    assert [(r.row, r.url, r.expected, r.extra) for r in records] == [
        (2, "https://a.example/", "https://b.example/",
         {"Notes": "first", "Checked": "2024-05-06", "Count": "3", "Live": "TRUE"}),
        (5, "https://c.example/?a=1&b=2", None,
         {"Notes": "", "Checked": "2024-01-02T03:04:05", "Count": "1.5", "Live": "FALSE"}),
        (6, "", "https://d.example/", {"Notes": "", "Checked": "", "Count": "", "Live": ""}),
    ]  # fmt: skip


def test_a_named_sheet_headerless_and_a_resume(tmp_path):
    rows = [(n, [f"https://a.example/{n}", f"note {n}"]) for n in range(3, 8)]
    path = book(tmp_path / "b.xlsx", {"Intro": [(1, ["read me"])], "URLs": rows})
    source = open_source(path, sheet="URLs")
    assert isinstance(source, XlsxSource)
    assert (source.sheet, source.has_header, source.url_column) == ("URLs", False, 0)
    records = read(source)
    assert [(r.row, r.url, r.extra) for r in records][:2] == [
        (3, "https://a.example/3", {"col2": "note 3"}),
        (4, "https://a.example/4", {"col2": "note 4"}),
    ]
    source = open_source(path, sheet="URLs")
    assert [r.row for r in source.records(skip=lambda row: row < 7)] == [7]
    source.close()
    with pytest.raises(InputError) as info:
        open_source(path, sheet="Nope")
    assert str(info.value) == f"{path}: no sheet named 'Nope' (sheets: 'Intro', 'URLs')"
    with pytest.raises(InputError, match=r"a sheet was named .* but this is no \.xlsx workbook"):
        (tmp_path / "l.txt").write_text("https://a/\n")
        open_source(tmp_path / "l.txt", sheet="URLs")


def test_a_streamed_workbook_with_inline_strings(tmp_path):
    wb = openpyxl.Workbook(write_only=True)
    ws = wb.create_sheet("S")
    ws.append(["url", "expected"])
    for n in range(2, 3002):
        ws.append([f"https://a.example/{n}", None if n % 2 else f"https://b.example/{n}"])
    wb.save(tmp_path / "w.xlsx")
    records = read(open_source(tmp_path / "w.xlsx"))
    assert len(records) == 3000
    assert (records[0].row, records[0].url, records[0].expected) == (
        2,
        "https://a.example/2",
        "https://b.example/2",
    )
    assert (records[-1].row, records[-1].expected) == (3001, None)


def test_many_distinct_strings_are_read_back_from_disk(tmp_path):
    # Excel's shared strings, past the in-memory limit of their table: kept in a file
    rows = [["url", "note"]] + [
        [f"https://host{n % 7}.example/{'x' * 100}?a=1&b={n}", "é" * (n % 5)]
        for n in range(2, 40_002)
    ]
    path = write_xlsx(tmp_path / "big.xlsx", rows)
    source = XlsxSource(path)
    assert source._strings is not None and source._strings._file is not None
    records = read(source)
    assert len(records) == 40_000
    assert records[0].row == 2
    assert records[-1].url == f"https://host{40_001 % 7}.example/{'x' * 100}?a=1&b=40001"
    assert [r.extra for r in records[:5]] == [{"note": "é" * (n % 5)} for n in range(2, 7)]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda z: z.writestr("content.xml", "<office/>"),
            "a ZIP archive that is no .xlsx workbook",
        ),
        (
            lambda z: z.writestr("word/document.xml", "<w/>"),
            "a ZIP archive that is no .xlsx workbook",
        ),
    ],
)
def test_a_zip_that_is_no_workbook_is_refused(tmp_path, make, message):
    path = tmp_path / "x.xlsx"
    with zipfile.ZipFile(path, "w") as z:
        make(z)
    with pytest.raises(InputError) as info:
        open_source(path)
    assert str(info.value).startswith(f"{path}: {message}")


def test_a_zip_bomb_stops_at_the_cap(tmp_path):
    path = book(
        tmp_path / "bomb.xlsx", {"S": [(n, [f"https://a.example/{n}"]) for n in range(1, 20_000)]}
    )
    source = XlsxSource(path, max_bytes=200_000)  # the sheet part is larger, decompressed
    with pytest.raises(InputError, match=r"over 200,000 bytes once decompressed; refused"):
        list(source.records())
    source.close()


def test_an_empty_sheet_is_refused(tmp_path):
    path = book(tmp_path / "e.xlsx", {"Empty": []})
    with pytest.raises(InputError, match="the sheet 'Empty' has no rows"):
        open_source(path)


SHARED = [
    (
        "<si><t>https://a.example/?x=1&amp;y=&lt;2&gt;&#233;&#x41;</t></si>",
        "https://a.example/?x=1&y=<2>éA",
    ),
    (
        '<si><r><rPr><b/></rPr><t>https://b.example/</t></r><r><t xml:space="preserve">bold'
        "</t></r><rPh><t>ignored</t></rPh></si>",
        "https://b.example/bold",
    ),
    ("<si><t>https://c.example/\r\nline</t></si>", "https://c.example/\nline"),
    # a reference to a carriage return is kept: only a literal one is a line end
    ("<si><t>https://e.example/&#13;&#10;x\r</t></si>", "https://e.example/\r\nx\n"),
    ("<si/>", ""),
]


@pytest.mark.parametrize("odd", [None, "<si><t><![CDATA[https://d.example/<x>]]></t></si>"])
def test_shared_strings_read_as_an_xml_parser_reads_them(tmp_path, odd):
    entries = SHARED + ([(odd, "https://d.example/<x>")] if odd else [])
    path = write_xlsx(
        tmp_path / "s.xlsx", [["url"], *([f"placeholder{i}"] for i in range(len(entries)))]
    )
    # the table Excel wrote, replaced by one with these entries (in the same order)
    table = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
        f'<sst xmlns="{workbooks.MAIN}" count="9" uniqueCount="9"><si><t>url</t></si>'
        + "".join(xml for xml, _ in entries)
        + "</sst>"
    )
    with zipfile.ZipFile(path) as old, zipfile.ZipFile(tmp_path / "t.xlsx", "w") as new:
        for info in old.infolist():
            data = old.read(info)
            new.writestr(
                info, table.encode() if info.filename.endswith("sharedStrings.xml") else data
            )
    records = read(open_source(tmp_path / "t.xlsx"))
    assert [r.url for r in records] == [text for _, text in entries if text]


# --- a sheet as Excel and openpyxl write it, read by pattern; anything else, by lxml ---

X14AC = "http://schemas.microsoft.com/office/spreadsheetml/2009/9/ac"


def _row(n: int) -> str:
    """Row ``n`` of a sheet that holds each kind of cell the pattern reads, in turn."""
    a = f'<c r="A{n}" t="inlineStr"><is><t>https://a.example/{n}?x=1&amp;y=2</t></is></c>'
    cells = {
        0: a + f'<c r="B{n}" t="inlineStr"><is><t>https://b.example/{n}</t></is></c>',
        1: a + f'<c r="C{n}" t="n"><v>{n}.5</v></c>',  # B left out
        2: f'<c r="A{n}" t="str"><f>"x"&amp;"y"</f><v>https://a.example/{n}/&lt;f&gt;</v></c>'
        f'<c r="C{n}" t="b"><v>1</v></c>',
        3: f'<c r="A{n}" t="inlineStr"><is><t xml:space="preserve"> https://a.example/{n} </t>'
        f'</is></c><c r="B{n}" s="3"/>',
        4: "",  # a row with a height only
        5: f'<c r="A{n}" t="inlineStr"><is><t xml:space="preserve">   </t></is></c>',  # blank
        6: f'<c r="A{n}" t="inlineStr"><is><t>https://a.example/{n}/&#233;</t></is></c>'
        f'<c r="C{n}" t="str"><v>two&#13;&#10;lines</v></c>',
        7: f'<c r="A{n}" t="s"><v>1</v></c><c t="inlineStr"><is><t>no ref</t></is></c>'
        f'<c r="AA{n}" t="b"><v>0</v></c>',
        # a cell without a reference is the one after the cell before it, last or not
        15: f'<c r="A{n}" t="s"><v>1</v></c><c r="C{n}" t="b"><v>0</v></c>'
        f'<c t="inlineStr"><is><t>after C</t></is></c>',
    }[n % 16 if n % 16 == 15 else n % 8]
    if not cells:
        return f'<row r="{n}" spans="1:3" x14ac:dyDescent="0.25"/>'
    return f'<row r="{n}" spans="1:3" x14ac:dyDescent="0.25">{cells}</row>'


def _sheet(rows: int, comment_after: int | None) -> str:
    header = (
        '<row r="1"><c r="A1" t="inlineStr"><is><t>url</t></is></c><c r="B1" t="inlineStr">'
        '<is><t>target</t></is></c><c r="C1" t="inlineStr"><is><t>note</t></is></c></row>'
    )
    body = [header]
    for n in range(2, rows + 1):
        body.append(_row(n if n < 1_000 else n + 5))  # five row numbers left out
        if n == comment_after:
            body.append("<!-- a comment: lxml reads on from here -->")
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n<worksheet xmlns="'
        f'{workbooks.MAIN}" xmlns:x14ac="{X14AC}"><dimension ref="A1:C9"/><sheetData>'
        + "".join(body)
        + '</sheetData><pageMargins left="0.7"/></worksheet>'
    )


def _with_sheet(tmp_path: Path, name: str, sheet: str) -> Path:
    """A workbook (shared strings: "url", then https://s.example/) holding ``sheet``."""
    base = write_xlsx(tmp_path / f"base-{name}", [["url"], ["https://s.example/"]])
    with zipfile.ZipFile(base) as old, zipfile.ZipFile(tmp_path / name, "w") as new:
        for info in old.infolist():
            data = sheet.encode() if info.filename.endswith("sheet1.xml") else old.read(info)
            new.writestr(info, data)
    return tmp_path / name


def _plain_rows(sheet: str) -> _PlainRows:
    return _PlainRows(io.BytesIO(sheet.encode()), lambda i: "", set(), dt.datetime(1899, 12, 30))


def test_a_sheet_reads_the_same_by_pattern_and_by_lxml(tmp_path):
    rows = 3_000  # past the first read (64 KiB): the switch comes mid-sheet
    sheets = {
        "plain": _sheet(rows, None),
        "lxml": _sheet(rows, 0).replace("<sheetData>", "<sheetData><!-- -->"),
        "switch": _sheet(rows, 1_500),
    }
    plain = _plain_rows(sheets["plain"])
    assert sum(len(batch) for batch in plain.batches()) > 0 and plain.finished
    switch = _plain_rows(sheets["switch"])
    assert sum(len(batch) for batch in switch.batches()) > 0 and not switch.finished
    assert 0 < switch.read < 1_500
    lxml = _plain_rows(sheets["lxml"])
    assert list(lxml.batches()) == [] and lxml.read == 0

    read_as = {}
    for name, sheet in sheets.items():
        source = XlsxSource(_with_sheet(tmp_path, f"{name}.xlsx", sheet))
        assert (source.url_column, source.expected_column) == ("url", "target")
        read_as[name] = [(r.row, r.url, r.expected, r.extra) for r in read(source)]
    assert read_as["plain"] == read_as["lxml"] == read_as["switch"]
    found = {row: rest for row, *rest in read_as["plain"]}
    numbers = [n if n < 1_000 else n + 5 for n in range(2, rows + 1)]
    assert list(found) == [n for n in numbers if n % 8 not in (4, 5)]  # nor empty nor blank
    assert found[8] == ["https://a.example/8?x=1&y=2", "https://b.example/8", {"note": ""}]
    assert found[9] == ["https://a.example/9?x=1&y=2", None, {"note": "9.5"}]
    assert found[10] == ["https://a.example/10/<f>", None, {"note": "TRUE"}]
    assert found[11] == [" https://a.example/11 ", None, {"note": ""}]
    # a character reference to a carriage return is kept, as an XML parser keeps it
    assert found[14] == ["https://a.example/14/é", None, {"note": "two\r\nlines"}]
    assert found[23] == ["https://s.example/", "no ref", {"note": "", "col27": "FALSE"}]
    assert found[15] == ["https://s.example/", None, {"note": "FALSE", "col4": "after C"}]
    assert 3_003 in found and 1_000 not in found
    # the last row read by pattern is a data row: lxml reading it again would show
    last = switch.read if switch.read < 1_000 else switch.read + 5
    assert last in found


@pytest.mark.parametrize("mac", [False, True], ids=["1900", "1904"])
def test_dates_are_the_days_excel_shows_in_either_date_system(tmp_path, mac):
    wb = openpyxl.Workbook()
    if mac:  # old Excel for Mac counts from 1904: its dates read 4 years and a day early
        wb.epoch = CALENDAR_MAC_1904
    ws = wb.active
    ws.append(["url", "day", "early", "time"])
    ws.append(["https://a.example/", DAY, dt.date(1904, 1, 5), dt.time(13, 45)])
    if not mac:  # before 1 March 1900, Excel's serials are a day later than the calendar's
        ws.append(["https://b.example/", dt.date(1900, 1, 1), dt.date(1900, 2, 28), None])
    wb.save(tmp_path / "dates.xlsx")
    records = read(open_source(tmp_path / "dates.xlsx"))
    assert records[0].extra == {"day": "2024-05-06", "early": "1904-01-05", "time": "13:45:00"}
    if not mac:
        assert records[1].extra == {"day": "1900-01-01", "early": "1900-02-28", "time": ""}
