"""splice_build/spec/js_date.py writes what ``new Date(ms).toISOString()`` does (values as
Node 24 printed them for 0, 1999.9, 1765136234123.7 and -1 ms)."""

from __future__ import annotations

import pytest

from splice_build.spec.js_date import iso_string


@pytest.mark.parametrize(
    ("seconds", "written"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (1.9999, "1970-01-01T00:00:01.999Z"),  # a Date holds whole milliseconds: truncated
        (1765136234.1237, "2025-12-07T19:37:14.123Z"),
        (-0.001, "1969-12-31T23:59:59.999Z"),
    ],
)
def test_iso_string_is_javascripts_to_iso_string(seconds: float, written: str) -> None:
    assert iso_string(seconds) == written
