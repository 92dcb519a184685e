"""The HTTP registry client against a hostile registry on 127.0.0.1: every body is capped
while it is read (the bytes themselves are verified by the installer, not here)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.client.http import MAX_JSON_BYTES, HttpRegistryClient
from splice_build.spec.limits import MAX_ARCHIVE_BYTES

ARTIFACT = b"\x1f\x8b" + b"x" * 1000


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

    def do_GET(self) -> None:
        if self.path.endswith("/huge-undeclared/1.0.0/download"):
            self._stream(64 * 1024 * 1024, declare=False)
        elif self.path.endswith("/huge-declared/1.0.0/download"):
            self._stream(64 * 1024 * 1024, declare=True)
        elif self.path.endswith("/huge-json"):
            self._stream(MAX_JSON_BYTES + 10 * 65536, declare=False)
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
