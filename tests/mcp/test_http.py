"""Streamable HTTP: the official SDK client, and every refusal of docs/compatibility.md#mcp."""

from __future__ import annotations

import base64
import http.client
import json
import secrets
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from splice_build.connections import HEAD_SECONDS
from splice_build.errors import ErrorCode, UsageError
from splice_build.mcp.transport.http import MAX_BODY_BYTES, token_digest
from testing.http_framing import two_framings
from testing.mcp_clients import (
    DEMO_TOKEN,
    child_env,
    demo_argv,
    http_server,
    sdk_http,
)

AUTH = {"Authorization": f"Bearer {DEMO_TOKEN}"}
JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with http_server(demo_argv("http", "0"), env=child_env()) as (address, _process):
        yield address


def post(
    url: str,
    body: bytes = PING,
    headers: dict[str, str] | None = None,
    *,
    method: str = "POST",
    path: str | None = None,
) -> tuple[int, dict[str, str], Any]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    try:
        connection.request(
            method, path or parts.path, body=body, headers=headers or {**AUTH, **JSON}
        )
        response = connection.getresponse()
        data = response.read()
        lowered = {key.lower(): value for key, value in response.getheaders()}
        parsed = json.loads(data) if data and "json" in lowered.get("content-type", "") else data
        return response.status, lowered, parsed
    finally:
        connection.close()


def test_sdk_client_lists_calls_and_reads(url: str) -> None:
    async def scenario() -> None:
        async with sdk_http(url, DEMO_TOKEN) as session:
            tools = await session.list_tools()
            assert "demo_echo_echo" in [tool.name for tool in tools.tools]
            called = await session.call_tool("demo_echo_echo", {"text": "over http"})
            assert called.structured_content == {"echo": {"text": "over http"}}
            failed = await session.call_tool("demo_echo_fail", {})
            assert failed.is_error
            assert failed.content[0].text.startswith("INVALID_INPUT: ")
            read = await session.read_resource("splice://packages/@demo/echo/SKILL.md")
            assert read.contents[0].text.startswith("# Echo")

    anyio.run(scenario)


def test_ping_and_initialize(url: str) -> None:
    assert post(url)[0:3:2] == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
    init = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
    ).encode()
    status, _headers, body = post(url, init)
    assert status == 200
    assert body["result"]["protocolVersion"] == "2025-06-18"


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token-0123456789abcdefghij", f"Basic {DEMO_TOKEN}", DEMO_TOKEN, "Bearer "],
)
def test_missing_or_wrong_token_is_401(url: str, authorization: str | None) -> None:
    headers = dict(JSON)
    if authorization is not None:
        headers["Authorization"] = authorization
    status, response_headers, body = post(url, headers=headers)
    assert status == 401
    assert response_headers["www-authenticate"] == 'Bearer realm="splice-mcp"'
    assert body == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32001, "message": "Unauthorized"},
    }


def test_a_body_answered_unread_closes_its_connection(url: str) -> None:
    """A request refused before its body is read (no token: 401) has its connection closed
    after the answer, and the rest of the body is never read: it was read and parsed to its
    declared end until the head deadline (a client with no token sent 1.4 GB in those 10 s
    on one connection; 16 of them took another client's ping from 2 to 300 ms)."""
    parts = urlsplit(url)
    no_token = (
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000000000\r\n\r\n{"
    )
    started = time.monotonic()
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(no_token)
        answered = b""
        while chunk := sock.recv(65536):  # until the server closes the connection (main: 10 s)
            answered += chunk
    head = answered.partition(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 401 ") and b"\r\nconnection: close" in head
    assert time.monotonic() - started < HEAD_SECONDS / 2  # closed with its answer
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(post_bytes(parts.path))  # its body read: the connection is kept
        kept = sock.recv(65536).partition(b"\r\n\r\n")[0].lower()
    assert kept.startswith(b"http/1.1 200 ") and b"connection:" not in kept


def post_bytes(path: str) -> bytes:
    """A ping with the token, as bytes for a raw socket (keep-alive)."""
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(PING)}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in {**AUTH, **JSON}.items())
    return head.encode() + b"\r\n" + PING


