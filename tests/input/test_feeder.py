from __future__ import annotations

from urlcheck.input.feeder import HostFeeder


def _feeder(rows, **kwargs):
    feeder = HostFeeder(**kwargs)
    for row, host in rows:
        feeder.add(row, row * 100, host)
    feeder.finish()
    return feeder


def test_grouped_input_is_fed_round_robin_by_host():
    rows = [(i, "a") for i in range(1, 4)] + [(i, "b") for i in range(4, 6)] + [(6, "c")]
    feeder = _feeder(rows, ahead_per_host=10)
    order = []
    while (ref := feeder.take()) is not None:
        order.append((ref.row, feeder.hosts[ref.host_id], ref.offset))
    assert [r for r, _, _ in order] == [1, 4, 6, 2, 5, 3]
    assert all(offset == row * 100 for row, _, offset in order)
    assert feeder.exhausted and len(feeder) == 0


def test_rows_ahead_per_host_and_overall_are_bounded():
    feeder = _feeder(
        [(i, "a") for i in range(1, 6)] + [(i, "b") for i in range(6, 9)],
        ahead_per_host=2,
        ahead_total=3,
    )
    taken = [feeder.take() for _ in range(3)]
    assert [t.row for t in taken] == [1, 6, 2]
    assert feeder.take() is None  # global limit
    feeder.done(taken[0].host_id)  # a: 1 out, b: 1 out
    assert feeder.take().row == 7  # b's turn comes first after a's
    assert feeder.take() is None  # global limit again
    assert feeder.in_flight == 3


def test_paused_hosts_are_skipped_until_they_come_back():
    paused = {"a"}
    feeder = _feeder(
        [(1, "a"), (2, "a"), (3, "b")], ahead_per_host=5, is_paused=lambda host: host in paused
    )
    assert feeder.take().row == 3
    assert feeder.take() is None and not feeder.exhausted
    paused.clear()
    assert [feeder.take().row, feeder.take().row] == [1, 2]
    assert feeder.exhausted


def test_rows_index_compactly():
    import tracemalloc

    tracemalloc.start()
    feeder = HostFeeder()
    for row in range(1, 200_001):
        feeder.add(row, row * 60, f"h{row % 50}.test")
    feeder.finish()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(feeder) == 200_000 and len(feeder.hosts) == 50
    assert peak / 200_000 < 16  # bytes per row: 12 in three arrays, nothing copied to group them


def test_offsets_past_4_gib_are_kept() -> None:
    feeder = HostFeeder(ahead_per_host=5)
    feeder.add(1, 10, "a")
    feeder.add(2, 5 << 32, "a")
    feeder.finish()
    assert [feeder.take().offset, feeder.take().offset] == [10, 5 << 32]


def test_rows_added_while_others_are_handed_out_join_the_round() -> None:
    feeder = HostFeeder(ahead_per_host=5)
    feeder.add(1, 0, "a")
    assert feeder.take().row == 1
    assert feeder.take() is None and not feeder.exhausted  # more rows may come
    feeder.add(2, 0, "b")
    feeder.add(3, 0, "a")  # a had none left: back in the round
    feeder.add(4, 0, "b")
    feeder.finish()
    order = []
    while (ref := feeder.take()) is not None:
        order.append(ref.row)
    assert order == [2, 3, 4]
    assert feeder.exhausted and len(feeder) == 0
