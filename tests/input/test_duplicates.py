"""Rows asking for the same URL: which are copies, and of which row (urlcheck.input.duplicates)."""

from __future__ import annotations

import pytest

from urlcheck.input.duplicates import SameURL
from urlcheck.input.feeder import HostFeeder


def index(urls: dict[int, str], key=hash) -> tuple[SameURL, HostFeeder]:
    same, feeder = SameURL(key), HostFeeder(ahead_per_host=100, ahead_total=100)
    for row, url in urls.items():
        feeder.add(row, row * 10, url.split("/")[2])
        same.add(url)
    for _ in same.resolve(*feeder.indexed()):
        pass
    feeder.finish(leave_out=same)
    return same, feeder


def taken(feeder: HostFeeder) -> list[int]:
    rows = []
    while (ref := feeder.take()) is not None:
        rows.append(ref.row)
    return rows


def test_copies_are_held_back_and_released_after_their_first_row_in_file_order() -> None:
    a, b, c = "http://a.test/x", "http://b.test/y", "http://a.test/z"
    urls = {1: a, 2: b, 4: a, 5: c, 7: a, 8: b, 9: c, 12: "http://d.test/"}  # rows 3... done
    same, feeder = index(urls)
    assert sorted(taken(feeder)) == [1, 2, 5, 12]  # one row per URL is fed
    assert len(same) == 4 and len(feeder) == 0
    assert [row for row in range(13) if row in same] == [4, 7, 8, 9]
    assert same.has_copies(1) and not same.has_copies(4) and not same.has_copies(12)
    assert list(same.release(1)) == [(4, 40), (7, 70)]
    assert list(same.release(1)) == []  # each copy is handed out once
    assert list(same.release(12)) == []
    assert len(same) == 2
    assert list(same.release(2)) == [(8, 80)] and list(same.release(5)) == [(9, 90)]
    assert len(same) == 0


def test_a_million_copies_of_one_url_cost_one_row_fed() -> None:
    rows = 200_000  # the same shape as a million, in a fraction of the time
    same, feeder = index(dict.fromkeys(range(1, rows + 1), "http://a.test/same"))
    assert taken(feeder) == [1]
    assert len(same) == rows - 1
    released = same.release(1)
    assert next(released) == (2, 20)
    assert sum(1 for _ in released) == rows - 2


def test_urls_sharing_a_hash_are_copies_here_and_the_spider_tells_them_apart() -> None:
    # key=len: every URL of the same length "collides", as two 64-bit hashes rarely do.
    same, feeder = index({1: "http://a.test/1", 2: "http://a.test/2", 3: "http://a.test/10"}, len)
    assert taken(feeder) == [1, 3]
    assert list(same.release(1)) == [(2, 20)]


def test_nothing_in_common_leaves_the_feeder_as_it_was() -> None:
    same, feeder = index({row: f"http://h{row % 3}.test/{row}" for row in range(1, 31)})
    assert len(same) == 0 and sorted(taken(feeder)) == list(range(1, 31))
    with pytest.raises(ValueError, match="one URL per row"):
        next(SameURL().resolve(*feeder.indexed()))
