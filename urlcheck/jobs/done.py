"""Which rows are done, derived from results.jsonl: the job's only source of truth.

Scrapy's request queue and ``requests.seen`` are not crash-safe (a SIGKILL lost 101 of 200 URLs in
the measurements behind docs/jobs.md), so a resumed job reads its results file instead and
repairs what a crash can leave behind: a torn last line. It must stay cheap for a
1,000,000-row job: rows are a bitmap (125 KB per million rows) and lines are read with a bytes
regex that :mod:`urlcheck.check.result` keys on the record's field order, never ``json.loads``
for every line. On a resume, the part of the file meta.json vouches for (:class:`Vouched`) is
read for its row keys only; its counts are meta.json's.
"""

from __future__ import annotations

import logging
import os
from array import array
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from urlcheck.check.result import (
    CHECKS_RE,
    FINAL_STATUS_RE,
    LINE_END,
    ROW_KEY,
    ROW_RE,
    STATUS_RE,
    URL_KEY,
    VERDICT_RE,
    check_codes,
    check_lists,
    line_url_hash,
    read_key,
    slow_line_url_hash,
)
from urlcheck.jobs.counts import Counts
from urlcheck.jobs.files import fsync_dir
from urlcheck.jobs.nofollow import open_nofollow, truncate

logger = logging.getLogger(__name__)

# A row number beyond this is taken for corruption rather than allocating a huge bitmap.
DEFAULT_MAX_ROW = 100_000_000
# A bitmap byte as eight bytes, 1 for each bit set (lowest bit first).
_SPREAD = [bytes((byte >> bit) & 1 for bit in range(8)) for byte in range(256)]
_SPREAD_MAX_BYTES = 2 << 20


class DoneRows:
    """A growable bitmap of 1-based row numbers."""

    __slots__ = ("_bits", "_count", "max_row")

    def __init__(self, max_row: int = DEFAULT_MAX_ROW) -> None:
        self._bits = bytearray()
        self._count = 0
        self.max_row = max_row

    def add(self, row: int) -> bool:
        """Mark ``row`` done; False when it already was."""
        if not 1 <= row <= self.max_row:
            raise ValueError(f"row {row} is outside 1..{self.max_row}")
        self.reserve(row)
        index, mask = row >> 3, 1 << (row & 7)
        bits = self._bits
        if bits[index] & mask:
            return False
        bits[index] |= mask
        self._count += 1
        return True

    def reserve(self, row: int) -> None:
        """Make room for ``row`` (in place: the bytearray object stays the same)."""
        index, bits = row >> 3, self._bits
        if index >= len(bits):
            bits.extend(bytes(max(index + 1, 2 * len(bits), 1024) - len(bits)))

    def __contains__(self, row: object) -> bool:
        if not isinstance(row, int) or row < 1:
            return False
        index = row >> 3
        return index < len(self._bits) and bool(self._bits[index] & (1 << (row & 7)))

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[int]:
        for index, byte in enumerate(self._bits):
            if byte:
                base = index << 3
                for bit in range(8):
                    if byte & (1 << bit):
                        yield base + bit

    def missing(self, total_rows: int) -> Iterator[int]:
        """Rows 1..total_rows not done yet, ascending."""
        bits, size = self._bits, len(self._bits)
        for row in range(1, total_rows + 1):
            index = row >> 3
            if index >= size or not bits[index] & (1 << (row & 7)):
                yield row

    def nbytes(self) -> int:
        return len(self._bits)

    def flags(self) -> bytes | None:
        """One byte per row, 1 for a row done, up to the highest row done (a million rows: 1 MB
        while it is used), for a pass over every row (the CSV's, on a resume); None past 16
        million rows (a results file's stray row number can make such a bitmap)."""
        if len(self._bits) > _SPREAD_MAX_BYTES:
            return None
        return b"".join(_SPREAD[byte] for byte in self._bits).rstrip(b"\0")


@dataclass(frozen=True)
class Vouched:
    """What meta.json recorded of the results file at its last write: its first ``size`` bytes
    held ``lines`` lines, one per row, counted as ``counts``.

    Those bytes were whole lines appended by our own pipeline after a scan had repaired the
    file, so a resume reads only their row keys (a third of the work). They are taken as
    vouched for only when that reading finds exactly ``lines`` lines, each with a new row in
    range, ending exactly at ``size``; anything else, and the whole file is scanned as usual.
    """

    size: int
    lines: int
    counts: Counts


