"""The fuzz target of `splice mcp --http`'s wire: the bytes of one connection (fuzz/README.md).

``mcp_wire`` runs the real server (``serve_http``: uvicorn with splice_build/connections.py's
connection protocol, one framing per request and ``Connection: close`` once stopping,
Starlette, the ``/mcp`` app) in a thread of the fuzzing process, over the empty project of
``mcp_stdio``, and sends each input on a connection of its own as raw bytes: request lines,
headers, sized and chunked bodies, pipelined requests, as the HTTP parser reads them.
``mcp_http`` hands the app requests already parsed, so the layer below it (a chunked body
broken after its answer, a body of 1-byte chunks, two framings: each mended after a review
by hand, docs/mcp.md#connections) had no target.

An input's first byte with its high bit set sends the rest in pieces of ``(byte & 63) + 1``
bytes (the parser sees a head or a chunk size split anywhere); otherwise at once.
``@TOKEN@`` becomes the bearer token. Findings: anything logged at ERROR (an "Exception in
ASGI application", asyncio's "Fatal error: protocol.data_received() call failed"), an
internal error of the server, an answer that is not HTTP/1.1 as the client reads it (a
status line, headers, a body its length or chunks frame), a 5xx other than 503, bytes after
an answer that said ``Connection: close``, a 200 whose body is not JSON-RPC answers, and a
server that no longer answers a ping on a new connection within ``ALIVE_SECONDS``.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable

Check = Callable[[bytes], None]
TOKEN = b"fuzz-wire-token-0123456789abcdef"
HEAD_SECONDS = 0.3  # the server's deadlines, short: an unfinished request ends soon
BODY_SECONDS = 0.5
IDLE_SECONDS = 0.05  # a connection that sent nothing for this long has said all
READ_SECONDS = 1.0  # a connection that keeps sending is read this long at most
ALIVE_SECONDS = 2.0
_STATUS = re.compile(rb"HTTP/1\.1 ([0-9]{3}) [^\r\n]*")
# What the server logs of its own failures: an internal error, accept failing.
_FAILURES = ("internal error", "cannot accept")
_PING = b'{"jsonrpc":"2.0","id":"alive","method":"ping"}'


class _Errors(logging.Handler):
    """Records at ERROR or above, as findings."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.found: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.found.append(f"{record.name}: {record.getMessage()[:300]}")


def mcp_wire() -> Check:
    from fuzz.targets import Finding, _check_rpc_answer, _mcp_server
    from splice_build.mcp.transport.auth_throttle import ThrottlePolicy
    from splice_build.mcp.transport.http import serve_http, token_digest

    server, internal = _mcp_server()
    ready = threading.Event()
    urls: list[str] = []

    def serve() -> None:
        serve_http(
            server,
            digest=token_digest(TOKEN.decode()),
            port=0,
            max_calls=4,
            on_ready=lambda url: (urls.append(url), ready.set()),
            log=internal.append,  # accept errors: none are expected
            head_seconds=HEAD_SECONDS,
            body_seconds=BODY_SECONDS,
            # No throttle: after ten inputs with a wrong token every later one, and the
            # ping after each, would be refused 429 before it is read.
            auth_throttle=ThrottlePolicy(failures=0),
        )

    threading.Thread(target=serve, name="mcp-wire", daemon=True).start()
    if not ready.wait(30):
        raise RuntimeError("the server did not start")
    errors = _Errors()
    for name in ("uvicorn", "asyncio"):  # after the start: uvicorn configures its loggers
        logging.getLogger(name).addHandler(errors)
    port = int(urls[0].rsplit(":", 1)[1].split("/", 1)[0])
    address = ("127.0.0.1", port)

    def check(data: bytes) -> None:
        if not data:
            return
        piece = (data[0] & 63) + 1 if data[0] & 128 else None
        received = _exchange(address, data[1:].replace(b"@TOKEN@", TOKEN), piece)
        for status, body in _answers(received, Finding):
            if status >= 500 and status != 503:
                raise Finding(f"status {status}: {body[:200]!r}")
            if status == 200:
                answer = json.loads(body)
                for item in answer if isinstance(answer, list) else [answer]:
                    _check_rpc_answer(item)
        if not _alive(address):
            raise Finding(f"no answer to a ping on a new connection in {ALIVE_SECONDS:g} s")
        found = errors.found + [line for line in internal if line.startswith(_FAILURES)]
        errors.found.clear()
        internal.clear()  # a cancellation is logged too: a client that left mid-call
        if found:
            raise Finding(found[0])

    return check


