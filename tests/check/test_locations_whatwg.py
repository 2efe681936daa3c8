"""urlcheck resolves Locations as the WHATWG URL Standard (and so browsers) do: every
conformance case that a redirect from an http(s) page can meet."""

from __future__ import annotations

import pytest

from tests.check.whatwg_cases import CASES
from urlcheck.check.urls import InvalidURL, resolve_location

_C0_SPACE = "".join(map(chr, range(0x21)))


def test_the_table_covers_every_outcome() -> None:
    # Guards against an edit that drops a whole class of cases.
    assert len(CASES) == 166
    assert sum(expected is None for _, _, expected in CASES) >= 40
    assert sum("\\" in location for location, _, _ in CASES) >= 10
    assert sum(base.startswith("https:") for _, base, _ in CASES) >= 2


@pytest.mark.parametrize(("location", "base", "expected"), CASES)
def test_location_resolves_as_the_standard_says(
    location: str, base: str, expected: str | None
) -> None:
    if expected is None:
        with pytest.raises(InvalidURL) as info:
            resolve_location(base, location)
        assert info.value.code == "bad_location"
    elif not location.strip(_C0_SPACE):
        # urlcheck's policy: an empty Location is reported, and says where a browser goes.
        with pytest.raises(InvalidURL) as info:
            resolve_location(base, location)
        assert info.value.code == "bad_location"
        assert info.value.warnings == ("location_empty",)
        assert f"a browser would request {expected} again" in str(info.value)
    else:
        assert resolve_location(base, location).url == expected
