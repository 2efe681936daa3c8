"""Workbooks as Excel saves them: every text cell a shared string, each row and cell with its
reference. (openpyxl writes inline strings instead; the reader must take both.) Used by the
tests and by bench/inputs.py."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
DOC = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'


def _column(i: int) -> str:
    name = ""
    i += 1
    while i:
        i, rest = divmod(i - 1, 26)
        name = chr(65 + rest) + name
    return name


def write_xlsx(path: Path, rows: Iterable[list[str]], sheet: str = "URLs") -> Path:
    """One sheet holding ``rows`` (an empty cell is left out, as Excel does)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(
            "[Content_Types].xml",
            _HEAD + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
            'officedocument.spreadsheetml.sheet.main+xml"/></Types>',
        )
        book.writestr(
            "_rels/.rels",
            f'{_HEAD}<Relationships xmlns="{RELS}"><Relationship Id="rId1" '
            f'Type="{DOC}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        book.writestr(
            "xl/workbook.xml",
            f'{_HEAD}<workbook xmlns="{MAIN}" xmlns:r="{DOC}"><sheets><sheet '
            f'name={quoteattr(sheet)} sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        book.writestr(
            "xl/_rels/workbook.xml.rels",
            f'{_HEAD}<Relationships xmlns="{RELS}"><Relationship Id="rId1" '
            f'Type="{DOC}/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" '
            f'Type="{DOC}/sharedStrings" Target="sharedStrings.xml"/></Relationships>',
        )
        strings: dict[str, int] = {}
        count = 0
        with book.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as out:
            out.write(f'{_HEAD}<worksheet xmlns="{MAIN}"><sheetData>'.encode())
            for n, cells in enumerate(rows, 1):
                xml = [f'<row r="{n}">']
                for i, cell in enumerate(cells):
                    if cell:
                        count += 1
                        index = strings.setdefault(cell, len(strings))
                        xml.append(f'<c r="{_column(i)}{n}" t="s"><v>{index}</v></c>')
                xml.append("</row>")
                out.write("".join(xml).encode())
            out.write(b"</sheetData></worksheet>")
        with book.open("xl/sharedStrings.xml", "w", force_zip64=True) as out:
            out.write(
                f'{_HEAD}<sst xmlns="{MAIN}" count="{count}" uniqueCount="{len(strings)}">'.encode()
            )
            for text in strings:
                out.write(f"<si><t>{escape(text)}</t></si>".encode())
            out.write(b"</sst>")
    return path
