"""JSON-RPC dispatch and MCP shapes (docs/compatibility.md#mcp) over the in-memory backend."""

from __future__ import annotations

import json
from typing import Any

import pytest

from splice_build.mcp.interface import ServerInfo, ToolOutcome
from splice_build.mcp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_VERSION,
    MAX_BATCH,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    ParseError,
    Server,
    Session,
    encode,
    parse_message,
)
from testing.mcp_clients import DEMO_SKILL_URI, demo_backend
from testing.mcp_memory import MemoryBackend, descriptor


def make_server(backend: MemoryBackend | None = None, logs: list[str] | None = None) -> Server:
    sink = logs if logs is not None else []
    return Server(
        backend or demo_backend(),
        ServerInfo(version="9.9.9", instructions="Read SKILL.md."),
        log=sink.append,
    )


def call(server: Server, method: str, params: Any = None, *, version: str = LATEST_VERSION) -> Any:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
    if params is not None:
        message["params"] = params
    response = server.handle(message, Session(version))
    assert response is not None
    assert response["id"] == 7
    return response


def result(server: Server, method: str, params: Any = None, **kw: Any) -> Any:
    response = call(server, method, params, **kw)
    assert "error" not in response, response
    return response["result"]


def error(server: Server, method: str, params: Any = None, **kw: Any) -> dict[str, Any]:
    response = call(server, method, params, **kw)
    assert "result" not in response, response
    return response["error"]


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("2099-01-01", LATEST_VERSION),
        (None, LATEST_VERSION),
    ],
)
def test_initialize_negotiates_the_version(requested: str | None, expected: str) -> None:
    server = make_server()
    session = Session("2024-11-05")
    response = server.handle(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": requested},
        },
        session,
    )
    assert response is not None
    init = response["result"]
    assert init["protocolVersion"] == expected
    assert session.protocol_version == expected
    assert init["serverInfo"] == {"name": "splice", "title": "Splice", "version": "9.9.9"}
    assert init["capabilities"] == {
        "tools": {"listChanged": False},
        "resources": {"listChanged": False},
    }
    assert init["instructions"] == "Read SKILL.md."


def test_ping_and_empty_templates() -> None:
    server = make_server()
    assert result(server, "ping") == {}
    assert result(server, "resources/templates/list") == {"resourceTemplates": []}


@pytest.mark.parametrize(
    ("message", "code", "expected_id"),
    [
        ([1, 2], INVALID_REQUEST, None),
        ("text", INVALID_REQUEST, None),
        ({"jsonrpc": "1.0", "id": 3, "method": "ping"}, INVALID_REQUEST, 3),
        ({"id": 3, "method": "ping"}, INVALID_REQUEST, 3),
        ({"jsonrpc": "2.0", "id": 3, "method": 5}, INVALID_REQUEST, 3),
        ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}, INVALID_REQUEST, None),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, INVALID_REQUEST, None),
        ({"jsonrpc": "2.0", "id": None}, INVALID_REQUEST, None),
        ({"jsonrpc": "2.0", "id": 3, "method": "nope/nope"}, METHOD_NOT_FOUND, 3),
        ({"jsonrpc": "2.0", "id": "a", "method": "ping", "params": [1]}, INVALID_PARAMS, "a"),
    ],
)
def test_malformed_messages(message: Any, code: int, expected_id: Any) -> None:
    response = make_server().handle(message, Session())
    assert response is not None
    assert response["error"]["code"] == code
    assert response["id"] == expected_id


def test_notifications_and_client_responses_get_no_answer() -> None:
    server = make_server()
    marker: list[Any] = []
    backend = demo_backend()
    backend.add_tool(descriptor("@x/y", "z"), marker.append)
    server = make_server(backend)
    assert (
        server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}, Session()) is None
    )
    assert server.handle({"jsonrpc": "2.0", "id": 4, "result": {}}, Session()) is None
    client_error = {"code": -32700, "message": "Parse error"}
    assert server.handle({"jsonrpc": "2.0", "id": None, "error": client_error}, Session()) is None
    notification = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "x_y_z"}}
    assert server.handle(notification, Session()) is None
    assert marker == []  # a notification never executes anything


def test_parse_message_rejects_bad_bytes() -> None:
    assert parse_message(b'{"a": 1}', max_bytes=8) == {"a": 1}
    for bad in (b"{", b"\xff\xfe", b"[" * 100_000, b'{"a": 12}'):
        with pytest.raises(ParseError):
            parse_message(bad, max_bytes=8)
    assert PARSE_ERROR == -32700


