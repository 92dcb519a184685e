"""The HTTP registry client against a hostile registry on 127.0.0.1: every body is capped
while it is read, every JSON body goes through the hostile-input decoder (nesting bounded by
what a registry can legitimately send) and a download's ``x-splice-integrity`` must name its
bytes or the registry's metadata (the bytes themselves are verified by the installer, not
here)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.client.answers import MAX_ANSWER_DEPTH
from splice_build.registry.client.http import MAX_ERROR_BYTES, MAX_JSON_BYTES, HttpRegistryClient
from splice_build.spec.digests import integrity_of
from splice_build.spec.limits import MAX_ARCHIVE_BYTES

ARTIFACT = b"\x1f\x8b" + b"x" * 1000
# As deep as the answer cap allows, in a field the client does not even read.
_LEVELS = (MAX_JSON_BYTES - 64) // 2
DEEP_JSON = b'{"name": "@evil/deep-json", "x": ' + b"[" * _LEVELS + b"]" * _LEVELS + b"}"
# A well-formed package answer exactly as deep as a registry answer can be.
_INSIDE = MAX_ANSWER_DEPTH - 1
AT_THE_BOUND = (
    b'{"name": "@evil/at-the-bound", "versions": [], "x": ' + b"[" * _INSIDE + b"]" * _INSIDE + b"}"
)


class _Hostile(BaseHTTPRequestHandler):
    sent: list[int]

    def log_message(self, *args: object) -> None:
        pass

    def _stream(self, total: int, *, declare: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        if declare:
            self.send_header("content-length", str(total))
        self.end_headers()
        block = b" " * 65536
        written = 0
        try:
            while written < total:
                self.wfile.write(block)
                written += len(block)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.server.sent.append(written)  # type: ignore[attr-defined]

    def _send(self, status: int, body: bytes, *, integrity: str | None = None) -> None:
        self.send_response(status)
        self.send_header("content-length", str(len(body)))
        if integrity is not None:
            self.send_header("x-splice-integrity", integrity)
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.endswith("/huge-undeclared/1.0.0/download"):
            self._stream(64 * 1024 * 1024, declare=False)
        elif self.path.endswith("/huge-declared/1.0.0/download"):
            self._stream(64 * 1024 * 1024, declare=True)
        elif self.path.endswith("/huge-json"):
            self._stream(MAX_JSON_BYTES + 10 * 65536, declare=False)
        elif self.path.endswith("/deep-json"):
            self._send(200, DEEP_JSON)
        elif self.path.endswith("/at-the-bound"):
            self._send(200, AT_THE_BOUND)
        elif self.path.endswith("/deep-401"):
            self._send(401, b"[" * MAX_ERROR_BYTES)
        elif self.path.endswith("/lying/1.0.0/download"):
            self._send(200, ARTIFACT, integrity="sha256-" + "1" * 64)
        elif self.path.endswith("/honest/1.0.0/download"):
            self._send(200, ARTIFACT, integrity=integrity_of(ARTIFACT))
        elif self.path.endswith("/huge-401"):
            body = b'{"error": {"code": "UNAUTHENTICATED", "message": "' + b"x" * 100 * 1024
            self.send_response(401)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path.endswith("/small/1.0.0/download"):
            self.send_response(200)
            self.send_header("content-length", str(len(ARTIFACT)))
            self.end_headers()
            self.wfile.write(ARTIFACT)
        else:
            self.send_response(404)
            self.end_headers()


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[HttpRegistryClient, list[int]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.sent = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield HttpRegistryClient(f"http://127.0.0.1:{server.server_port}"), server.sent  # type: ignore[attr-defined]
    finally:
        server.shutdown()


@pytest.mark.parametrize("name", ["huge-undeclared", "huge-declared"])
def test_an_oversized_artifact_is_refused_while_reading(hostile, name: str) -> None:
    client, sent = hostile
    before = len(sent)
    with pytest.raises(RegistryError) as caught:
        client.download(f"@evil/{name}", "1.0.0")
    assert caught.value.code is ErrorCode.REGISTRY_ERROR
    assert str(MAX_ARCHIVE_BYTES) in caught.value.message
    deadline = time.monotonic() + 10
    while len(sent) == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sent[before] < 64 * 1024 * 1024  # the client hung up: the rest was never sent


def test_an_oversized_json_answer_is_refused(hostile) -> None:
    client, _ = hostile
    with pytest.raises(RegistryError) as caught:
        client.package("@evil/huge-json")
    assert caught.value.code is ErrorCode.REGISTRY_ERROR
    assert "larger than" in caught.value.message


def test_an_artifact_within_the_limit_is_returned_whole(hostile) -> None:
    client, _ = hostile
    assert client.download("@evil/small", "1.0.0") == ARTIFACT


def test_an_oversized_error_body_keeps_its_status(hostile) -> None:
    """A 401 with 100 KiB of body is still the 401 (only the first 64 KiB are read)."""
    client, _ = hostile
    with pytest.raises(RegistryError) as caught:
        client.package("@evil/huge-401")
    assert caught.value.code is ErrorCode.UNAUTHENTICATED


def test_an_answer_nested_deeper_than_any_registry_answer_is_refused_unparsed(hostile) -> None:
    """16 MiB of ``[[[…`` (8 million levels) used to be parsed whole, seconds per million
    levels, after the deadline; it is refused by one linear scan. Counted in this thread's
    CPU time, which reads and scans the answer (about 1 s; parsed whole first, 11 s): a
    loaded machine stretched its wall time past 20 s."""
    client, _ = hostile
    started = time.thread_time()
    with pytest.raises(RegistryError) as caught:
        client.package("@evil/deep-json")
    assert caught.value.code is ErrorCode.REGISTRY_ERROR
    assert list(caught.value.details) == [
        f"the answer is not JSON: nested deeper than {MAX_ANSWER_DEPTH} levels"
    ]
    assert time.thread_time() - started < 5


def test_an_answer_as_deep_as_a_registry_answer_can_be_is_read(hostile) -> None:
    client, _ = hostile
    assert client.package("@evil/at-the-bound")["name"] == "@evil/at-the-bound"


def test_a_deeply_nested_error_body_keeps_its_status(hostile) -> None:
    client, _ = hostile
    with pytest.raises(RegistryError) as caught:
        client.package("@evil/deep-401")
    assert caught.value.code is ErrorCode.UNAUTHENTICATED


def test_a_download_whose_integrity_header_names_other_bytes_is_refused(hostile) -> None:
    client, _ = hostile
    with pytest.raises(RegistryError) as caught:
        client.download("@evil/lying", "1.0.0")
    assert caught.value.code is ErrorCode.INTEGRITY_MISMATCH
    assert list(caught.value.details) == [
        "header: sha256-" + "1" * 64,
        f"bytes: {integrity_of(ARTIFACT)}",
    ]
    assert client.download("@evil/honest", "1.0.0") == ARTIFACT
