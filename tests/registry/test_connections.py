"""What a client can hold of `splice registry serve` before its request is read
(docs/registry.md#connections), attacked for real: the server process runs with few open
files, and the test opens more connections than that, each sending half a request head.
The servers run with a head deadline of ``HEAD_SECONDS`` (``--head-deadline``), so a test
that waits past it waits a second or two, not the default 10 s."""

from __future__ import annotations

import http.client
import os
import socket
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from splice_build.spec.pack import pack_directory
from testing.http_framing import two_framings
from testing.mcp_clients import closed_by_server
from testing.open_files import process_open_files, room_for_sockets
from testing.packages import minimal_manifest, write_package
from testing.registry_server import (
    RunningRegistry,
    launch,
    registry_server,
    serve_argv,
    user_token,
)

HEAD_SECONDS = 1
PARTIAL_HEAD = b"GET /health HTTP/1.1\r\n"  # never finished
UNFINISHED_BODY = (  # no token: POST /auth/tokens reads its body first; 1 of 100 bytes sent
    b"POST /auth/tokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100\r\n\r\n{"
)


def _limited(open_files: tuple[int, int], argv: list[str]) -> list[str]:
    """``argv`` run (exec'd, same process) with ``RLIMIT_NOFILE`` = ``open_files``."""
    code = (
        "import os, resource, sys; "
        f"resource.setrlimit(resource.RLIMIT_NOFILE, {open_files!r}); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    return [sys.executable, "-c", code, *argv]


def _health(url: str) -> int | str:
    try:
        with urllib.request.urlopen(url + "/health", timeout=30) as answer:
            return answer.status
    except OSError as exc:
        return repr(exc)


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    with room_for_sockets() as opened:
        yield opened


def _server(tmp_path: Path, open_files: tuple[int, int]) -> RunningRegistry:
    argv = serve_argv(tmp_path / "data", "--head-deadline", str(HEAD_SECONDS))
    return launch(_limited(open_files, argv), tmp_path / "data")


def _stop(server: RunningRegistry, sockets: list[socket.socket]) -> None:
    """The clients leave, then the server is stopped: stopped with them still open, it
    waited for them until ``stop`` killed it (10 s of every test), and its log held nothing
    of how it took their leaving."""
    for sock in sockets:
        sock.close()
    sockets.clear()
    server.stop()


def test_unfinished_heads_cannot_run_the_server_out_of_files(
    tmp_path: Path, sockets: list[socket.socket]
) -> None:
    server = _server(tmp_path, (256, 256))
    try:
        parts = urlsplit(server.url)
        assert _health(server.url) == 200
        for _ in range(400):  # well past 256 files
            sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
            sock.sendall(PARTIAL_HEAD)
            sockets.append(sock)
        assert _health(server.url) == 200  # while they are all still open
    finally:
        _stop(server, sockets)
    assert server.process.stderr is not None
    log = server.process.stderr.read()
    assert "Traceback" not in log, log[-4000:]
    assert len(log) < 4096, log[:4096]


def test_the_soft_open_file_limit_is_raised_to_the_hard_one(tmp_path: Path) -> None:
    server = _server(tmp_path, (256, 4096))
    try:
        assert process_open_files(server.process.pid) == (4096, 4096)
        assert _health(server.url) == 200
    finally:
        server.stop()


def test_a_request_with_two_framings_is_400_and_its_connection_closed(tmp_path: Path) -> None:
    """Content-Length and Transfer-Encoding together: refused, and nothing after it on the
    connection is read (splice_build/connections.py ``one_framing``)."""
    with registry_server(tmp_path / "data", admin=False) as server:
        parts = urlsplit(server.url)
        assert parts.hostname is not None and parts.port is not None
        headers = {"Content-Type": "application/json"}
        received = two_framings(parts.hostname, parts.port, "/health", b"{}", headers)
        assert received.startswith(b"HTTP/1.1 400 ")
        assert b"connection: close" in received.lower()
        assert received.count(b"HTTP/1.1 ") == 1  # the request after it was never answered
        assert _health(server.url) == 200


def test_unfinished_bodies_cannot_hold_every_connection(
    tmp_path: Path, sockets: list[socket.socket]
) -> None:
    """A complete head and a body that never comes, on a route that reads its JSON body
    before it checks a token: such a connection still waits for its request, so a new one
    displaces it (before, 1,030 of them on the default limit of 1,024 refused every other
    client at once, for as long as they stayed open)."""
    server = _server(tmp_path, (256, 256))  # 128 connections
    try:
        parts = urlsplit(server.url)
        for _ in range(200):
            sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
            sock.sendall(UNFINISHED_BODY)
            sockets.append(sock)
        assert _health(server.url) == 200  # while they are all still open
    finally:
        _stop(server, sockets)
    assert server.process.stderr is not None
    log = server.process.stderr.read()
    assert "Traceback" not in log, log[-4000:]
    assert len(log) < 4096, log[:4096]


def _publish_large(server: RunningRegistry, tmp_path: Path) -> None:
    """A 3 MB artifact that does not compress: more than the sockets' buffers hold."""
    files = {f"data/{n}.bin": os.urandom(1_500_000) for n in "ab"}
    archive = pack_directory(write_package(tmp_path / "pkg", minimal_manifest(), files)).archive
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    token = user_token(server, "acme")
    connection.request("POST", "/publish", archive, {"authorization": f"Bearer {token}"})
    assert connection.getresponse().status == 201
    connection.close()


def test_clients_that_never_read_an_answer_cannot_hold_every_connection(
    tmp_path: Path, sockets: list[socket.socket]
) -> None:
    """Anonymous downloads of a large artifact by clients that never read: once the head
    deadline closed them they kept their file until the answer was written, which was never,
    out of reach of displacement, and every other client was refused at once. A client that
    sent half a head meanwhile was closed at the server's ``--head-deadline``."""
    server = _server(tmp_path, (256, 256))  # 128 connections
    try:
        _publish_large(server, tmp_path)
        parts = urlsplit(server.url)
        for _ in range(140):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(30)
            sock.connect((parts.hostname, parts.port))
            sock.sendall(b"GET /packages/acme/greeter/1.0.0/download HTTP/1.1\r\nHost: x\r\n\r\n")
            sockets.append(sock)
        half = socket.create_connection((parts.hostname, parts.port), timeout=30)
        sockets.append(half)
        half.sendall(PARTIAL_HEAD)
        time.sleep(HEAD_SECONDS + 1)  # past the head deadline of every one of them
        # Closed by the server, nothing answered: an end of file, or a reset when the server
        # closed it with its half head still unread (it may do so at once while every
        # connection is busy, which is how a loaded machine orders it).
        assert closed_by_server(half, time.monotonic() + 30) == b""
        assert _health(server.url) == 200  # while they are all still open
    finally:
        _stop(server, sockets)
    assert server.process.stderr is not None
    log = server.process.stderr.read()
    assert "Traceback" not in log, log[-4000:]
    assert len(log) < 4096, log[:4096]
