from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from urlcheck.check.result import status_class
from urlcheck.jobs.counts import Counts
from urlcheck.jobs.done import DoneRows, Vouched, dropped_path, scan_results


def result(
    row: int, final_status: int | None = 200, verdict: str | None = None, **extra: Any
) -> dict[str, Any]:
    """A line shaped like the pipeline's: same keys, same order."""
    record: dict[str, Any] = {
        "row": row,
        "url": f'http://exämple.com/p/{row}?q="x"',
        "requested_url": f"http://xn--exmple-cua.com/p/{row}?q=%22x%22",
        "status": 301 if final_status is not None else None,
        "final_url": None if final_status is None else f"https://example.com/p/{row}/",
        "final_status": final_status,
        "hops": 1,
        "chain": [
            {
                "url": "http://a/",
                "status": 301,
                "location": "https://a/",
                "ms": 3,
                "kind": "scheme",
            },
            {
                "url": "https://a/",
                "status": final_status,
                "location": None,
                "ms": 2,
                "kind": None,
                "error": "timeout",
            },
        ],
        "loop": False,
        "error": None if final_status is not None else "timeout",
        "error_message": None,
        "meta_refresh": None,
        "expected": "https://example.com/x",
        "verdict": verdict,
        "reasons": [],
        "retries": 0,
        "checked_at": "2025-01-01T00:00:00.000Z",
        "input": {"note": 'a "verdict": "pass", "final_status": 999 note'},
    }
    record.update(extra)
    return record


def line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def write(path: Path, *parts: bytes) -> Path:
    path.write_bytes(b"".join(parts))
    return path


def reference_counts(records: list[dict[str, Any]]) -> Counts:
    counts = Counts()
    for record in records:
        counts.add(record.get("status"), record["final_status"], record["verdict"])
    return counts


# --- DoneRows ------------------------------------------------------------------------------------


def test_done_rows_add_contains_len_iter() -> None:
    done = DoneRows()
    assert len(done) == 0
    assert 1 not in done
    assert done.add(5) is True
    assert done.add(5) is False
    assert done.add(1) is True
    assert done.add(100_000) is True
    assert len(done) == 3
    assert 5 in done and 1 in done and 100_000 in done
    assert 4 not in done and 6 not in done and 99_999 not in done and 10**9 not in done
    assert 0 not in done and -3 not in done and "5" not in done
    assert list(done) == [1, 5, 100_000]


def test_done_rows_missing() -> None:
    done = DoneRows()
    for row in (1, 2, 4, 8, 9):
        done.add(row)
    assert list(done.missing(10)) == [3, 5, 6, 7, 10]
    assert list(DoneRows().missing(3)) == [1, 2, 3]


def test_done_rows_flags_agree_with_contains() -> None:
    done = DoneRows()
    for row in (1, 7, 8, 9, 64, 1000, 8191):
        done.add(row)
    flags = done.flags()
    assert flags is not None and len(flags) == 8192
    assert [row for row, flag in enumerate(flags) if flag == 1] == sorted(done)
    assert set(flags) == {0, 1}
    assert DoneRows().flags() == b""
    far = DoneRows()
    far.add(99_999_999)  # a stray row number: no 100 MB of flags for it
    assert far.flags() is None


def test_done_rows_rejects_rows_out_of_range() -> None:
    done = DoneRows(max_row=10)
    with pytest.raises(ValueError, match=r"outside 1\.\.10"):
        done.add(0)
    with pytest.raises(ValueError, match=r"outside 1\.\.10"):
        done.add(11)
    assert len(done) == 0


def test_done_rows_is_a_bitmap() -> None:
    done = DoneRows()
    for row in range(1, 1_000_001, 3):
        done.add(row)
    assert len(done) == 333_334
    assert done.nbytes() <= 1_000_000 // 8 * 2  # ~125 KB, at most doubled by growth
    assert 999_997 in done and 999_998 not in done


# --- scan_results --------------------------------------------------------------------------------


def test_missing_file_is_an_empty_scan(tmp_path: Path) -> None:
    scan = scan_results(tmp_path / "results.jsonl")
    assert len(scan.done) == 0
    assert scan.lines == scan.repaired_bytes == scan.duplicates == scan.malformed == 0
    assert not (tmp_path / "results.jsonl").exists()


