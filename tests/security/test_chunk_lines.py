"""No line of a chunked answer is read past ``MAX_CHUNK_LINE`` (security/http_session.py).

urllib3 read a chunk's size line and the trailer lines with a bare ``readline()``: a registry
whose first size line never ended made ``splice info`` hold 2.9 GB in 12 s. Here the long
lines end, after 1 MiB, in an answer that is otherwise whole: the old client read them and
returned the package; now the answer is broken, ``REGISTRY_UNREACHABLE``.
"""

from __future__ import annotations

import json

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.client.http import HttpRegistryClient
from splice_build.security.guarded_http import GuardedSession
from splice_build.security.http_session import MAX_CHUNK_LINE
from splice_build.security.net_errors import NetworkFailure
from testing.netservers import drip_server

PACKAGE = json.dumps({"name": "@acme/thing", "versions": []}).encode()
LONG = 1 << 20
assert LONG > MAX_CHUNK_LINE


def _chunked(size_line: bytes, trailer: bytes = b"") -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n"
    return head + b"\r\n" + size_line + b"\r\n" + PACKAGE + b"\r\n0\r\n" + trailer + b"\r\n"


def _package(answer: bytes) -> dict[str, object]:
    with drip_server([answer], pause_s=0) as server:
        client = HttpRegistryClient(f"http://127.0.0.1:{server.port}")
        try:
            return client.package("@acme/thing")
        finally:
            client.close()


def test_a_chunked_answer_with_extension_and_trailer_is_read() -> None:
    answer = _chunked(b"%x;note=1" % len(PACKAGE), trailer=b"x-note: 1\r\n")
    assert _package(answer)["name"] == "@acme/thing"


@pytest.mark.parametrize(
    "answer",
    [
        _chunked(b"0" * LONG + b"%x" % len(PACKAGE)),
        _chunked(b"%x" % len(PACKAGE), trailer=b"x-note: " + b"a" * LONG + b"\r\n"),
    ],
    ids=["size-line", "trailer-line"],
)
def test_a_chunked_line_past_the_bound_is_a_broken_answer(answer: bytes) -> None:
    with pytest.raises(RegistryError) as caught:
        _package(answer)
    assert caught.value.code == ErrorCode.REGISTRY_UNREACHABLE
    assert caught.value.details == ("ChunkedEncodingError",)


def test_the_guarded_session_bounds_a_chunked_line_too() -> None:
    """A sandboxed tool's fetch and the broker's providers: ``NETWORK_ERROR``."""
    answer = _chunked(b"0" * LONG + b"%x" % len(PACKAGE))
    with (
        drip_server([answer], pause_s=0) as server,
        GuardedSession(["127.0.0.1"], timeout_s=5) as http,
        pytest.raises(NetworkFailure) as caught,
    ):
        http.request("GET", f"http://127.0.0.1:{server.port}/")
    assert caught.value.code == ErrorCode.NETWORK_ERROR
    assert "LineTooLong" in caught.value.message
