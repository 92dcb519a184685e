"""The rate-limit headers a GitHub answer carries are read as counts only when they are."""

from __future__ import annotations

import pytest

from splice_build.broker.providers.github import _rate_limit

ODD = {
    "superscript": "²",
    "arabic-indic": "١٢",
    "5000 digits": "5" * 5000,
    "negative": "-1",
    "exponent": "1e3",
    "space": " 60",
    "empty": "",
    "hex": "0x10",
}


@pytest.mark.parametrize("odd", ODD.values(), ids=ODD.keys())
def test_a_header_that_is_not_an_ascii_count_is_left_out(odd: str) -> None:
    read = _rate_limit(
        {"x-ratelimit-limit": odd, "x-ratelimit-remaining": "57", "x-ratelimit-reset": odd}
    )
    assert read == {"limit": None, "remaining": 57, "reset": None}


def test_counts_are_read() -> None:
    headers = {"x-ratelimit-limit": "60", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "17"}
    assert _rate_limit(headers) == {"limit": 60, "remaining": 0, "reset": 17}
    assert _rate_limit({}) is None