def test_counts_match_a_full_json_parse(tmp_path: Path) -> None:
    records = [
        result(1, 200, "pass"),
        result(2, 404, "fail"),
        result(3, None, None),
        result(4, 503, None),
        result(5, 301, "fail"),  # chain ended on a 3xx (e.g. max hops reached with a status)
        result(6, 999, None),
        # "input" holding keys named like ours, including {"row": ...}, takes the slow path
        result(7, 200, "pass", input={"row": "3", "verdict": "fail", "final_status": 500}),
        # keys in another order: the fast path cannot read it, the slow path can
        {"url": "http://x/", "row": 8, "verdict": "fail", "final_status": 410},
    ]
    path = write(tmp_path / "results.jsonl", *(line(r) for r in records))
    before = path.read_bytes()
    scan = scan_results(path)
    assert sorted(scan.done) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert scan.lines == 8
    assert scan.counts == reference_counts(records)
    assert scan.counts.by_status == {"2xx": 2, "3xx": 1, "4xx": 2, "5xx": 1, "other": 1, "error": 1}
    assert scan.counts.by_verdict == {"pass": 2, "fail": 3, "none": 3}
    # the first answers: rows 1-7 redirected (301) unless the chain broke, row 8 has none
    assert scan.counts.by_first_status == {
        "2xx": 0,
        "3xx": 6,
        "4xx": 0,
        "5xx": 0,
        "other": 0,
        "error": 2,
    }
    assert (scan.repaired_bytes, scan.duplicates, scan.malformed) == (0, 0, 0)
    assert path.read_bytes() == before
    assert not dropped_path(path).exists()


