"""A request's ``content-length`` is ASCII digits, any number of them (spec/number_text.py).

``int()`` read ``+5``, `` 5``, ``1_0`` and other scripts' digits as lengths, and refused a
valid length padded with 4,300 zeros (found by the fuzz review of number readers: the same
padding raised ``ValueError`` in ``splice mcp --http``, tests/fuzz/test_regressions.py).
uvicorn's own parser refuses most of these before the app, so the app is driven as an ASGI
server that forwards them would drive it.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from starlette.requests import Request

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.http.body import read_limited

LIMIT = 100
BODY = b'{"a":1}'


def _read(length: str) -> bytes:
    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": BODY, "more_body": False}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(b"content-length", length.encode("utf-8"))],
        "app": SimpleNamespace(state=SimpleNamespace()),
    }
    return asyncio.run(read_limited(Request(scope, receive), LIMIT))


def test_a_zero_padded_length_is_its_number() -> None:
    assert _read("0" * 4400 + str(len(BODY))) == BODY
    with pytest.raises(RegistryError) as caught:
        _read("0" * 4400 + str(LIMIT + 1))
    assert caught.value.code == ErrorCode.PAYLOAD_TOO_LARGE


@pytest.mark.parametrize("length", ["+7", " 7", "7 ", "0_7", "\u0667", "-1", "", "7.0", "0x7"])
def test_a_length_that_is_not_ascii_digits_is_bad_request(length: str) -> None:
    with pytest.raises(RegistryError) as caught:
        _read(length)
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert caught.value.message == "Invalid content-length"
