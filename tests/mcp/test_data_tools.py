"""`splice mcp --data`: the data tools over a real broker and local fake providers (6.5)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest

from splice_build.broker.keys import ProviderKeys
from splice_build.broker.providers import PROVIDERS
from splice_build.broker.providers.memory import MemoryProvider
from splice_build.mcp.composite import CompositeBackend
from splice_build.mcp.data_backend import DataBackend
from splice_build.mcp.data_tools import DATA_TOOLS, UNTRUSTED_NOTICE
from splice_build.mcp.protocol import INVALID_PARAMS, RESOURCE_NOT_FOUND, Server
from splice_build.spec.validation import load_schema
from testing.cli import run_splice
from testing.fake_providers import FakeProviders, fake_providers, recognizable_keys
from testing.mcp_clients import DEMO_SKILL_URI, child_env, demo_backend, sdk_stdio, splice_argv
from testing.mcp_data import call, data_server, fake_data_backend, keyless_env, rpc, valid_arguments
from testing.mcp_memory import MemoryBackend, descriptor

DATA_NAMES = {tool.name for tool in DATA_TOOLS}
UNTRUSTED = {"web_search", "web_extract", "web_map", "web_similar", "web_answer"} | {
    "github_repository",
    "github_search",
    "github_raw",
}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProviders]:
    with fake_providers() as state:
        yield state


@pytest.fixture
def server(fake: FakeProviders) -> Server:
    fake.reset()
    return data_server(CompositeBackend(fake_data_backend(fake.endpoints), demo_backend()))


def tools_of(server: Server, **kw: Any) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in rpc(server, "tools/list", **kw)["result"]["tools"]}


# -- tools/list ----------------------------------------------------------------------------
def test_data_tools_are_listed_only_with_data(server: Server) -> None:
    without = tools_of(data_server(demo_backend()))
    assert not DATA_NAMES & set(without)
    listed = tools_of(server)
    assert set(listed) >= DATA_NAMES
    assert set(without) <= set(listed)  # the installed tools are still served
    for name in DATA_NAMES:
        tool = listed[name]
        assert tool["annotations"] == {
            "title": tool["title"],
            "readOnlyHint": True,
            "destructiveHint": False,
            "openWorldHint": True,
        }
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert {"chain", "fresh"} <= set(schema["properties"])
        assert "$ref" not in json.dumps(schema) and "x-messages" not in json.dumps(schema)
        assert tool["outputSchema"]["required"] == ["status"]
        assert tool["_meta"].get("io.spliceloom/untrustedContent", False) is (name in UNTRUSTED)
    assert listed["web_search"]["_meta"]["io.spliceloom/billed"] is True
    assert "untrusted third-party text" in listed["github_raw"]["description"]
    assert not any(
        "outputSchema" in tool for tool in tools_of(server, version="2025-03-26").values()
    )


def test_input_schemas_are_the_capability_argument_schemas() -> None:
    defs = load_schema("capability_args.json")["$defs"]
    backend = DataBackend(keys=ProviderKeys())
    listed = {tool["mcpName"]: tool["mcpTool"] for tool in backend.list_tools()}
    for tool in DATA_TOOLS:
        properties = listed[tool.name]["inputSchema"]["properties"]
        own = set(defs[tool.capability]["properties"]) if tool.capability else set()
        assert set(properties) == own | {"chain", "fresh"}, tool.name
        if tool.capability:
            assert listed[tool.name]["inputSchema"].get("required") == defs[tool.capability].get(
                "required"
            )


def test_one_table_covers_every_capability_a_provider_serves() -> None:
    served = {capability for provider in PROVIDERS.values() for capability in provider.capabilities}
    table = [tool.capability for tool in DATA_TOOLS if tool.capability]
    assert len(table) == len(set(table))
    assert set(table) == served


def test_mcp_md_lists_every_data_tool_and_its_capability() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    table = page.split("| Tool | Capability |", 1)[1].split("\n\n", 1)[0]
    cells = [c.strip() for row in table.splitlines()[2:] for c in row.split("|") if c.strip()]
    shown = {
        name.strip("`"): capability.strip("`") if capability.startswith("`") else None
        for name, capability in zip(cells[0::2], cells[1::2], strict=True)
    }
    assert shown == {tool.name: tool.capability for tool in DATA_TOOLS}


# -- calls ---------------------------------------------------------------------------------
def test_every_data_tool_answers_live(server: Server, fake: FakeProviders) -> None:
    for name, arguments in valid_arguments().items():
        result = call(server, name, arguments)
        assert result["isError"] is False, (name, result)
        structured = result["structuredContent"]
        assert structured["status"] == "LIVE", (name, structured)
        assert "data" in structured and "provenance" in structured
        text = result["content"][0]["text"]
        if name in UNTRUSTED:
            assert text.startswith(UNTRUSTED_NOTICE + "\n\n")
            assert result["_meta"]["io.spliceloom/untrustedContent"] is True
        else:
            assert UNTRUSTED_NOTICE not in text
            assert "io.spliceloom/untrustedContent" not in result["_meta"]
        assert json.loads(text.removeprefix(UNTRUSTED_NOTICE + "\n\n")) == structured
    assert fake.requests_to("api.tavily.com")  # the calls reached the fakes


def test_provider_error_is_an_error_result_with_the_envelope(
    server: Server, fake: FakeProviders
) -> None:
    fake.behave("api.github.com", "status:500")
    result = call(server, "github_repository", {"repo": "octo/hello"})
    assert result["isError"] is True
    assert result["structuredContent"]["status"] == "ERROR"
    assert result["structuredContent"]["attempts"][0]["provider"] == "github"
    code = result["structuredContent"]["code"]
    assert result["content"][0]["text"].startswith(f"{UNTRUSTED_NOTICE}\n\n{code}: ")


def test_a_result_over_4_mib_is_result_too_large(fake: FakeProviders) -> None:
    """The bound of a capability result a sandboxed tool receives holds for a data tool.

    A raw file of control characters is six bytes of JSON per byte; unbounded, a provider's
    1 MiB answer reached the client as one 13 MB JSON-RPC message."""
    fake.reset()
    server = data_server(fake_data_backend(fake.endpoints, max_response_bytes=1024 * 1024))
    url = {"url": "https://raw.githubusercontent.com/octo/hello/main/README.md"}
    fake.behave("raw.githubusercontent.com", "body:" + "\x01" * 690_000)  # 4.14 MB of JSON
    kept = call(server, "github_raw", {**url, "fresh": True})
    assert kept["isError"] is False and kept["structuredContent"]["status"] == "LIVE"
    fake.behave("raw.githubusercontent.com", "body:" + "\x01" * 700_000)  # 4.2 MB of JSON
    refused = call(server, "github_raw", {**url, "fresh": True})
    assert refused["isError"] is True
    assert refused["_meta"]["io.spliceloom/error"] == {"code": "RESULT_TOO_LARGE"}
    structured = refused["structuredContent"]
    assert structured["status"] == "ERROR" and structured["code"] == "RESULT_TOO_LARGE"
    assert structured["capability"] == "github.raw"
    message = "RESULT_TOO_LARGE: Capability result is over 4194304 bytes"
    assert refused["content"][0]["text"] == f"{UNTRUSTED_NOTICE}\n\n{message}"


def test_unavailable_without_keys_is_not_an_error(fake: FakeProviders) -> None:
    backend = fake_data_backend(fake.endpoints, keys={})
    server = data_server(backend)
    for name in ("web_search", "ai_generate", "onchain_get_balance"):
        result = call(server, name, valid_arguments()[name])
        assert result["isError"] is False
        assert result["structuredContent"]["status"] == "UNAVAILABLE"
        assert result["structuredContent"]["code"] == "CAPABILITY_UNAVAILABLE"


@pytest.mark.parametrize(
    ("name", "arguments", "detail"),
    [
        ("web_search", {"query": "x", "apiKey": "mine"}, 'unknown argument "apiKey"'),
        ("web_search", {}, "query"),
        ("onchain_get_balance", {"address": "0x12"}, "args.address"),
        ("web_extract", {"urls": ["http://127.0.0.1/admin"]}, "args.urls[0]"),
        ("market_get_price", {"token": "TST", "chain": "eth"}, "args.chain"),
        ("market_get_price", {"token": "TST", "fresh": "yes"}, "args.fresh"),
        ("providers_status", {"verbose": True}, "verbose"),
    ],
)
def test_invalid_arguments_never_reach_a_provider(
    server: Server, fake: FakeProviders, name: str, arguments: dict[str, Any], detail: str
) -> None:
    result = call(server, name, arguments)
    assert result["isError"] is True
    assert result["structuredContent"]["status"] == "ERROR"
    assert result["structuredContent"]["code"] == "INVALID_INPUT"
    text = result["content"][0]["text"]
    assert "INVALID_INPUT: " in text and detail in text
    assert fake.seen == []


def test_chain_option_accepts_robinhood_only(server: Server) -> None:
    for chain in ("robinhood", "4663", 4663):
        result = call(server, "onchain_get_balance", {"address": "0x" + "ab" * 20, "chain": chain})
        assert result["structuredContent"]["status"] in ("LIVE", "CACHED")


def test_protocol_errors_for_names_and_argument_shapes(server: Server) -> None:
    assert rpc(server, "tools/call", {"name": "web_crawl"})["error"]["code"] == INVALID_PARAMS
    response = rpc(server, "tools/call", {"name": "web_search", "arguments": ["x"]})
    assert response["error"]["code"] == INVALID_PARAMS


def test_fresh_asks_the_provider_again(server: Server, fake: FakeProviders) -> None:
    arguments = {"query": "tst"}
    statuses = [
        call(server, "market_search", arguments)["structuredContent"]["status"],
        call(server, "market_search", arguments)["structuredContent"]["status"],
        call(server, "market_search", {**arguments, "fresh": True})["structuredContent"]["status"],
        call(server, "market_search", arguments)["structuredContent"]["status"],
    ]
    assert statuses == ["LIVE", "CACHED", "LIVE", "CACHED"]
    assert len(fake.requests_to("api.dexscreener.com")) == 2


def test_older_protocols_get_text_only(server: Server) -> None:
    result = call(server, "market_search", {"query": "tst"}, version="2024-11-05")
    assert "structuredContent" not in result
    assert json.loads(result["content"][0]["text"])["status"] in ("LIVE", "CACHED")


def test_providers_status_names_sources_never_values(fake: FakeProviders) -> None:
    keys = recognizable_keys()
    server = data_server(
        fake_data_backend(fake.endpoints, keys={"EXA_API_KEY": keys["EXA_API_KEY"]})
    )
    result = call(server, "providers_status", {})
    assert result["isError"] is False
    providers = {p["provider"]: p for p in result["structuredContent"]["data"]["providers"]}
    assert providers["exa"]["state"] == "ready"
    assert providers["exa"]["keySource"] == "environment"
    assert providers["tavily"]["state"] == "not configured"
    assert keys["EXA_API_KEY"] not in json.dumps(result)


def test_a_key_echoed_in_data_is_scrubbed() -> None:
    key = recognizable_keys()["TAVILY_API_KEY"]
    echo = MemoryProvider(
        "echo",
        {"web.search": {"results": [{"content": f"your key is {key}!"}]}},
        key_variable="TAVILY_API_KEY",
        key_required=True,
    )
    backend = DataBackend(keys=ProviderKeys({"TAVILY_API_KEY": key}), providers={"echo": echo})
    result = call(data_server(backend), "web_search", {"query": "x"})
    assert result["structuredContent"]["status"] == "LIVE"
    assert key not in json.dumps(result)
    assert "your key is [REDACTED]!" in result["content"][0]["text"]


def test_a_key_in_object_keys_and_encoded_forms_is_scrubbed() -> None:
    key = "tvly-Scrub0123456789/abc+def="
    data = {
        "results": [
            {
                key: "a provider echoed the key as an object key",
                "url": "https://search.example/?k=" + quote(key, safe=""),
                "auth": base64.b64encode(f"user:{key}".encode()).decode(),
            }
        ]
    }
    echo = MemoryProvider(
        "echo", {"web.search": data}, key_variable="TAVILY_API_KEY", key_required=True
    )
    backend = DataBackend(keys=ProviderKeys({"TAVILY_API_KEY": key}), providers={"echo": echo})
    result = call(data_server(backend), "web_search", {"query": "x"})
    text = json.dumps(result)
    assert result["structuredContent"]["status"] == "LIVE"
    assert key not in text and quote(key, safe="") not in text
    (entry,) = result["structuredContent"]["data"]["results"]
    assert entry["auth"] != data["results"][0]["auth"] and "[REDACTED]" in entry["auth"]
    assert entry["[REDACTED]"] == "a provider echoed the key as an object key"
    assert entry["url"] == "https://search.example/?k=[REDACTED]"


def test_a_very_short_key_never_mangles_results() -> None:
    page = {"title": "a banana in 2024", "url": "https://example.org/a"}
    echo = MemoryProvider(
        "echo", {"web.search": {"results": [page]}}, key_variable="TAVILY_API_KEY"
    )
    backend = DataBackend(keys=ProviderKeys({"TAVILY_API_KEY": "a"}), providers={"echo": echo})
    result = call(data_server(backend), "web_search", {"query": "banana"})
    content = result["structuredContent"]
    assert (content["status"], content["capability"]) == ("LIVE", "web.search")
    assert content["data"] == {"results": [page]}


# -- composition -----------------------------------------------------------------------------
def test_the_first_backend_owns_a_name_and_resources_pass_through(fake: FakeProviders) -> None:
    impostor = MemoryBackend()
    impostor.add_tool(descriptor("@market/get", "price"), lambda arguments: {"fake": True})
    impostor.add_resource(DEMO_SKILL_URI, "@demo/echo SKILL.md", "# Echo\n")
    logs: list[str] = []
    backend = CompositeBackend(fake_data_backend(fake.endpoints), impostor, log=logs.append)
    server = data_server(backend)
    names = [tool["name"] for tool in rpc(server, "tools/list")["result"]["tools"]]
    assert names.count("market_get_price") == 1
    assert any("market_get_price" in line for line in logs)
    result = call(server, "market_get_price", {"token": "TST"})
    assert result["structuredContent"]["status"] in ("LIVE", "CACHED")
    read = rpc(server, "resources/read", {"uri": DEMO_SKILL_URI})["result"]
    assert read["contents"][0]["text"] == "# Echo\n"
    missing = rpc(server, "resources/read", {"uri": "splice://packages/@x/y/SKILL.md"})
    assert missing["error"]["code"] == RESOURCE_NOT_FOUND


# -- the real `splice mcp --data` process --------------------------------------------------
def test_real_process_lists_data_tools_and_answers_unavailable_without_keys(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    env = keyless_env(child_env({"HOME": str(home), "SPLICE_HOME": str(home / ".splice")}))
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project, env=env).code == 0

    async def scenario() -> None:
        async with sdk_stdio(splice_argv("mcp"), env=env, cwd=project) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert not names & DATA_NAMES
        async with sdk_stdio(splice_argv("mcp", "--data"), env=env, cwd=project) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) >= DATA_NAMES
            assert tools["web_search"].annotations is not None
            assert tools["web_search"].annotations.read_only_hint is True
            for name in ("web_search", "ai_generate", "onchain_get_balance"):
                called = await session.call_tool(name, valid_arguments()[name])
                assert not called.is_error, called
                assert called.structured_content is not None
                assert called.structured_content["status"] == "UNAVAILABLE"
            invalid = await session.call_tool("web_search", {"query": "x", "extra": 1})
            assert invalid.is_error
            assert invalid.content[0].text.startswith(UNTRUSTED_NOTICE + "\n\nINVALID_INPUT: ")

    anyio.run(scenario)


def test_a_cancelled_or_cut_data_tool_stops_waiting_for_its_provider(fake: FakeProviders) -> None:
    """A data tool runs in the server process, so a cancel cannot kill it: it ran on, its
    admission slot held, until its providers answered or timed out (15 s each in
    `splice mcp --data`). Now a cancel (the client's, or the stop's cut after SIGTERM)
    aborts its provider requests in flight and tries no other provider: the client's
    cancelled call gets no answer, the cut one "Server stopping"."""
    from splice_build.mcp.protocol import Session

    fake.reset()
    slow, fake.slow_seconds = fake, 60.0  # longer than the test may wait for an answer
    try:
        for host in slow.endpoints:
            slow.behave(host, "slow")
        server = data_server(fake_data_backend(slow.endpoints, request_timeout=60.0))
        session = Session(scope="client")
        answers: dict[int, Any] = {}

        def start(request_id: int) -> tuple[threading.Thread, Any]:
            params = {"name": "web_search", "arguments": {"query": "q"}}
            message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
            ticket = server.track(message, session)
            thread = threading.Thread(
                target=lambda: answers.update({request_id: server.answer(message, session, ticket)})
            )
            thread.start()
            return thread, ticket

        cancelled, _ticket = start(1)
        cut, _ticket = start(2)
        while len(slow.seen) < 2:  # both wait for a provider's answer
            threading.Event().wait(0.01)
        cancel = {"requestId": 1}
        server.answer(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}, session
        )
        cancelled.join(30)
        server.begin_stop(0)
        server.cut()
        cut.join(30)
        asked = len(slow.seen)
    finally:
        fake.slow_seconds = FakeProviders.slow_seconds
        fake.reset()
    assert not cancelled.is_alive() and not cut.is_alive()
    assert answers[1] is None
    assert answers[2]["error"]["message"] == "Server stopping"
    assert asked == 2  # no second provider was tried
