from urlcheck.check.ledger import RowLedger


def test_rows_fed_without_a_written_line_are_the_gap():
    ledger: RowLedger[str] = RowLedger()
    for row in (1, 2, 3, 5000):
        ledger.fed(row, f"task{row}")
    ledger.fed(2)  # a second request of the same row is not a second row
    assert ledger.fed_count == 4
    ledger.finished(1)
    ledger.finished(5000)
    assert ledger.open_tasks() == {2: "task2", 3: "task3"}
    ledger.written(1)
    ledger.written(5000)
    ledger.written(5000)
    ledger.written(77)  # done in an earlier run: not this run's business
    assert ledger.missing() == (2, [2, 3])
    ledger.written(2)
    ledger.written(3)
    assert ledger.missing() == (0, [])


def test_missing_lists_at_most_the_limit():
    ledger: RowLedger[None] = RowLedger()
    for row in range(1, 101):
        ledger.fed(row)
    assert ledger.missing(limit=3) == (100, [1, 2, 3])
