"""Hostile protocol input against the real `splice mcp` (stdio and Streamable HTTP).

docs/mcp.md#hostile-input: every document the decoder refuses is answered -32700 with id
null, a valid document that is not a request -32600, an oversized stdio line (counted in
bytes) -32600 "Message too large"; the server stays up, answers the next request, and writes
no traceback. Batches: only in protocol revision 2025-03-26, at most 32 messages.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings

from splice_build.mcp.protocol import MAX_BATCH
from splice_build.mcp.transport.stdio import MAX_LINE_BYTES
from testing.cli import run_splice
from testing.hostile_json import hostile_documents
from testing.mcp_clients import DEMO_TOKEN, LineClient, child_env, http_server
from testing.mcp_clients import splice_argv as splice

PARSE_ERROR = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
PING = {"jsonrpc": "2.0", "id": "after", "method": "ping"}
FUZZ = settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _message(slot: str, part: bytes) -> bytes:
    """A tools/call request with ``part`` in one of its places."""
    parts = {
        "id": b"7",
        "method": b'"tools/call"',
        "name": b'"no_such_tool"',
        "key": b'"text"',
        "value": b'"hi"',
        "meta": b"{}",
    }
    parts[slot] = part
    return (
        b'{"jsonrpc":"2.0","id":'
        + parts["id"]
        + b',"method":'
        + parts["method"]
        + b',"params":{"name":'
        + parts["name"]
        + b',"arguments":{'
        + parts["key"]
        + b":"
        + parts["value"]
        + b'},"_meta":'
        + parts["meta"]
        + b"}}"
    )


hostile_messages = hostile_documents(_message, ("method", "name", "key"), ("id", "value", "meta"))

# Valid JSON that is not a request: each is answered -32600 with id null.
INVALID_REQUEST = {"code": -32600, "message": "Invalid Request"}
NOT_A_REQUEST = [
    b"1",
    b'"ping"',
    b"null",
    b"true",
    b"[1]",
    b'{"jsonrpc":"2.0","id":{},"method":"ping"}',
]
# A request whose method is every JSON type but a string (an object or array is unhashable:
# the stdio server's read loop once raised on it, and stopped serving).
METHOD_NOT_A_STRING = [
    b'{"jsonrpc":"2.0","id":2,"method":%s}' % value
    for value in (b"{}", b'{"name":"x"}', b"[]", b'["tools/call"]', b"1", b"1.5", b"true", b"null")
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("hostile-mcp")
    env = {"HOME": str(base / "home"), "SPLICE_HOME": str(base / "home" / ".splice")}
    directory = base / "project"
    directory.mkdir()
    assert run_splice("init", cwd=directory, env=env).code == 0
    return directory, child_env({**env, "SPLICE_MCP_TOKEN": DEMO_TOKEN})


@pytest.fixture
def stdio(project: tuple[Path, dict[str, str]]) -> Iterator[LineClient]:
    directory, env = project
    client = LineClient(splice("mcp"), env=env, cwd=directory)
    yield client
    if client.process.poll() is None:
        client.process.kill()
        client.process.wait()


def _answers_then_exits_cleanly(client: LineClient) -> str:
    client.request(PING)
    assert client.receive() == {"jsonrpc": "2.0", "id": "after", "result": {}}
    code, rest, stderr = client.close()
    assert (code, rest) == (0, b"")
    assert "Traceback" not in stderr
    return stderr


def test_stdio_answers_every_hostile_document_with_a_parse_error(stdio: LineClient) -> None:
    @FUZZ
    @given(hostile_messages)
    def one(document: bytes) -> None:
        stdio.send(document.replace(b"\n", b" ") + b"\n")
        assert stdio.receive() == PARSE_ERROR

    one()
    for document in NOT_A_REQUEST:
        stdio.send(document + b"\n")
        answer = stdio.receive()
        assert (answer["id"], answer["error"]["code"]) == (None, -32600)
    for document in METHOD_NOT_A_STRING:
        stdio.send(document + b"\n")
        assert stdio.receive() == {"jsonrpc": "2.0", "id": 2, "error": INVALID_REQUEST}
    _answers_then_exits_cleanly(stdio)


def test_stdio_lone_surrogate_id_is_answered(stdio: LineClient) -> None:
    stdio.send(b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n')
    assert stdio.receive() == PARSE_ERROR
    _answers_then_exits_cleanly(stdio)


def _ping_line(size: int, request_id: int) -> bytes:
    """A ping of exactly ``size`` bytes of UTF-8, padded with two-byte ``é``."""
    head = b'{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"pad":"' % request_id
    tail = b'"}}'
    room = size - len(head) - len(tail)
    line = head + "é".encode() * (room // 2) + b"a" * (room % 2) + tail
    assert len(line) == size
    return line


def test_stdio_line_limit_counts_bytes(stdio: LineClient) -> None:
    # 4 MiB + 1 byte of mostly "é" is about 2 Mi characters: still one byte too many.
    stdio.send(_ping_line(MAX_LINE_BYTES + 1, 1) + b"\n")
    assert stdio.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Message too large"},
    }
    stdio.send(_ping_line(MAX_LINE_BYTES, 2) + b"\n")
    assert stdio.receive() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    stderr = _answers_then_exits_cleanly(stdio)
    assert f"discarded a message longer than {MAX_LINE_BYTES} bytes" in stderr


def _initialize(client: LineClient, version: str) -> None:
    client.request(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version}}
    )
    assert client.receive()["result"]["protocolVersion"] == version


def _pings(count: int) -> list[dict[str, Any]]:
    return [{"jsonrpc": "2.0", "id": index, "method": "ping"} for index in range(count)]


# A batch may hold one tool call: it takes one slot (docs/mcp.md#admission-control).
TWO_CALLS = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32600, "message": "Batch of more than one tools/call"},
}


def _call(request_id: int) -> dict[str, Any]:
    params = {"name": "no_such_tool", "arguments": {}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_stdio_batches_only_in_2025_03_26_at_most_32_and_one_call(stdio: LineClient) -> None:
    stdio.send(json.dumps(_pings(2)).encode() + b"\n")
    assert stdio.receive()["error"] == {
        "code": -32600,
        "message": "Batches are not supported in protocol version 2025-11-25",
    }
    _initialize(stdio, "2025-03-26")
    stdio.send(json.dumps(_pings(MAX_BATCH)).encode() + b"\n")
    answers: Any = stdio.receive()  # a batch's answer is an array
    assert [answer["id"] for answer in answers] == list(range(MAX_BATCH))
    stdio.send(json.dumps(_pings(MAX_BATCH + 1)).encode() + b"\n")
    assert stdio.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": f"Batch of more than {MAX_BATCH} messages"},
    }
    stdio.send(json.dumps([_call(1), *_pings(1), _call(2)]).encode() + b"\n")
    assert stdio.receive() == TWO_CALLS
    _answers_then_exits_cleanly(stdio)


def test_stdio_a_batch_holding_initialize_is_refused(stdio: LineClient) -> None:
    """2025-03-26 forbids it; answered, its initialize moved the session to another revision
    (and the next batch was refused)."""
    _initialize(stdio, "2025-03-26")
    again = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
    stdio.send(json.dumps([again, *_pings(1)]).encode() + b"\n")
    assert stdio.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Batch holding initialize"},
    }
    stdio.send(json.dumps(_pings(1)).encode() + b"\n")
    assert stdio.receive() == [{"jsonrpc": "2.0", "id": 0, "result": {}}]
    _answers_then_exits_cleanly(stdio)


# -- Streamable HTTP ---------------------------------------------------------------------------
HEADERS = {
    "Authorization": f"Bearer {DEMO_TOKEN}",
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


def post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("POST", parts.path, body=body, headers={**HEADERS, **(headers or {})})
        response = connection.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None
    finally:
        connection.close()


@pytest.fixture
def http_url(project: tuple[Path, dict[str, str]]) -> Iterator[tuple[str, Any]]:
    directory, env = project
    argv = splice("mcp", "--http", "--port", "0")
    with http_server(argv, env=env, cwd=directory) as (url, process):
        yield url, process


def _http_answers_then_has_no_traceback(url: str, process: Any) -> None:
    assert post(url, json.dumps(PING).encode()) == (
        200,
        {"jsonrpc": "2.0", "id": "after", "result": {}},
    )
    process.terminate()
    _out, err = process.communicate(timeout=30)
    assert b"Traceback" not in err


def test_http_answers_every_hostile_document_with_400_parse_error(
    http_url: tuple[str, Any],
) -> None:
    url, process = http_url

    @FUZZ
    @given(hostile_messages)
    def one(document: bytes) -> None:
        assert post(url, document) == (400, PARSE_ERROR)

    one()
    for document in NOT_A_REQUEST:
        status, answer = post(url, document)
        assert status == 200
        first = answer[0] if isinstance(answer, list) else answer  # "[1]": a batch of one
        assert first["error"] == INVALID_REQUEST
    for document in METHOD_NOT_A_STRING:
        assert post(url, document) == (200, {"jsonrpc": "2.0", "id": 2, "error": INVALID_REQUEST})
        status, answer = post(url, b"[%s]" % document)  # in a batch (2025-03-26: no header)
        assert (status, answer) == (200, [{"jsonrpc": "2.0", "id": 2, "error": INVALID_REQUEST}])
    _http_answers_then_has_no_traceback(url, process)


def test_http_lone_surrogate_id_is_400_not_500(http_url: tuple[str, Any]) -> None:
    url, process = http_url
    assert post(url, b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}') == (400, PARSE_ERROR)
    assert post(url, b'{"jsonrpc":"2.0","id":1,"method":"\\udc00"}') == (400, PARSE_ERROR)
    _http_answers_then_has_no_traceback(url, process)


def test_http_batches_only_in_2025_03_26_at_most_32_and_one_call(http_url: tuple[str, Any]) -> None:
    url, process = http_url
    status, answers = post(url, json.dumps(_pings(MAX_BATCH)).encode())  # no header: 2025-03-26
    assert status == 200
    assert [answer["id"] for answer in answers] == list(range(MAX_BATCH))
    too_many = json.dumps(_pings(MAX_BATCH + 1)).encode()
    assert post(url, too_many) == (
        400,
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": f"Batch of more than {MAX_BATCH} messages"},
        },
    )
    one_call = [*_pings(2), _call(2)]
    status, answers = post(url, json.dumps(one_call).encode())
    assert status == 200
    assert [answer["error"]["code"] for answer in answers if "error" in answer] == [-32602]
    assert post(url, json.dumps([*one_call, _call(3)]).encode()) == (400, TWO_CALLS)
    status, answer = post(
        url, json.dumps(_pings(2)).encode(), {"mcp-protocol-version": "2025-06-18"}
    )
    assert (status, answer["error"]) == (
        400,
        {"code": -32600, "message": "Batches are not supported in protocol version 2025-06-18"},
    )
    _http_answers_then_has_no_traceback(url, process)