def test_tools_list_maps_descriptors_exactly() -> None:
    tools = {tool["name"]: tool for tool in result(make_server(), "tools/list")["tools"]}
    echo = tools["demo_echo_echo"]
    assert list(echo) == [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
        "_meta",
    ]
    assert echo["title"] == "@demo/echo.echo"
    assert echo["description"] == (
        "Echo the arguments.\n\n(Splice tool @demo/echo.echo v1.0.0; runs in the Splice sandbox.)"
    )
    assert echo["annotations"] == {
        "title": "@demo/echo.echo",
        "readOnlyHint": True,
        "destructiveHint": False,
        "openWorldHint": False,
    }
    assert echo["_meta"] == {
        "io.spliceloom/package": "@demo/echo",
        "io.spliceloom/version": "1.0.0",
        "io.spliceloom/permissions": {"fs": {"read": [], "write": []}, "network": [], "env": []},
        "io.spliceloom/timeoutMs": 10000,
    }
    marker = tools["demo_echo_marker"]
    assert marker["annotations"]["readOnlyHint"] is False
    assert marker["annotations"]["destructiveHint"] is True
    assert marker["annotations"]["openWorldHint"] is True
    assert "outputSchema" not in tools["demo_echo_list"]  # arrays are not structured content


def test_output_schema_only_for_new_protocols() -> None:
    server = make_server()
    for version in ("2025-03-26", "2024-11-05"):
        tools = result(server, "tools/list", version=version)["tools"]
        assert all("outputSchema" not in tool for tool in tools)


def test_capabilities_make_a_tool_open_world_and_long_names_are_skipped() -> None:
    backend = MemoryBackend()
    backend.add_tool(
        descriptor("@acme/data", "price", permissions={"capabilities": ["market.price"]}),
        lambda arguments: {},
    )
    backend.add_tool(descriptor("@acme/" + "n" * 50, "t" * 20), lambda arguments: {})
    logs: list[str] = []
    tools = result(make_server(backend, logs), "tools/list")["tools"]
    assert [tool["name"] for tool in tools] == ["acme_data_price"]
    assert tools[0]["annotations"]["openWorldHint"] is True
    assert any("longer than 64" in line for line in logs)


def test_call_success_is_text_and_structured_content() -> None:
    server = make_server()
    answer = result(server, "tools/call", {"name": "demo_echo_echo", "arguments": {"text": "hé"}})
    assert answer == {
        "content": [{"type": "text", "text": '{\n  "echo": {\n    "text": "hé"\n  }\n}'}],
        "structuredContent": {"echo": {"text": "hé"}},
        "isError": False,
    }
    old = result(
        server, "tools/call", {"name": "demo_echo_echo", "arguments": {}}, version="2025-03-26"
    )
    assert "structuredContent" not in old
    listing = result(server, "tools/call", {"name": "demo_echo_list"})
    assert "structuredContent" not in listing
    assert listing["content"][0]["text"] == "[\n  1,\n  2,\n  3\n]"


def test_tool_failures_and_loader_refusals_are_is_error() -> None:
    server = make_server()
    failed = result(server, "tools/call", {"name": "demo_echo_fail", "arguments": {}})
    assert failed == {
        "content": [
            {
                "type": "text",
                "text": "INVALID_INPUT: Invalid input for @demo/echo.fail\n- input.name: is required",
            }
        ],
        "_meta": {"io.spliceloom/error": {"code": "INVALID_INPUT"}},
        "isError": True,
    }
    refused = result(server, "tools/call", {"name": "demo_broken_run", "arguments": {}})
    assert refused["isError"] is True
    assert refused["_meta"] == {"io.spliceloom/error": {"code": "INSTALLED_PACKAGE_MODIFIED"}}
    assert refused["content"][0]["text"] == (
        "INSTALLED_PACKAGE_MODIFIED: Installed package @demo/broken was modified\n"
        "- <package>/tools/run.js changed\n"
        "hint: run `splice install` to restore the verified copy"
    )


def test_error_text_is_redacted() -> None:
    token = "ghp_" + "A" * 36
    backend = MemoryBackend()
    backend.add_tool(
        descriptor("@acme/leaky", "leak"),
        lambda arguments: ToolOutcome.failure(
            "TOOL_ERROR", f"bad token {token}", [f"Bearer {token}"]
        ),
    )
    text = result(make_server(backend), "tools/call", {"name": "acme_leaky_leak"})["content"][0][
        "text"
    ]
    assert token not in text
    assert text.startswith("TOOL_ERROR: bad token ")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "Missing tool name"),
        ({"name": ""}, "Missing tool name"),
        ({"name": 5}, "Missing tool name"),
        ({"name": "demo_echo_echo", "arguments": [1]}, "Tool arguments must be an object"),
        ({"name": "demo_echo_echo", "arguments": "x"}, "Tool arguments must be an object"),
        ({"name": "no_such_tool"}, "Unknown tool: no_such_tool"),
    ],
)
def test_invalid_call_params_are_32602(params: dict[str, Any], message: str) -> None:
    err = error(make_server(), "tools/call", params)
    assert err == {"code": INVALID_PARAMS, "message": message}


def test_deep_arguments_never_reach_the_backend() -> None:
    calls: list[Any] = []
    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/deep", "t"), calls.append)
    deep: Any = "leaf"
    for _ in range(300):
        deep = [deep]
    answer = result(
        make_server(backend), "tools/call", {"name": "acme_deep_t", "arguments": {"a": deep}}
    )
    assert answer["isError"] is True
    assert answer["content"][0]["text"].startswith("INPUT_TOO_LARGE: ")
    assert calls == []


