"""many_to_one (urlcheck.check.manytoone): many redirected rows landing on one URL."""

from __future__ import annotations

import tracemalloc

from urlcheck.check.manytoone import LandingTally


def test_more_than_n_rows_on_one_url_are_flagged() -> None:
    tally = LandingTally(rows=3, share=100.0)
    for row in range(1, 5):  # from four hosts: no host's share counts
        tally.add(row, f"http://h{row}.test/p", "https://new.test/catch-all", 1)
    tally.add(5, "http://h5.test/p", "https://new.test/own", 1)
    many = tally.result()
    assert [(x.url, x.rows) for x in many.landings] == [
        ("https://new.test/catch-all", [1, 2, 3, 4])
    ]
    assert many.rows == {1, 2, 3, 4}
    assert many.to_dict() == [{"url": "https://new.test/catch-all", "rows": 4}]
    at_limit = LandingTally(rows=4, share=100.0)
    for row in range(1, 5):
        at_limit.add(row, f"http://h{row}.test/p", "https://new.test/catch-all", 1)
    assert at_limit.result().rows == frozenset()  # more than N, not N


def test_a_share_of_a_hosts_redirected_rows_is_flagged_from_three_rows() -> None:
    tally = LandingTally(rows=100, share=50.0)
    for row in (1, 2, 3):
        tally.add(row, "http://old.test/a", "https://new.test/category/", 1)
    for row in (4, 5, 6):
        tally.add(row, "http://old.test/b", f"https://new.test/page{row}", 1)
    tally.add(7, "http://old.test/", "https://new.test/", 0)  # not redirected: not counted
    assert tally.result().rows == frozenset()  # 3 of 6 is 50%: not more than 50%
    tally = LandingTally(rows=100, share=50.0)
    for row in (1, 2, 3):
        tally.add(row, "http://old.test/a", "https://new.test/category", 1)
    tally.add(4, "http://old.test/b", "https://new.test/page", 1)
    assert tally.result().rows == {1, 2, 3}  # 3 of 4
    small = LandingTally(rows=100, share=50.0)
    for row in (1, 2):
        small.add(row, "http://tiny.test/a", "https://new.test/category", 1)
    assert small.result().rows == frozenset()  # 2 of 2, under the floor of 3 rows


def test_rows_sent_where_the_sheet_says_are_not_flagged_and_urls_compare_as_verdicts_do() -> None:
    tally = LandingTally(rows=2, share=100.0)
    for row in (1, 2):
        tally.add_line(
            {
                "row": row,
                "requested_url": f"http://old.test/{row}",
                "final_url": "https://new.test/all",
                "hops": 1,
                "expected": "https://new.test/all",
                "reasons": [],
            }
        )
    tally.add(3, "http://old.test/3", "https://NEW.test/all", 1)
    tally.add(4, "http://old.test/4", "https://new.test:443/all", 2)
    assert tally.result().rows == frozenset()  # 2 unasked rows: not more than 2
    tally.add(5, "http://old.test/5", "https://new.test/all#x", 1)
    assert tally.result().rows == {3, 4, 5}
    tally.add_line({"row": "bad", "final_url": None})  # a hostile line is skipped


def test_rows_landing_on_pages_of_their_own_keep_no_url() -> None:
    """A million-row audit redirects each row to a page of its own: the tally keeps numbers for
    them, not URLs (it kept a dict entry, a list and a counter per landing, ~700 bytes a row)."""
    tracemalloc.start()
    try:
        tally = LandingTally(rows=10, share=50.0)
        for row in range(1, 40_001):
            host = f"old{row % 50}.test"
            tally.add(row, f"http://{host}/p{row}", f"https://new.test/page/{row}", 1)
            if row % 2000 == 0:  # 20 rows from 20 hosts land on one page, among them
                tally.add(row + 1_000_000, f"http://{host}/x", "https://new.test/Sale", 1)
        many = tally.result()
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(x.url, len(x.rows)) for x in many.landings] == [("https://new.test/Sale", 20)]
    assert many.rows == {row + 1_000_000 for row in range(2000, 40_001, 2000)}
    assert used < 2_000_000  # 24 bytes a row, a filter of 2, the few URLs seen twice
