"""What a client can hold of the HTTP server (docs/mcp.md#connections), attacked for real.

Every test starts the demo server process and opens real sockets to it. Nothing measures
speed: a deadline below is a bound on a wait that must end, far above the server's own
(``HEAD_SECONDS``, ``BODY_SECONDS``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from splice_build.connections import (
    ACCEPT_ERROR,
    MAX_CHUNKS,
    MAX_CONNECTIONS,
    REQUEST_WARNINGS,
    AcceptErrorLog,
    RequestWarningLog,
    max_connections,
)
from testing.mcp_clients import (
    DEMO_TOKEN,
    child_env,
    closed_by_server,
    demo_argv,
    http_server,
    read_by_the_server,
)
from testing.open_files import process_open_files, room_for_sockets

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
PARTIAL_HEAD = b"POST /mcp HTTP/1.1\r\n"  # no token, never finished


def request(body: bytes = PING, *, content_length: int | None = None) -> bytes:
    length = len(body) if content_length is None else content_length
    return (
        f"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DEMO_TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode() + body


def ping(url: str, timeout: float = 30) -> str:
    """The status line of a ping on a fresh connection, or what went wrong."""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
            sock.sendall(request())
            return sock.recv(65536).split(b"\r\n", 1)[0].decode()
    except OSError as exc:
        return repr(exc)


@pytest.fixture
def many_sockets() -> Iterator[list[socket.socket]]:
    with room_for_sockets() as sockets:
        yield sockets


def test_partial_heads_cannot_run_the_server_out_of_files(
    many_sockets: list[socket.socket],
) -> None:
    """The review's attack: more connections than the server has files, each sending the
    first line of a request and nothing more, no token. The server stays reachable and its
    log stays quiet."""
    argv = demo_argv("http", "0")
    with http_server(argv, env=child_env(), open_files=(256, 256)) as (url, process):
        parts = urlsplit(url)
        assert ping(url).startswith("HTTP/1.1 200")
        for _ in range(400):  # well past 256 files
            sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
            sock.sendall(PARTIAL_HEAD)
            many_sockets.append(sock)
        assert ping(url).startswith("HTTP/1.1 200")  # while they are all still open
        for sock in many_sockets:
            sock.close()
        assert ping(url).startswith("HTTP/1.1 200")
    stderr = process.stderr.read() if process.stderr else b""
    assert b"Traceback" not in stderr
    assert len(stderr) < 4096, stderr[:4096]


def test_the_soft_open_file_limit_is_raised_to_the_hard_one() -> None:
    argv = demo_argv("http", "0")
    with http_server(argv, env=child_env(), open_files=(256, 4096)) as (url, process):
        assert process_open_files(process.pid) == (4096, 4096)
        assert ping(url).startswith("HTTP/1.1 200")


def test_connection_cap_follows_the_open_file_limit() -> None:
    assert max_connections(256) == 128
    assert max_connections(1 << 20) == MAX_CONNECTIONS
    assert max_connections(resource.RLIM_INFINITY) == MAX_CONNECTIONS
    assert max_connections(1) == 1


def test_a_slow_head_and_a_stalled_body_are_closed() -> None:
    """A head that trickles in (one header line every half second, so never idle) is closed
    at its deadline; an authorized request whose body never arrives is answered 408 and
    closed. The server's deadlines are shortened to 2 and 3 s (`splice mcp` has 10 and 30)."""
    argv = demo_argv("http", "0", "--deadlines", "2,3")
    with http_server(argv, env=child_env()) as (url, process):
        parts = urlsplit(url)
        address = (parts.hostname, parts.port)
        trickle = socket.create_connection(address, timeout=30)
        stall = socket.create_connection(address, timeout=30)
        try:
            trickle.sendall(PARTIAL_HEAD)
            stall.sendall(request(b"{", content_length=1000))
            deadline = time.monotonic() + 120
            closed = False
            while time.monotonic() < deadline and not closed:
                try:
                    trickle.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    closed = True
                    break
                closed = closed_by_server(trickle, time.monotonic() + 0.5) is not None
            assert closed, "a trickling head was never closed"
            answer = closed_by_server(stall, time.monotonic() + 120)
            assert answer is not None, "a stalled body was never closed"
            assert answer.startswith(b"HTTP/1.1 408")
            assert b'"code":-32600' in answer
            assert ping(url).startswith("HTTP/1.1 200")
        finally:
            trickle.close()
            stall.close()
    stderr = process.stderr.read() if process.stderr else b""
    assert b"Traceback" not in stderr


