"""A URL's port is read as WHATWG reads it: ASCII digits, any number of leading zeros.

``int()`` refuses 4,300 digits or more, leading zeros included: a hostile server's redirect to
``http://127.0.0.1:000…0080/`` (4,400 zeros) raised ``ValueError`` in the parent's guarded
fetch, and the tool got "fetch failed" with Python's message about integer string conversion
as its cause (found reading every ``int()`` of outside text after the fuzz review's
content-length finding); Node's ``URL`` reads that port as 80.
"""

from __future__ import annotations

import pytest

from splice_build.security.urls import InvalidUrl, parse_url, resolve_reference

ZEROS = "0" * 4400


def test_a_zero_padded_port_is_its_number_also_in_a_redirect() -> None:
    assert parse_url(f"http://example.com:{ZEROS}80/a").href == "http://example.com/a"
    assert parse_url(f"http://example.com:{ZEROS}8080/a").port == "8080"
    base = parse_url("http://example.com/start")
    moved = resolve_reference(f"http://example.org:{ZEROS}81/next", base)
    assert (moved.hostname, moved.port) == ("example.org", "81")


@pytest.mark.parametrize(
    "port",
    ["9" * 4400, f"{ZEROS}65536", "65536", "\u00b2", "\u0661", "+80"],
    ids=["4400-nines", "padded-65536", "65536", "superscript-two", "arabic-indic-one", "plus"],
)
def test_a_port_out_of_range_or_not_ascii_digits_is_an_invalid_url(port: str) -> None:
    with pytest.raises(InvalidUrl) as caught:
        parse_url(f"http://example.com:{port}/")
    assert len(str(caught.value)) < 80  # the port is shown cut short
