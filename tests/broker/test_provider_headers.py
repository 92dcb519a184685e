"""Numbers a provider sends in headers are read (and shown) only when they are ASCII counts."""

from __future__ import annotations

import pytest

from splice_build.broker.providers.github import _rate_limit
from splice_build.broker.providers.http import Response, _status_failure

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


@pytest.mark.parametrize("odd", ODD.values(), ids=ODD.keys())
def test_a_retry_after_that_is_not_an_ascii_count_is_not_shown(odd: str) -> None:
    failure = _status_failure("p", "e", Response(429, {"retry-after": odd}, b""))
    assert str(failure) == "p e: rate limited (429)"


def test_a_retry_after_count_is_shown() -> None:
    failure = _status_failure("p", "e", Response(429, {"retry-after": "30"}, b""))
    assert str(failure) == "p e: rate limited (429); retry after 30"