@dataclass
class ResultsScan:
    path: Path
    done: DoneRows
    counts: Counts = field(default_factory=Counts)
    lines: int = 0  # good lines kept
    repaired_bytes: int = 0  # bytes of a torn last line cut off
    duplicates: int = 0  # lines dropped because their row already had a line
    malformed: int = 0  # lines dropped because they could not be read
    dropped_to: Path | None = None  # where dropped lines and torn bytes were saved
    # Why the file is not this input's results (a line's URL is not its row's): see ``urls``.
    foreign: str | None = None
    vouch_held: bool = False  # the start meta.json vouched for was read by its row keys alone

    @property
    def needs_repair(self) -> bool:
        return bool(self.repaired_bytes or self.malformed or self.duplicates)


# (status, final_status, verdict, reasons, warnings) -> lines: raw bytes as the regexes found
# them, or read_key's values
_Keys = defaultdict[
    tuple[bytes | int | None, bytes | int | None, bytes | str | None, bytes, bytes], int
]

_MAX_LOGGED = 10
_CHUNK = 1 << 20


class _Rewriter:
    """Writes the kept lines to a temporary file that replaces the original atomically."""

    def __init__(self, path: Path, prefix_len: int) -> None:
        self.path = path
        self.tmp = path.with_name(f".{path.name}.repair-{os.getpid()}.tmp")
        self.tmp.unlink(missing_ok=True)  # a crash's leftover, or a link planted at its name
        self.out: BinaryIO = open_nofollow(self.tmp, "xb", like=path)
        with open_nofollow(path, "rb") as src:
            remaining = prefix_len
            while remaining:
                chunk = src.read(min(_CHUNK, remaining))
                if not chunk:
                    raise OSError(f"{path} shrank while being repaired")
                self.out.write(chunk)
                remaining -= len(chunk)

    def commit(self) -> None:
        self.out.flush()
        os.fsync(self.out.fileno())
        self.out.close()
        self.tmp.replace(self.path)
        fsync_dir(self.path.parent)

    def abort(self) -> None:
        self.out.close()
        self.tmp.unlink(missing_ok=True)


def dropped_path(results_path: Path) -> Path:
    return results_path.with_name(results_path.name + ".dropped")


def _vouched_rows(src: BinaryIO, done: DoneRows, limit: int, vouched: Vouched) -> bool:
    """Mark the rows of the vouched-for lines done (reading their row keys only); False, with
    nothing marked and ``src`` back at its start, when the file is not what meta.json says."""
    bits, row_match, size = done._bits, ROW_RE.match, vouched.size
    offset = lines = nbits = 0
    if size > 0 and vouched.counts.total() == vouched.lines:
        for line in src:
            offset += len(line)
            m = row_match(line)
            if m is None or not line.endswith(LINE_END):
                break
            row = int(m[1])  # the regex admits no sign and no leading zero
            if not 0 < row <= limit:
                break
            index, mask = row >> 3, 1 << (row & 7)
            if index >= nbits:
                done.reserve(row)
                nbits = len(bits)
            elif bits[index] & mask:
                break
            bits[index] |= mask
            lines += 1
            if offset >= size:
                break
        if offset == size and lines == vouched.lines:
            return True
    bits[:] = bytes(len(bits))
    src.seek(0)
    return False