def test_status_falls_back_to_status_only_without_final_status(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", b'{"row": 1, "status": 404, "verdict": null}\n')
    scan = scan_results(path)
    assert scan.counts.by_status["4xx"] == 1
    assert scan.counts.by_first_status["4xx"] == 1
    assert status_class(None) == "error"


def test_torn_last_line_is_cut_off(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    good = [line(result(row)) for row in (1, 2, 3)]
    torn = line(result(4))[:57]
    path = write(tmp_path / "results.jsonl", *good, torn)
    with caplog.at_level(logging.WARNING, logger="urlcheck.jobs.done"):
        scan = scan_results(path)
    assert sorted(scan.done) == [1, 2, 3]
    assert scan.repaired_bytes == 57
    assert path.read_bytes() == b"".join(good)
    assert dropped_path(path).read_bytes() == torn + b"\n"
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(messages) == 1
    assert str(path) in messages[0] and "57 bytes" in messages[0]
    # the repaired file scans clean
    again = scan_results(path)
    assert (again.repaired_bytes, again.malformed, len(again.done)) == (0, 0, 3)


def test_complete_json_without_its_newline_counts_as_torn(tmp_path: Path) -> None:
    last = line(result(2))[:-1]
    path = write(tmp_path / "results.jsonl", line(result(1)), last)
    scan = scan_results(path)
    assert list(scan.done) == [1]
    assert scan.repaired_bytes == len(last)
    assert path.read_bytes() == line(result(1))


def test_report_only_leaves_the_file_alone(tmp_path: Path) -> None:
    data = line(result(1)) + b'{"row": 2, "u'
    path = write(tmp_path / "results.jsonl", data)
    scan = scan_results(path, repair=False)
    assert list(scan.done) == [1]
    assert scan.repaired_bytes == len(b'{"row": 2, "u')
    assert path.read_bytes() == data
    assert not dropped_path(path).exists()


def test_malformed_lines_in_the_middle_are_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    one, three, four = line(result(1)), line(result(3)), line(result(4, 404, "fail"))
    garbage = b"\x00\x00\x00 not json\n"
    # a torn line that a later append ran into: two rows on one line, neither is done
    merged = line(result(2))[:40] + line(result(5))
    empty = b"\n"
    path = write(tmp_path / "results.jsonl", one, garbage, three, merged, empty, four)
    with caplog.at_level(logging.WARNING, logger="urlcheck.jobs.done"):
        scan = scan_results(path)
    assert sorted(scan.done) == [1, 3, 4]
    assert scan.malformed == 3
    assert scan.duplicates == 0
    assert scan.counts.by_status["4xx"] == 1 and scan.counts.by_status["2xx"] == 2
    assert path.read_bytes() == one + three + four
    assert dropped_path(path).read_bytes() == garbage + merged + empty
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("line 2 dropped: malformed" in m for m in warned)
    assert any("line 4 dropped: malformed" in m for m in warned)
    assert any("line 5 dropped: malformed" in m for m in warned)
    assert not list(tmp_path.glob(".*.tmp"))


def test_duplicate_rows_keep_the_first_line(tmp_path: Path) -> None:
    first = line(result(2, 200, "pass"))
    second = line(result(2, 404, "fail"))
    path = write(tmp_path / "results.jsonl", line(result(1)), first, line(result(3)), second)
    scan = scan_results(path)
    assert sorted(scan.done) == [1, 2, 3]
    assert scan.duplicates == 1
    assert scan.counts.by_verdict == {"pass": 1, "fail": 0, "none": 2}
    assert path.read_bytes() == line(result(1)) + first + line(result(3))
    assert dropped_path(path).read_bytes() == second


def test_rows_beyond_the_input_are_malformed(tmp_path: Path) -> None:
    path = write(tmp_path / "results.jsonl", line(result(1)), line(result(9)), line(result(0)))
    scan = scan_results(path, max_row=5)
    assert list(scan.done) == [1]
    assert scan.malformed == 2
    assert path.read_bytes() == line(result(1))


def test_repair_with_both_a_bad_middle_and_a_torn_tail(tmp_path: Path) -> None:
    path = write(
        tmp_path / "results.jsonl",
        line(result(1)),
        b"oops\n",
        line(result(2)),
        b'{"row": 3, "url": "ht',
    )
    scan = scan_results(path)
    assert sorted(scan.done) == [1, 2]
    assert (scan.malformed, scan.repaired_bytes) == (1, len(b'{"row": 3, "url": "ht'))
    assert path.read_bytes() == line(result(1)) + line(result(2))


def test_a_large_file_scans_completely(tmp_path: Path) -> None:
    # The speed of a 1,000,000-row resume is measured by bench/resume.py, not asserted here
    # (a timed assert fails under coverage tracing and on a loaded machine).
    template = line(result(1, 200, "pass")).decode("utf-8")
    head, tail = template.split("1", 1)
    assert head == '{"row": '
    rows = 200_000
    path = tmp_path / "results.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for row in range(1, rows + 1):
            out.write(f"{head}{row}{tail}")
    scan = scan_results(path)
    assert len(scan.done) == rows and scan.malformed == 0
    assert scan.counts.by_verdict["pass"] == rows


# --- whose lines: each URL against its row's ----------------------------------------------------


def _urls(rows: int, tweak: dict[int, str] | None = None) -> list[int]:
    from urlcheck.check.result import url_hash

    urls = {row: result(row)["url"] for row in range(1, rows + 1)} | (tweak or {})
    return [0] + [url_hash(urls[row]) for row in range(1, rows + 1)]


def test_lines_whose_urls_are_their_rows_are_taken(tmp_path: Path) -> None:
    # The URLs hold a quote (escaped in JSON) and a non-ASCII letter; row 3's line has its keys
    # in another order (the slow path reads it).
    reordered = dict(reversed(list(result(3).items())))
    path = write(tmp_path / "r.jsonl", line(result(1)), line(result(2)), line(reordered))
    scan = scan_results(path, repair=False, urls=_urls(4))
    assert scan.foreign is None and sorted(scan.done) == [1, 2, 3]


@pytest.mark.parametrize("which", ["fast", "slow"])
def test_one_line_with_another_url_makes_the_file_foreign(tmp_path: Path, which: str) -> None:
    other = result(2, url="http://elsewhere/2")
    if which == "slow":
        other = dict(reversed(list(other.items())))
    path = write(tmp_path / "r.jsonl", line(result(1)), line(other), b"junk\n", b'{"row": 3')
    before = path.read_bytes()
    scan = scan_results(path, repair=False, urls=_urls(3))
    assert scan.foreign == "line 2's URL is not the URL of row 2 in the input"
    assert len(scan.done) == 0 and scan.lines == 0
    assert path.read_bytes() == before and not dropped_path(path).exists()
    assert (
        scan_results(path, repair=False, urls=_urls(3, {2: "http://elsewhere/2"})).foreign is None
    )


# --- the part meta.json vouches for -------------------------------------------------------------


def _vouched_file(tmp_path: Path) -> tuple[Path, list[bytes]]:
    lines = [line(result(row, 200, "pass" if row % 2 else None)) for row in (3, 1, 2)]
    return write(tmp_path / "results.jsonl", *lines), lines


def test_vouched_lines_take_their_counts_from_meta(tmp_path: Path) -> None:
    path, lines = _vouched_file(tmp_path)
    # Counts that no line holds: only the row keys of the vouched part are read.
    said = Counts()
    said.add(301, 404, "fail")
    said.add(301, 404, "fail")
    tail = line(result(7, 500, None))
    path.write_bytes(path.read_bytes() + tail)
    size = len(lines[0] + lines[1])
    scan = scan_results(path, vouched=Vouched(size, 2, said))
    assert sorted(scan.done) == [1, 2, 3, 7]
    assert scan.lines == 4
    assert scan.counts.by_status["4xx"] == 2 and scan.counts.by_status["2xx"] == 1
    assert scan.counts.by_status["5xx"] == 1
    assert scan.counts.by_verdict == {"pass": 0, "fail": 2, "none": 2}


@pytest.mark.parametrize(
    ("size", "lines", "why"),
    [
        (-1, 2, "the size falls inside a line"),
        (0, 3, "more lines said than found"),
        (0, 1, "fewer lines said than found"),
    ],
)
def test_a_file_that_is_not_what_meta_says_is_scanned_whole(
    tmp_path: Path, size: int, lines: int, why: str
) -> None:
    path, written = _vouched_file(tmp_path)
    said = Counts()
    for _ in range(lines):
        said.add(301, 404, "fail")
    scan = scan_results(path, vouched=Vouched(len(written[0] + written[1]) + size, lines, said))
    assert sorted(scan.done) == [1, 2, 3], why
    assert scan.counts == reference_counts(
        [result(3, 200, "pass"), result(1, 200, "pass"), result(2)]
    )


def test_a_vouched_part_with_a_repeated_row_or_a_bad_line_is_scanned_and_repaired(
    tmp_path: Path,
) -> None:
    first, again = line(result(1, 200, "pass")), line(result(1, 404, "fail"))
    for bad in (again, b'{"row": 4, "url": "x"}{"row": 5, "url"\n'):
        path = write(tmp_path / "results.jsonl", first, bad, line(result(2)))
        said = Counts()
        for _ in range(3):
            said.add(200, 200, None)
        scan = scan_results(path, vouched=Vouched(path.stat().st_size, 3, said))
        assert sorted(scan.done) == [1, 2]
        assert scan.duplicates + scan.malformed == 1
        assert scan.counts.by_verdict == {"pass": 1, "fail": 0, "none": 1}
        assert path.read_bytes() == first + line(result(2))
        dropped_path(path).unlink()


def test_the_tail_past_the_vouched_part_is_scanned_and_repaired(tmp_path: Path) -> None:
    path, lines = _vouched_file(tmp_path)
    size = path.stat().st_size
    torn = b'{"row": 9, "url": "ht'
    path.write_bytes(path.read_bytes() + line(result(1, 404, "fail")) + line(result(5)) + torn)
    said = reference_counts([result(3, 200, "pass"), result(1, 200, "pass"), result(2)])
    scan = scan_results(path, vouched=Vouched(size, 3, said))
    assert sorted(scan.done) == [1, 2, 3, 5]
    assert (scan.duplicates, scan.repaired_bytes) == (1, len(torn))
    assert path.read_bytes() == b"".join(lines) + line(result(5))
    assert scan.counts.by_verdict == {"pass": 2, "fail": 0, "none": 2}
