"""A registry (or anyone between an http:// registry and the client) chooses its headers: a
``content-length`` that ``str.isdigit()`` accepts but ``int()`` refuses (``²``, or 5,000
digits) is no number to the client, never an internal error.

The registry is a raw socket server on 127.0.0.1 that answers every request with the package
answer of ``@acme/greeter`` under the given ``content-length`` and closes the connection, so
the body is read to its end whatever the header says.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from testing.cli import run_splice

ANSWER = json.dumps(
    {"name": "@acme/greeter", "versions": [{"version": "1.0.0"}], "latest": "1.0.0"}
).encode()


@contextmanager
def _registry_with_length(declared: bytes) -> Iterator[str]:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)  # so that the thread sees ``stop`` (close does not end accept)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
    reply = head + declared + b"\r\nconnection: close\r\n\r\n" + ANSWER
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.recv(65536)
                connection.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        listener.close()


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (
            "²".encode("latin-1"),
            "malformed document",
        ),  # the body is read; the next answer is no version answer
        (b"1" + b"0" * 5000, "is larger than"),
    ],
    ids=["superscript-two", "five-thousand-digits"],
)
def test_a_content_length_int_refuses_is_no_internal_error(
    tmp_path: Path, declared: bytes, message: str
) -> None:
    with _registry_with_length(declared) as url:
        done = run_splice("--json", "--registry", url, "info", "@acme/greeter", cwd=tmp_path)
    assert done.code == 1, done.stdout + done.stderr
    error = done.json()["error"]
    assert error["code"] == "REGISTRY_ERROR", error
    assert message in error["message"], error