def scan_results(
    path: Path | str,
    *,
    max_row: int | None = None,
    repair: bool = True,
    urls: Sequence[int] | None = None,
    log: bool = True,
    vouched: Vouched | None = None,
) -> ResultsScan:
    """Read results.jsonl: which rows are done, their counts, and what had to be repaired.

    With ``repair`` (the default) the file is fixed so that every row has exactly one readable
    line: a torn last line (no newline) is cut off; unreadable lines, rows out of range and
    repeated rows (the first line wins) are removed by an atomic rewrite. Everything removed is
    appended to ``<name>.dropped`` next to the file. Call it only while holding the job lock and
    before anything opens the results file for appending. A missing file is an empty scan.

    ``urls`` (:func:`urlcheck.jobs.owned.row_url_hashes` of the input: index = row) makes the
    scan check that every readable line's URL is its row's: the first that is not (or a row
    the input does not have, or a file with no readable line at all) sets ``foreign`` and ends
    the scan, which then counts nothing. Scan with ``repair=False`` first, so that a file that
    is not the job's is never rewritten. ``log=False``: no warnings about what was found.

    ``vouched``: what meta.json says of the file's start (see :class:`Vouched`).
    """
    path = Path(path)
    limit = max_row if max_row is not None else DEFAULT_MAX_ROW
    if urls is not None:
        limit = min(limit, len(urls) - 1)
    scan = ResultsScan(path=path, done=DoneRows(limit))
    try:
        src = open_nofollow(path, "rb", buffering=_CHUNK)
    except FileNotFoundError:
        return scan
    # (status, final_status, verdict, reasons, warnings) -> lines; raw bytes on the fast path,
    # values from read_key otherwise
    keys: _Keys = defaultdict(int)
    writer: _Rewriter | None = None
    side: BinaryIO | None = None
    torn_at: int | None = None
    done = scan.done
    bits = done._bits  # extended in place, so this stays the bitmap
    row_match, status_search, final_search, verdict_search, checks_match = (
        ROW_RE.match,
        STATUS_RE.search,
        FINAL_STATUS_RE.search,
        VERDICT_RE.search,
        CHECKS_RE.match,
    )
    check_urls = urls is not None
    nurls, url_skip = len(urls) if urls is not None else 0, len(URL_KEY)

    def drop(data: bytes) -> None:
        nonlocal side
        if side is None:
            scan.dropped_to = dropped_path(path)
            side = open_nofollow(scan.dropped_to, "ab", like=path)
        side.write(data)

    known = Counts()
    try:
        with src:
            offset = nbits = first_line = 0
            if vouched is not None and _vouched_rows(src, done, limit, vouched):
                offset, first_line, nbits = vouched.size, vouched.lines, len(bits)
                known = vouched.counts.copy()
                scan.vouch_held = True
            for lineno, line in enumerate(src, first_line + 1):
                offset += len(line)
                # read_key's fast path, inlined: this loop runs once per row of a million-row job.
                m = row_match(line)
                if m is not None and line.endswith(LINE_END) and line.rfind(ROW_KEY) == 0:
                    sm = status_search(line, m.end())
                    fm = None if sm is None else final_search(line, sm.end())
                    if sm is not None and fm is not None:
                        vm = verdict_search(line, fm.end())
                        if vm is not None:
                            row = int(m[1])  # the regex admits no sign and no leading zero
                            if check_urls:  # line_url_hash's fast path, inlined
                                at = m.end() + url_skip
                                raw = line[at : line.find(b'"', at)]
                                found = (
                                    hash(raw)
                                    if b"\\" not in raw and line.startswith(URL_KEY, at - url_skip)
                                    else line_url_hash(line, m.end())
                                )
                                if row >= nurls or found != urls[row]:  # type: ignore[index]
                                    scan.foreign = _not_its_row(row, found, urls, lineno)
                                    break
                            index = row >> 3
                            if index < nbits and 0 < row <= limit:
                                mask = 1 << (row & 7)
                                if not bits[index] & mask:
                                    bits[index] |= mask
                                    cm = checks_match(line, vm.end())
                                    if cm is None:
                                        keys[sm[1], fm[1], vm[1], b"", b""] += 1
                                    else:
                                        keys[sm[1], fm[1], vm[1], cm[1], cm[2]] += 1
                                    if writer is not None:
                                        writer.out.write(line)
                                    continue
                start = offset - len(line)
                if not line.endswith(b"\n"):
                    torn_at = start  # only the last line can lack its newline
                    scan.repaired_bytes = len(line)
                    if repair:
                        drop(line + b"\n")
                    break
                key = read_key(line)
                row, first, final, verdict = key if key is not None else (0, None, None, None)
                problem = "" if key is not None else "malformed line"
                if check_urls and key is not None:
                    scan.foreign = _not_its_row(row, slow_line_url_hash(line), urls, lineno) or None
                    if scan.foreign:
                        break
                duplicate = False
                if not problem:
                    if not 1 <= row <= limit:
                        problem = f"row {row} outside 1..{limit}"
                    elif row in done:
                        duplicate = True
                        problem = f"duplicate of row {row} (the first line is kept)"
                if problem:
                    if duplicate:
                        scan.duplicates += 1
                    else:
                        scan.malformed += 1
                    if log and scan.duplicates + scan.malformed <= _MAX_LOGGED:
                        logger.warning("%s line %d dropped: %s", path, lineno, problem)
                    if repair:
                        if writer is None:
                            writer = _Rewriter(path, start)
                        drop(line)
                    continue
                done.reserve(row)
                nbits = len(bits)
                bits[row >> 3] |= 1 << (row & 7)
                keys[first, final, verdict, *check_lists(line)] += 1
                if writer is not None:
                    writer.out.write(line)
        if check_urls and not scan.foreign and scan.malformed and not keys:
            scan.foreign = "no line of it is a urlcheck result"
        if scan.foreign:
            scan.done = DoneRows(limit)
            return scan  # nothing written, nothing counted (the finally below cleans up)
        if log and scan.duplicates + scan.malformed > _MAX_LOGGED:
            logger.warning(
                "%s: %d malformed and %d duplicate lines in all",
                path,
                scan.malformed,
                scan.duplicates,
            )
        if log and torn_at is not None:
            logger.warning(
                "%s ends with a torn line left by a crash: %d bytes without a newline%s",
                path,
                scan.repaired_bytes,
                f" cut off (saved to {scan.dropped_to})" if repair else "",
            )
        if side is not None:
            side.flush()
            os.fsync(side.fileno())
        if writer is not None:
            writer.commit()
            writer = None
        elif repair and torn_at is not None:
            truncate(path, torn_at)
    finally:
        if side is not None:
            side.close()
        if writer is not None:
            writer.abort()
    scan.lines = sum(keys.values()) + known.total()
    done._count = scan.lines
    scan.counts = _counts(keys)
    scan.counts.merge(known)
    return scan