def test_accept_errors_are_condensed_to_one_line() -> None:
    """asyncio reports a failed accept() once per pending connection, every second; the
    server's handler turns a burst of them into one line, and passes anything else on."""
    lines: list[str] = []
    others: list[str] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        handler = AcceptErrorLog(lines.append, seconds=3600)
        loop.set_exception_handler(handler)
        error = OSError(24, "Too many open files")
        for _ in range(10_000):
            loop.call_exception_handler({"message": ACCEPT_ERROR, "exception": error})
        loop.default_exception_handler = lambda context: others.append(context["message"])  # type: ignore[method-assign]
        loop.call_exception_handler({"message": "something else"})

    asyncio.run(scenario())
    assert len(lines) == 1
    assert "Too many open files" in lines[0]
    assert others == ["something else"]


def test_request_warnings_are_condensed_per_kind() -> None:
    """uvicorn's warning about one request passes once per window and kind, with the count
    of those it stood for; other records pass unchanged. The clock is the test's."""
    now = [0.0]
    condensed = RequestWarningLog(seconds=10, clock=lambda: now[0])

    def passes(message: str) -> str | None:
        record = logging.LogRecord("uvicorn.error", logging.WARNING, "", 0, message, (), None)
        return record.getMessage() if condensed.filter(record) else None

    for kind in REQUEST_WARNINGS:
        shown = [line for _ in range(1000) if (line := passes(kind + " more")) is not None]
        assert len(shown) == 1 and shown[0].startswith(f"{kind} (1 times")
    assert passes("Application startup failed.") == "Application startup failed."
    now[0] = 10.0
    assert passes(REQUEST_WARNINGS[0]) == (
        f"{REQUEST_WARNINGS[0]} (1000 times since the last such line; shown at most every 10 s)"
    )


def test_a_flood_of_refused_requests_is_not_a_flood_of_log_lines() -> None:
    """Before any token: requests h11 refuses, each on its own connection, and requests
    asking for an Upgrade, pipelined on one. Before, the server logged one line for each
    refused request and two for each Upgrade (one telling to install a WebSocket library);
    now each kind is one line per window, while the server answers them all."""
    with http_server(demo_argv("http", "0"), env=child_env()) as (url, process):
        parts = urlsplit(url)
        address = (parts.hostname, parts.port)
        for _ in range(50):
            with socket.create_connection(address, timeout=30) as sock:
                sock.sendall(b"NOT HTTP\r\n\r\n")
                assert sock.recv(100).startswith(b"HTTP/1.1 400 ")
        upgrade = b"GET /mcp HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
        with socket.create_connection(address, timeout=30) as sock:
            sock.sendall(upgrade * 100)
            answered = b""
            while answered.count(b"HTTP/1.1 401 ") < 100:
                chunk = sock.recv(65536)
                assert chunk, answered[-200:]
                answered += chunk
        assert ping(url) == "HTTP/1.1 200 OK"
        process.terminate()
        _out, err = process.communicate(timeout=30)
    stderr = err.decode()
    for kind in REQUEST_WARNINGS:
        assert 1 <= stderr.count(kind) < 5, stderr[-2000:]  # one per 10 s window
    assert "pip install" not in stderr


def _answered(address: tuple[str, int], *pieces: bytes) -> bytes:
    """What the server sends on a connection of its own to ``pieces`` until it closes it, a
    piece sent once the answer to the one before has begun (a single piece: all at once)."""
    received = b""
    with socket.create_connection(address, timeout=30) as sock:
        for piece in pieces:
            sock.sendall(piece)
            if piece is not pieces[-1]:
                while not received.endswith(b"}}"):  # the whole JSON-RPC error
                    received += sock.recv(65536)
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
    return received