def _exchange(address: tuple[str, int], payload: bytes, piece: int | None) -> bytes:
    """Send ``payload`` on a new connection (in pieces of ``piece`` bytes), then read until
    the server closes it or sends nothing for ``IDLE_SECONDS``."""
    received = bytearray()
    with socket.create_connection(address, timeout=READ_SECONDS) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        step = piece or max(len(payload), 1)
        try:
            for start in range(0, len(payload), step):
                connection.sendall(payload[start : start + step])
        except OSError:
            pass  # the server refused the head and closed: what it sent is still read
        deadline = time.monotonic() + READ_SECONDS
        connection.settimeout(IDLE_SECONDS)
        while time.monotonic() < deadline:
            try:
                chunk = connection.recv(65536)
            except OSError:  # idle (on loopback an answer comes in milliseconds), or reset
                break
            if not chunk:
                break
            received += chunk
    return bytes(received)


def _answers(data: bytes, finding: type[AssertionError]) -> list[tuple[int, bytes]]:
    """The answers in ``data``, read as a client reads HTTP/1.1 (a cut last one, from a
    connection still open when the read stopped, is left out); ``finding`` for bytes no
    client could read."""
    answers: list[tuple[int, bytes]] = []
    rest = data
    while rest:
        head, found, after = rest.partition(b"\r\n\r\n")
        if not found:
            if _STATUS.match(rest) or b"HTTP/1.1 ".startswith(rest[:9]):
                return answers  # a head still arriving
            raise finding(f"not an HTTP answer: {rest[:200]!r}")
        lines = head.split(b"\r\n")
        status = _STATUS.fullmatch(lines[0])
        if status is None:
            raise finding(f"not a status line: {lines[0][:200]!r}")
        headers = _headers(lines[1:], finding)
        code = int(status.group(1))
        if 100 <= code < 200:
            rest = after
            continue
        body, rest, whole = _body(after, headers, finding)
        if not whole:
            return answers
        answers.append((code, body))
        if rest and headers.get(b"connection", b"").lower() == b"close":
            raise finding(f"bytes after a Connection: close answer: {rest[:200]!r}")
    return answers


def _headers(lines: list[bytes], finding: type[AssertionError]) -> dict[bytes, bytes]:
    headers: dict[bytes, bytes] = {}
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise finding(f"not a header line: {line[:200]!r}")
        key = name.lower()
        if key in headers and key in (b"content-length", b"transfer-encoding", b"connection"):
            raise finding(f"{key.decode()} twice in one answer")
        headers[key] = value.strip()
    return headers


def _body(
    data: bytes, headers: dict[bytes, bytes], finding: type[AssertionError]
) -> tuple[bytes, bytes, bool]:
    """(body, the bytes after it, whether it is whole) framed as ``headers`` say."""
    if b"transfer-encoding" in headers:
        if headers[b"transfer-encoding"].lower() != b"chunked":
            raise finding(f"transfer-encoding {headers[b'transfer-encoding'][:50]!r}")
        return _chunks(data, finding)
    if b"content-length" in headers:
        text = headers[b"content-length"]
        if not text.isdigit():
            raise finding(f"content-length {text[:50]!r}")
        length = int(text)
        return data[:length], data[length:], len(data) >= length
    if headers.get(b"connection", b"").lower() != b"close":
        raise finding("an answer framed neither by length, chunks nor its connection's close")
    return data, b"", True  # read to the close (the read stopped there or at its deadline)


def _chunks(data: bytes, finding: type[AssertionError]) -> tuple[bytes, bytes, bool]:
    body = bytearray()
    rest = data
    while True:
        size_line, found, after = rest.partition(b"\r\n")
        if not found:
            return bytes(body), b"", False
        size_text = size_line.split(b";", 1)[0].strip()
        if not size_text or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
            raise finding(f"not a chunk size: {size_line[:50]!r}")
        size = int(size_text, 16)
        if size == 0:
            trailer, found, after = after.partition(b"\r\n")
            return bytes(body), after, bool(found) and not trailer
        if len(after) < size + 2:
            return bytes(body), b"", False
        body += after[:size]
        rest = after[size + 2 :]


def _alive(address: tuple[str, int]) -> bool:
    """Whether a ping on a new connection is answered 200 within ``ALIVE_SECONDS``."""
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: fuzz\r\nAuthorization: Bearer " + TOKEN + b"\r\n"
        b"Content-Type: application/json\r\nConnection: close\r\n"
        b"Content-Length: " + str(len(_PING)).encode() + b"\r\n\r\n" + _PING
    )
    received = bytearray()
    try:
        with socket.create_connection(address, timeout=ALIVE_SECONDS) as connection:
            connection.sendall(request)
            while chunk := connection.recv(65536):
                received += chunk
    except OSError:
        return False
    return received.startswith(b"HTTP/1.1 200 ") and received.endswith(b'"result":{}}')