def _not_its_row(row: int, found: int | None, urls: Sequence[int] | None, lineno: int) -> str:
    """Why line ``lineno`` (of row ``row``, its URL's hash ``found``) is not the input's, or
    "" when it is."""
    assert urls is not None
    if not 1 <= row < len(urls):
        return f"line {lineno} is row {row}, which the input does not have ({len(urls) - 1} rows)"
    if found != urls[row]:
        return f"line {lineno}'s URL is not the URL of row {row} in the input"
    return ""


def _counts(keys: _Keys) -> Counts:
    counts = Counts()
    for (raw_first, raw_final, raw_verdict, reasons, warnings), n in keys.items():
        counts.add_first_status(_status_value(raw_first), n)
        counts.add_status(_status_value(raw_final), n)
        counts.add_verdict(_verdict_value(raw_verdict), n)
        if reasons or warnings:
            counts.add_checks(check_codes(reasons), check_codes(warnings), n)
    return counts


def _status_value(raw: bytes | int | None) -> int | None:
    if isinstance(raw, bytes):
        return None if raw == b"null" else int(raw)
    return raw


def _verdict_value(raw: bytes | str | None) -> str | None:
    if isinstance(raw, bytes):
        return None if raw == b"null" else raw[1:-1].decode("ascii")
    return raw


@dataclass
class Tail:
    """What a results file holds from ``start`` on: its whole lines only, never repaired."""

    start: int
    end: int  # offset just after the last whole line read
    lines: int = 0
    counts: Counts = field(default_factory=Counts)


def read_tail(path: Path | str, start: int = 0) -> Tail:
    """Count the whole lines of ``path`` from byte ``start`` (a line start) to its end.

    The running crawl calls this every couple of seconds on what it appended since, and
    ``scrapy job status`` on what a crashed crawl appended after its last meta.json write, so
    the counts shown are those of the file itself. Read-only; a line still being written (no
    newline yet) is left for the next call.
    """
    tail = Tail(start, start)
    keys: _Keys = defaultdict(int)
    try:
        with open_nofollow(path, "rb", buffering=_CHUNK) as src:
            src.seek(start)
            for line in src:
                if not line.endswith(b"\n"):
                    break
                tail.end += len(line)
                key = read_key(line)
                if key is not None:
                    keys[key.status, key.final_status, key.verdict, *check_lists(line)] += 1
    except FileNotFoundError:
        return tail
    tail.lines = sum(keys.values())
    tail.counts = _counts(keys)
    return tail


def row_offsets(path: Path) -> tuple[array[int], array[int]]:
    """(row, byte offset) of every readable line of a results file, in file order; compact
    arrays (16 bytes a row), for reading the file back in row order."""
    rows, offsets = array("q"), array("q")
    offset = 0
    with open_nofollow(path, "rb", buffering=_CHUNK) as src:
        for line in src:
            if not line.endswith(b"\n"):
                break
            m = ROW_RE.match(line)
            if m is not None:
                row = int(m[1])
            else:
                key = read_key(line)
                row = key[0] if key is not None else 0
            if row > 0:
                rows.append(row)
                offsets.append(offset)
            offset += len(line)
    return rows, offsets