def test_chunked_bodies_the_parser_refuses_close_their_connection_quietly() -> None:
    """A chunked body whose framing breaks (a chunk size that is no number), and one of more
    than ``MAX_CHUNKS`` chunks, before any token is read. Sent with its head, the first was
    answered 400 by uvicorn and then by the app, which h11 refused: "Exception in ASGI
    application" and a traceback. Sent after the 401 that answered it unread, uvicorn's 400
    was refused: "Fatal error: protocol.data_received() call failed." and a traceback. And a
    body of 1-byte chunks had no end (its 401 sent, it was parsed on, at 0.3 s of the loop
    for each 256 KiB read): a ping on another connection waited 4.2 s. Now each is refused
    and its connection closed, with the one condensed line of a refused request."""
    no_token = (
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    blank = b"1\r\n \r\n"  # one chunk of JSON's white space
    last = b"%x\r\n%s\r\n0\r\n\r\n" % (len(PING), PING)
    with http_server(demo_argv("http", "0"), env=child_env()) as (url, process):
        parts = urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        address = (parts.hostname, parts.port)
        with_head = _answered(address, no_token + b"zz\r\n")
        after_401 = _answered(address, no_token, b"zz\r\n")
        chunked = request(b"").replace(b"Content-Length: 0", b"Transfer-Encoding: chunked")
        too_many = _answered(address, chunked + blank * MAX_CHUNKS + last)
        closing = chunked.replace(b"Host: x\r\n", b"Host: x\r\nConnection: close\r\n")
        as_many = _answered(address, closing + blank * (MAX_CHUNKS - 1) + last)
        process.terminate()
        _out, err = process.communicate(timeout=30)
    assert with_head.startswith(b"HTTP/1.1 400 ") and with_head.count(b"HTTP/1.1") == 1
    assert after_401.startswith(b"HTTP/1.1 401 ") and after_401.endswith(b"}}")
    assert too_many.startswith(b"HTTP/1.1 400 ") and too_many.count(b"HTTP/1.1") == 1
    assert as_many.startswith(b"HTTP/1.1 200 ") and as_many.endswith(b'"result":{}}')
    stderr = err.decode()
    assert "Traceback" not in stderr and "Exception" not in stderr, stderr[-2000:]
    assert stderr.count(REQUEST_WARNINGS[0]) == 1, stderr


# A server out of files that stops within the second before asyncio retries its accept: the
# retries run on the closed listening socket (both servers stop this way on SIGTERM).
_STOP_WHILE_ACCEPT_WAITS = """
import asyncio, resource, socket, sys
from splice_build.connections import AcceptErrorLog

async def main():
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    log = lambda line: print(line, file=sys.stderr)
    loop.set_exception_handler(AcceptErrorLog(log, listening=sock))
    server = await loop.create_server(asyncio.Protocol, sock=sock)
    clients = [socket.create_connection(sock.getsockname()) for _ in range(4)]
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(c.fileno() for c in clients) + 1, hard))
    await asyncio.sleep(0.2)  # accept() fails for lack of files; asyncio retries in 1 s
    server.close()
    await asyncio.sleep(1.5)  # the retries come due

asyncio.run(main())
"""


def test_a_server_stopped_while_accept_waits_logs_no_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _STOP_WHILE_ACCEPT_WAITS],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Too many open files" in done.stderr, "the accept did fail"
    assert "Traceback" not in done.stderr, done.stderr[-2000:]


def test_a_request_still_sending_its_body_is_refused_when_the_server_stops() -> None:
    """It held a stopping server for the whole grace and the cut (7 s), was then cancelled:
    500 Internal Server Error, and uvicorn logged an "Exception in ASGI application"
    traceback (a real ``splice mcp --http`` and a client that sent half a body). Now the stop
    refuses it at once, as a waiting call: 503, "Server stopping", ``Connection: close``."""
    import signal
    import threading

    with http_server(demo_argv("http", "0"), env=child_env()) as (url, process):
        parts = urlsplit(url)
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            sock.sendall(request(PING[:5], content_length=len(PING)))
            for _ in range(400):
                if read_by_the_server(sock):
                    break
                threading.Event().wait(0.01)
            process.send_signal(signal.SIGTERM)
            answer = closed_by_server(sock, time.monotonic() + 30)
        code = process.wait(timeout=30)
        stderr = process.stderr.read().decode() if process.stderr else ""
    assert answer is not None and answer.startswith(b"HTTP/1.1 503 "), (answer, stderr)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower() and b"retry-after: 1" in head.lower()
    assert json.loads(body)["error"] == {
        "code": -32003,
        "message": "Server stopping",
        "data": {"retryAfter": 1},
    }
    assert code == 0 and "Traceback" not in stderr, stderr


def test_an_answer_given_while_the_server_stops_says_its_connection_closes(
    tmp_path: Path,
) -> None:
    """A call running at SIGTERM is answered in the grace, and its connection closed after
    it: the answer said nothing of that, so a client sending its next request on the same
    connection, as HTTP/1.1 lets it, had it reset unanswered. It says ``Connection: close``."""
    import signal

    started, release = tmp_path / "started", tmp_path / "release"
    arguments = {"path": str(release), "started": str(started), "id": 1}
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "demo_echo_wait", "arguments": arguments},
    }
    with http_server(demo_argv("http", "0"), env=child_env()) as (url, process):
        parts = urlsplit(url)
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            sock.sendall(request(json.dumps(message).encode()))
            _wait_until(started.exists)
            process.send_signal(signal.SIGTERM)
            assert process.stderr is not None
            assert b"stopping: 1 running call(s)" in process.stderr.readline()
            release.touch()
            answer = closed_by_server(sock, time.monotonic() + 30)
        assert process.wait(timeout=30) == 0
    assert answer is not None and answer.startswith(b"HTTP/1.1 200 "), answer
    head = answer.partition(b"\r\n\r\n")[0].lower()
    assert head.count(b"\r\nconnection: close") == 1, head


def _wait_until(done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