@pytest.mark.parametrize(
    "values",
    [
        (f"Bearer {DEMO_TOKEN}", "Bearer wrong-token-0123456789abcdefghij"),
        (f"Bearer {DEMO_TOKEN}", f"Bearer {DEMO_TOKEN}"),
    ],
)
def test_two_authorization_headers_are_401(url: str, values: tuple[str, str]) -> None:
    """The token in the first of two headers was accepted (a proxy in front reading the
    second would see another caller than the server did)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    try:
        connection.putrequest("POST", parts.path)
        for name, value in [*JSON.items(), *(("Authorization", value) for value in values)]:
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(PING)))
        connection.endheaders(PING)
        response = connection.getresponse()
        assert response.status == 401
        assert json.loads(response.read())["error"] == {"code": -32001, "message": "Unauthorized"}
    finally:
        connection.close()


@pytest.mark.parametrize(
    "origin", ["http://localhost", "http://127.0.0.1:8788", "null", "https://evil.example"]
)
def test_any_origin_is_403(url: str, origin: str) -> None:
    status, _headers, body = post(url, headers={**AUTH, **JSON, "Origin": origin})
    assert status == 403
    assert body["error"]["code"] == -32600


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_only_post_is_allowed(url: str, method: str) -> None:
    status, headers, _body = post(url, b"", method=method)
    assert status == 405
    assert headers["allow"] == "POST"


def test_content_type_accept_and_protocol_header(url: str) -> None:
    assert post(url, headers={**AUTH, "Content-Type": "text/plain"})[0] == 415
    assert post(url, headers={**AUTH})[0] == 415
    assert post(url, headers={**AUTH, **JSON, "Accept": "text/html"})[0] == 406
    assert post(url, headers={**AUTH, "Content-Type": "application/json"})[0] == 200  # no Accept
    assert post(url, headers={**AUTH, **JSON, "Accept": "*/*"})[0] == 200
    status, _headers, body = post(
        url, headers={**AUTH, **JSON, "mcp-protocol-version": "1999-01-01"}
    )
    assert status == 400
    assert body["error"]["code"] == -32600
    assert post(url, headers={**AUTH, **JSON, "mcp-protocol-version": "2025-11-25"})[0] == 200


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("text/plain; charset=application/json", 415),
        ("multipart/form-data; boundary=application/json", 415),
        ("application/json-seq", 415),
        ("application/jsonx", 415),
        ("text/application/json", 415),
        ("application/json; charset=utf-8", 200),
        (" Application/JSON ", 200),
    ],
)
def test_content_type_is_compared_as_a_media_type(url: str, content_type: str, status: int) -> None:
    assert post(url, headers={**AUTH, "Content-Type": content_type})[0] == status


@pytest.mark.parametrize(
    ("accept", "status"),
    [
        ("application/json;q=0", 406),
        ("application/json; Q=0.000, text/event-stream", 406),
        ("*/*;q=0", 406),
        ("text/html, */*;q=0", 406),
        ("application/json;q=0, */*", 406),  # the most specific range decides
        ("application/json;q=0, application/json", 406),  # equals disagree: the lowest
        ("application/json;q=abc", 406),  # not a weight
        ("application/json;q=1.5", 406),
        ("application/*;q=0.001", 200),
        ("*/*;q=0, application/json;q=0.5", 200),
        ("application/json;charset=utf-8;q=1.000", 200),
        ("application/json, text/event-stream", 200),  # what the SDK client sends
    ],
)
def test_accept_weights_decide(url: str, accept: str, status: int) -> None:
    """A client that gives JSON a weight of 0 does not get JSON (docs/mcp.md#streamable-http);
    before, any range naming JSON passed, whatever its weight."""
    assert post(url, headers={**AUTH, **JSON, "Accept": accept})[0] == status


def test_a_client_leaving_mid_body_gets_nothing_and_logs_nothing() -> None:
    with http_server(demo_argv("http", "0"), env=child_env()) as (address, process):
        parts = urlsplit(address)
        for _ in range(3):
            with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
                head = (
                    f"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DEMO_TOKEN}\r\n"
                    "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                )
                sock.sendall(head.encode() + b'{"jsonrpc"')
                time.sleep(0.3)  # the server is reading the body when the client leaves
        assert post(address)[0] == 200  # and it still serves
    stderr = process.stderr.read().decode() if process.stderr else ""
    assert "Traceback" not in stderr
    assert "ClientDisconnect" not in stderr


def test_parse_errors_batches_and_notifications(url: str) -> None:
    status, _headers, body = post(url, b"{oops")
    assert (status, body["error"]["code"]) == (400, -32700)
    status, _headers, body = post(url, b"[]")
    assert (status, body["error"]["code"]) == (400, -32600)
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "nope"},
    ]
    status, _headers, body = post(url, json.dumps(batch).encode())
    assert status == 200
    assert [answer["id"] for answer in body] == [1, 2]
    assert body[1]["error"]["code"] == -32601
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    status, _headers, body = post(url, note)
    assert (status, body) == (202, b"")
    status, _headers, body = post(url, json.dumps([json.loads(note)]).encode())
    assert status == 202


OTHER_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE", "FOO")
OTHER_PATHS = (
    "/",
    "/mcp/",
    "/mcpx",
    "/MCP",
    "/mcp/tools",
    "//mcp",
    "/mcp%2F",
    "/mcp%00",
    "/%C3%A9",
    "/.well-known/oauth-authorization-server",
    "/health?x=1",
    "*",
)
NOT_FOUND = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32600, "message": "Not found: the MCP endpoint is /mcp"},
}


def test_other_paths_are_404_with_a_json_rpc_error(url: str) -> None:
    """Every method on every path but /mcp, with and without the token: 404 with the JSON-RPC
    error document every refusal has (it was Starlette's plain text 'Not Found')."""
    answers = {}
    for method in OTHER_METHODS:
        for path in OTHER_PATHS:
            for headers in ({**AUTH, **JSON}, {}):
                status, answer_headers, body = post(url, b"", headers, method=method, path=path)
                content_type = answer_headers.get("content-type")
                shown = None if method == "HEAD" else body  # a HEAD answer has no body
                answers[method, path, bool(headers)] = (status, content_type, shown)
    expected = (404, "application/json", NOT_FOUND)
    wrong = {
        key: got
        for key, got in answers.items()
        if got != (expected if key[0] != "HEAD" else (*expected[:2], None))
    }
    assert not wrong, wrong
    assert len(answers) == len(OTHER_METHODS) * len(OTHER_PATHS) * 2


def test_oversized_body_is_413_without_reading_it(url: str) -> None:
    parts = urlsplit(url)
    # Declared too large: the answer arrives although not one byte of the body was sent.
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DEMO_TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {50 * MAX_BODY_BYTES}\r\n\r\n"
        )
        sock.sendall(head.encode())
        reply = sock.recv(65536).decode()
    assert reply.startswith("HTTP/1.1 413")
    # Chunked, no length: refused once the streamed body passes the limit, before it ends.
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DEMO_TOKEN}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        sock.sendall(head.encode())
        chunk = b"x" * (64 * 1024)
        for _ in range(MAX_BODY_BYTES // len(chunk) + 2):
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        reply = sock.recv(65536).decode()  # the terminating chunk was never sent
    assert reply.startswith("HTTP/1.1 413")
    # Exactly at the limit is fine (it is a parse error, not a size error).
    status, _headers, _body = post(url, b" " * (MAX_BODY_BYTES - len(PING)) + PING)
    assert status == 200


def test_token_must_be_long_enough() -> None:
    for weak in (None, "", "x" * 23):
        with pytest.raises(UsageError):
            token_digest(weak)
    assert len(token_digest(secrets.token_urlsafe(18))) == 32  # 24 characters


@pytest.mark.parametrize(
    "weak",
    [
        "a" * 24,
        "x" * 64,
        "abcdefghijklmnopqrstuvwxyz",
        "0123456789012345678901234",
        "passwordpasswordpassword",
        "abababababababababababababababab",
        "Sp1ice!Sp1ice!Sp1ice!Sp1ice!",
    ],
)
def test_a_token_of_repeats_runs_or_steps_is_refused(weak: str) -> None:
    """Any 24 characters were accepted: ``a`` 24 times, then guessed at 680 tokens a second."""
    with pytest.raises(UsageError, match="too easy to guess") as refused:
        token_digest(weak)
    assert refused.value.code == ErrorCode.USAGE
    assert "secrets.token_urlsafe(32)" in (refused.value.hint or "")


def test_generated_tokens_pass() -> None:
    """The generators people use: the hint's, ``openssl rand -hex 16`` and ``-base64 32``'s
    output, a UUID; each estimated far above the bar (at least 84 bits in 200,000 of each)."""
    makers = [
        lambda: secrets.token_urlsafe(32),
        lambda: secrets.token_urlsafe(18),
        lambda: secrets.token_hex(16),
        lambda: secrets.token_hex(16).upper(),
        lambda: base64.b64encode(secrets.token_bytes(32)).decode(),
        lambda: str(uuid.uuid4()),
    ]
    for make in makers:
        for _ in range(300):
            assert len(token_digest(make())) == 32


@pytest.mark.parametrize("token", ["é" * 24, "x" * 23 + "é", "x" * 12 + " " + "x" * 12, "\t" * 24])
def test_token_must_be_visible_ascii(token: str) -> None:
    """Header bytes are read as Latin-1 and stripped at the edges: no client could present a
    token with other characters, so the server refuses to start with one."""
    with pytest.raises(UsageError, match="visible ASCII"):
        token_digest(token)


def test_a_request_with_two_framings_is_400_and_its_connection_closed(url: str) -> None:
    """Content-Length and Transfer-Encoding together: refused, and nothing after it on the
    connection is read (docs/mcp.md#connections)."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    received = two_framings(parts.hostname, parts.port, parts.path, PING, {**AUTH, **JSON})
    assert received.startswith(b"HTTP/1.1 400 ")
    assert b"connection: close" in received.lower()
    assert received.count(b"HTTP/1.1 ") == 1  # the request after it was never answered
    assert post(url)[0] == 200  # and the server still serves


def test_a_call_whose_client_left_while_it_waited_never_runs(tmp_path: Path) -> None:
    """One call holds the only slot; three more wait, and their clients close the
    connection; when the slot frees, none of them runs (docs/mcp.md#admission-control)."""
    env = child_env({"SPLICE_MCP_MAX_CALLS": "1"})
    release = tmp_path / "release"
    with http_server(demo_argv("http", "0"), env=env) as (address, process):
        parts = urlsplit(address)

        def send(index: int, name: str, arguments: dict[str, Any]) -> socket.socket:
            params = {"name": name, "arguments": arguments}
            body = json.dumps(
                {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params}
            ).encode()
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DEMO_TOKEN}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            )
            sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
            sock.sendall(head.encode() + body)
            return sock

        started = tmp_path / "state" / "started"
        started.parent.mkdir()
        holder = send(0, "demo_echo_wait", {"path": str(release), "started": str(started)})
        deadline = time.monotonic() + 30  # the holder has the slot before the others arrive
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        for index in range(1, 4):
            with send(index, "demo_echo_marker", {"path": str(tmp_path / f"marker-{index}")}):
                time.sleep(0.3)  # the call is read and waits for the slot when its client leaves
        release.touch()
        with holder:
            assert b" 200 " in holder.recv(65536)
        call = {"name": "demo_echo_echo", "arguments": {}}
        body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call})
        assert post(address, body.encode())[0] == 200  # queued after the three: they are done
    assert sorted(path.name for path in tmp_path.iterdir()) == ["release", "state"]
    stderr = process.stderr.read().decode() if process.stderr else ""
    assert "Traceback" not in stderr
