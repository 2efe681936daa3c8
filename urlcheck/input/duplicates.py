"""Rows that ask for the same URL: checked once, each still its own line.

A CSV that names one URL a million times (a template link, an export with a row per page
view) would cost a million requests at one host's pace: days. Each row whose requested URL
(normalised, without ``user:password@``) is an earlier row's is a *copy*: it is not fed; when
the first row with that URL has its line, its copies are released and each gets that chain,
judged against its own expected target (the spider adds ``duplicate_of_row_N`` to their notes).
Reference: README "Output" and docs/jobs.md ("Rows with the same URL").

Compact, as the feeder is: while the rows are indexed, 4 bytes a row (32 bits of the URL's
hash, in the feeder's order); then two passes over those hashes with two small bitmaps find the
hashes seen more than once, and only those go into a dict. A million distinct URLs cost ~8 MB
for a moment and nothing after; what is kept is a bit per row and 24 bytes per copy (its row, its
offset in the file, the next copy of the same URL), plus an entry per URL that has copies.
Two URLs can share those 32 bits (a million rows: about a hundred pairs): the caller compares
the URLs when it releases a copy, and checks a mismatched row on its own.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Generator, Iterable, Iterator

_STEP = 50_000  # rows between the resolve pass's pauses (the event loop stays responsive)


class SameURL:
    def __init__(self, key: Callable[[str], int] = hash) -> None:
        self._key = key  # a URL's hash, 32 bits of it kept (tests give one that collides)
        # Per row indexed, in the feeder's order; dropped by resolve(). 4 bytes a row: a shared
        # hash only makes a candidate, and the URLs are compared when a copy is released.
        self._hashes = array("I")
        self._copy_bits = bytearray()  # per row number: a copy, not fed
        self._rows = array("q")  # per copy: its row, its byte offset, the next copy (or -1)
        self._offsets = array("q")
        self._next = array("q")
        self._head: dict[int, int] = {}  # first row -> its first copy (an index in the arrays)
        self.held = 0  # copies not released yet

    def add(self, requested_url: str) -> None:
        """The next row given to the feeder asks for ``requested_url``."""
        self._hashes.append(self._key(requested_url) & 0xFFFFFFFF)

    def resolve(self, rows: array[int], offsets: array[int]) -> Iterator[None]:
        """Find the copies among the rows indexed (``rows`` and ``offsets`` in the order of
        :meth:`add`); a generator that pauses every few thousand rows."""
        hashes, self._hashes = self._hashes, array("I")
        if len(hashes) != len(rows):
            raise ValueError("one URL per row indexed")
        size = max(1 << 16, 1 << (16 * len(hashes)).bit_length())  # >= 16 bits a row
        again = yield from _seen_twice(hashes, size)
        # A bucket seen twice is shared by ~6% of a million distinct URLs: a second filter, on
        # other bits of the hash and sized by those alone, leaves few but the true copies for
        # the dict below (at ~80 bytes an entry, it made the input pass's peak).
        mask = size - 1
        shared = array("I", (h for h in hashes if again[(h & mask) >> 3] & (1 << (h & 7))))
        del again
        small = max(1 << 16, 1 << (16 * len(shared)).bit_length())
        again_too = yield from _seen_twice(map(_other_bits, shared), small)
        del shared
        small_mask = small - 1
        first_of: dict[int, int] = {}  # only hashes whose bits were seen twice in both
        firsts = array("q")  # per copy: the first row with its URL
        for i, h in enumerate(hashes):
            o = _other_bits(h) & small_mask
            if again_too[o >> 3] & (1 << (o & 7)):
                row = rows[i]
                first = first_of.setdefault(h, row)
                if first != row:
                    self._rows.append(row)
                    self._offsets.append(offsets[i])
                    firsts.append(first)
            if i % _STEP == 0:
                yield
        del first_of, again_too, hashes
        # Chained per first row, in file order (built backwards).
        count = len(firsts)
        self._next = array("q", bytes(8 * count))
        head = self._head
        for c in range(count - 1, -1, -1):
            first = firsts[c]
            self._next[c] = head.get(first, -1)
            head[first] = c
        bits = self._copy_bits
        for row in self._rows:
            index = row >> 3
            if index >= len(bits):
                bits.extend(bytes(index + 1 - len(bits) + 1024))
            bits[index] |= 1 << (row & 7)
        self.held = count

    def __contains__(self, row: object) -> bool:
        """Whether ``row`` is a copy (not fed: it waits for the first row with its URL)."""
        if not isinstance(row, int) or row < 0:
            return False
        index = row >> 3
        return index < len(self._copy_bits) and bool(self._copy_bits[index] & (1 << (row & 7)))

    def __len__(self) -> int:
        """Copies held, not released yet."""
        return self.held

    def has_copies(self, row: int) -> bool:
        return row in self._head

    def release(self, row: int) -> Iterator[tuple[int, int]]:
        """``(row, offset)`` of each copy of ``row``'s URL, in file order, each once."""
        index = self._head.pop(row, -1)
        while index >= 0:
            self.held -= 1
            yield self._rows[index], self._offsets[index]
            index = self._next[index]


def _other_bits(h: int) -> int:
    """A second bucket for a 32-bit hash, independent of its low bits (a Fibonacci hash)."""
    return (h * 0x9E3779B1) >> 16 & 0xFFFFFFFF


def _seen_twice(hashes: Iterable[int], size: int) -> Generator[None, None, bytearray]:
    """The bitmap of the ``size`` buckets (a power of two; a hash's low bits) that two hashes
    or more fell in; pauses every few thousand hashes."""
    mask = size - 1
    seen, again = bytearray(size >> 3), bytearray(size >> 3)
    for i, h in enumerate(hashes):
        b = h & mask
        index, bit = b >> 3, 1 << (b & 7)
        if seen[index] & bit:
            again[index] |= bit
        else:
            seen[index] |= bit
        if i % _STEP == 0:
            yield
    return again
