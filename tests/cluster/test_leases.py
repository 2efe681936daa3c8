"""LeaseBook on a manual clock: renewal, the send deadline, and callbacks that never finish."""

from __future__ import annotations

import pytest

from urlcheck.clock import ManualClock
from urlcheck.cluster import Lease, Task
from urlcheck.cluster.leases import LeaseBook


def lease(row: int, host: str = "a", token: str = "1") -> Lease:
    url = f"http://{host}/{row}"
    return Lease(host, token, 0, Task(row, url, url, None, {}, url))


def test_send_only_while_the_deadline_is_comfortably_ahead() -> None:
    clock = ManualClock(100.0)
    book = LeaseBook(30.0, margin=5.0, clock=clock)
    book.add([lease(1)], asked_at=99.0)  # the claim was sent at 99: the lease ends >= 129
    assert book.safe_to_send(1)
    clock.advance(23.9)  # 123.9: 5.1 s left
    assert book.safe_to_send(1)
    clock.advance(0.2)
    assert not book.safe_to_send(1)
    assert not book.safe_to_send(2)  # not ours


def test_renewal_moves_the_deadline_and_drops_lost_leases() -> None:
    clock = ManualClock(0.0)
    book = LeaseBook(30.0, clock=clock)
    a, b = lease(1, "a", "7"), lease(2, "b", "8")
    book.add([a, b], asked_at=0.0)
    clock.advance(20)
    lost = book.renewed(book.renewable(), asked_at=20.0, lost=["b"])
    assert lost == [b] and 2 not in book and book.get(1) == a
    clock.advance(20)  # 40: past the first deadline, within the renewed one
    assert book.safe_to_send(1)
    # A renewal for a token this book no longer holds changes nothing.
    book.pop(1)
    book.add([lease(1, "a", "9")], asked_at=40.0)
    assert book.renewed([a], asked_at=60.0, lost=["a"]) == []
    assert 1 in book


def test_a_finished_download_without_outcome_is_left_to_expire() -> None:
    clock = ManualClock(0.0)
    book = LeaseBook(30.0, clock=clock)
    book.add([lease(1), lease(2, "b")], asked_at=0.0)
    book.sent(1)
    book.finished(1)
    assert [x.task.row for x in book.unsent()] == [2]
    assert book.awaiting_outcome(within=10) == 1
    clock.advance(59)
    assert book.awaiting_outcome(within=10) == 0
    assert len(book.renewable(stuck_after=60)) == 2
    clock.advance(2)
    assert [x.task.row for x in book.renewable(stuck_after=60)] == [2]


def test_ttl_must_exceed_the_margin() -> None:
    with pytest.raises(ValueError, match="must exceed"):
        LeaseBook(5.0, margin=5.0)
