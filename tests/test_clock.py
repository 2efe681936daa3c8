"""The one way urlcheck writes a time down: UTC, ISO 8601 with a ``Z`` (milliseconds, or
microseconds only when there are any), and a compact form for file names."""

from __future__ import annotations

import pytest

from urlcheck.clock import ManualClock, Reading, boot_id, parse_utc_iso, utc_compact, utc_iso


def test_utc_iso_round_trip() -> None:
    assert utc_iso(0) == "1970-01-01T00:00:00.000Z"
    assert utc_iso(1_700_000_000.25) == "2023-11-14T22:13:20.250Z"
    assert parse_utc_iso("2023-11-14T22:13:20.250Z") == 1_700_000_000.25
    assert parse_utc_iso("2023-11-14T23:13:20+01:00") == 1_700_000_000.0
    with pytest.raises(ValueError, match="time zone"):
        parse_utc_iso("2023-11-14T22:13:20")


def test_auto_precision_shows_microseconds_only_when_there_are_any() -> None:
    assert utc_iso(1_700_000_000, timespec="auto") == "2023-11-14T22:13:20Z"
    assert utc_iso(1_700_000_000.5, timespec="auto") == "2023-11-14T22:13:20.500000Z"


def test_the_compact_stamp_of_a_file_name_drops_the_fraction() -> None:
    assert utc_compact(1_700_000_000.999) == "20231114T221320Z"
    assert utc_compact(0) == "19700101T000000Z"


def test_a_manual_clock_moves_only_forward() -> None:
    clock = ManualClock(10.0)
    assert clock() == 10.0
    assert clock.advance(2.5) == 12.5 == clock()
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)


def test_a_reading_takes_both_clocks_and_names_the_boot() -> None:
    reading = Reading.now(ManualClock(1_700_000_000.0), ManualClock(42.0))
    assert (reading.wall, reading.monotonic) == (1_700_000_000.0, 42.0)
    # Linux names each boot; the id is the same for every process of this boot
    assert reading.boot == boot_id() and boot_id() is not None and len(boot_id() or "") == 36