def test_backend_crash_is_internal_error_and_logged() -> None:
    def boom(arguments: Any) -> Any:
        raise RuntimeError("disk on fire")

    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/crash", "t"), boom)
    logs: list[str] = []
    err = error(make_server(backend, logs), "tools/call", {"name": "acme_crash_t"})
    assert err == {"code": INTERNAL_ERROR, "message": "Internal error"}
    assert any("disk on fire" in line for line in logs)


def test_tool_logs_go_to_the_server_log() -> None:
    backend = MemoryBackend()
    backend.add_tool(
        descriptor("@acme/chatty", "t"),
        lambda arguments: ToolOutcome(ok=True, output={}, logs="hello log"),
    )
    logs: list[str] = []
    answer = result(make_server(backend, logs), "tools/call", {"name": "acme_chatty_t"})
    assert "hello log" not in str(answer)
    assert logs == ["acme_chatty_t: hello log"]


def test_resources_list_and_read() -> None:
    server = make_server()
    listed = result(server, "resources/list")["resources"]
    assert listed == [
        {"uri": DEMO_SKILL_URI, "name": "@demo/echo SKILL.md", "mimeType": "text/markdown"}
    ]
    read = result(server, "resources/read", {"uri": DEMO_SKILL_URI})
    assert read == {
        "contents": [
            {"uri": DEMO_SKILL_URI, "mimeType": "text/markdown", "text": "# Echo\n\nEchoes.\n"}
        ]
    }


@pytest.mark.parametrize(
    "uri",
    [
        "splice://packages/@demo/echo/../../../etc/passwd",
        "splice://packages/@demo/echo/manifest.json",
        "file:///etc/passwd",
    ],
)
def test_unlisted_resources_are_32002(uri: str) -> None:
    err = error(make_server(), "resources/read", {"uri": uri})
    assert err == {
        "code": RESOURCE_NOT_FOUND,
        "message": "Resource not found",
        "data": {"uri": uri},
    }


def test_resource_read_needs_a_uri() -> None:
    assert error(make_server(), "resources/read", {})["code"] == INVALID_PARAMS


def test_an_answer_quoting_a_lone_surrogate_still_encodes() -> None:
    # A JavaScript tool can return a lone surrogate; the answer must still be UTF-8 JSON.
    backend = MemoryBackend()
    backend.add_tool(descriptor("@acme/lone", "t"), lambda arguments: {"text": "a\ud800b"})
    response = call(make_server(backend), "tools/call", {"name": "acme_lone_t"})
    line = encode(response)
    assert json.loads(line)["result"]["structuredContent"] == {"text": "a\ud800b"}


def test_batches_are_answered_only_in_2025_03_26_and_capped() -> None:
    server = make_server()
    pings = [{"jsonrpc": "2.0", "id": index, "method": "ping"} for index in range(MAX_BATCH + 1)]
    old = Session("2025-03-26")
    assert [answer["id"] for answer in server.answer(pings[:MAX_BATCH], old)] == list(
        range(MAX_BATCH)
    )
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert server.answer([note], old) is None
    for batch, session, message in [
        (pings, old, f"Batch of more than {MAX_BATCH} messages"),
        ([], old, "Empty batch"),
        (
            pings[:1],
            Session("2025-06-18"),
            "Batches are not supported in protocol version 2025-06-18",
        ),
    ]:
        assert server.answer(batch, session) == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": INVALID_REQUEST, "message": message},
        }


# Every JSON kind, and a few values the methods read specially.
VALUE_KINDS: list[Any] = [
    None, True, 0, -1, 1.5, 10**30, "", "x" * 10_000, "\x00\u202e", [], [1], {}, {"a": {}},
    "demo_echo_echo", DEMO_SKILL_URI, "2025-03-26",
]  # fmt: skip
PARAM_KEYS = ("protocolVersion", "name", "arguments", "uri", "cursor", "_meta", "capabilities")


@pytest.mark.parametrize("method", ["initialize", "ping", "tools/list", "tools/call",
    "resources/list", "resources/templates/list", "resources/read"])  # fmt: skip
def test_every_method_answers_every_kind_of_param_with_a_result_or_a_client_error(
    method: str,
) -> None:
    """The method table × each params key × each kind of value: an answer (never None for a
    request), a result or a JSON-RPC error the client caused, never -32603, and it encodes."""
    logs: list[str] = []
    server = make_server(logs=logs)
    for key in PARAM_KEYS:
        for value in VALUE_KINDS:
            for base in ({}, {"name": "demo_echo_echo", "uri": DEMO_SKILL_URI}):
                message = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": method,
                    "params": {**base, key: value},
                }
                response = server.handle(message, Session())
                assert response is not None and response["id"] == 1
                assert response.get("error", {}).get("code") != INTERNAL_ERROR, (key, value)
                encode(response)
    assert logs == []
