"""The spool: rows of a reader that cannot seek back, kept on disk and read back by offset."""

from __future__ import annotations

from urlcheck.input.spool import Spool


def test_cells_come_back_as_they_went_in_whatever_they_hold():
    spool = Spool()
    rows = [
        ["https://a.example/", "2024-01-02"],
        ["tab\there", "line\nfeed", "cr\r"],  # JSON lines
        ["ünïcode", ""],
        ["lone \udc80 surrogate"],
        [""],
        *([f"https://b.example/{i}", "x" * (i % 7)] for i in range(2000)),  # several flushes
    ]
    offsets = [spool.add(cells) for cells in rows]
    assert [spool.get(offset) for offset in offsets] == rows
    assert spool.get(offsets[1] + 1) is None  # not where a row starts
    assert spool.get(10**9) is None
    later = spool.add(["after reading"])
    assert spool.get(later) == ["after reading"]
    spool.reset()
    assert spool.get(offsets[5]) is None
    assert spool.get(spool.add(["again"])) == ["again"]
    spool.close()
