"""The real `splice mcp` process with installed packages, driven by the official SDK client."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from testing.mcp_clients import (
    http_server,
    installed_project,
    sdk_http,
    sdk_stdio,
    splice_argv,
)

pytestmark = pytest.mark.node

TOKEN = "e2e-token-abcdefghijklmnopqrstuvwxyz"
# A liveness bound, not a speed check: the 50 calls finish at all (they take seconds; their
# rate is measured by bench/bench_mcp.py). It fails a hung server instead of hanging the run.
LIVENESS_SECONDS = 600


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return installed_project(tmp_path_factory.mktemp("mcp-e2e"))


def test_stdio_list_call_read_and_errors(installed: tuple[Path, dict[str, str]]) -> None:
    project, env = installed

    async def scenario() -> None:
        async with sdk_stdio(splice_argv("mcp"), env=env, cwd=project) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert {"splice_example_hello", "splice_example_stats", "splice_json_parse"} <= set(
                tools
            )
            hello = tools["splice_example_hello"]
            assert hello.title == "@splice/example.hello"
            assert hello.meta is not None
            assert hello.meta["io.spliceloom/package"] == "@splice/example"
            assert hello.output_schema is not None
            called = await session.call_tool("splice_example_hello", {"name": "Ada"})
            assert not called.is_error
            assert called.structured_content == {"message": "Hello, Ada."}
            invalid = await session.call_tool("splice_example_hello", {"name": 5})
            assert invalid.is_error
            assert invalid.content[0].text.startswith("INVALID_INPUT: ")
            resources = await session.list_resources()
            uris = [resource.uri for resource in resources.resources]
            assert "splice://packages/@splice/example/SKILL.md" in uris
            read = await session.read_resource("splice://packages/@splice/example/SKILL.md")
            skill = (project / ".splice/packages/@splice/example/SKILL.md").read_text()
            assert read.contents[0].text == skill

    anyio.run(scenario)


def test_http_list_and_call(installed: tuple[Path, dict[str, str]]) -> None:
    project, env = installed
    argv = splice_argv("mcp", "--http", "--port", "0")
    with http_server(argv, env={**env, "SPLICE_MCP_TOKEN": TOKEN}, cwd=project) as (url, _process):

        async def scenario() -> None:
            async with sdk_http(url, TOKEN) as session:
                names = [tool.name for tool in (await session.list_tools()).tools]
                assert "splice_example_hello" in names
                called = await session.call_tool("splice_example_hello", {"name": "Bo"})
                assert called.structured_content == {"message": "Hello, Bo."}

        anyio.run(scenario)


def test_modified_package_disappears_while_others_work(tmp_path: Path) -> None:
    project, env = installed_project(tmp_path)

    async def scenario() -> None:
        async with sdk_stdio(splice_argv("mcp"), env=env, cwd=project) as session:
            before = [tool.name for tool in (await session.list_tools()).tools]
            assert "splice_example_hello" in before
            entry = project / ".splice/packages/@splice/example/tools/hello.js"
            entry.write_text(entry.read_text() + "\n// tampered\n")
            after = [tool.name for tool in (await session.list_tools()).tools]
            assert not any(name.startswith("splice_example_") for name in after)
            assert "splice_json_parse" in after
            refused = await session.call_tool("splice_example_hello", {"name": "Ada"})
            assert refused.is_error
            text = refused.content[0].text
            assert text.startswith("INSTALLED_PACKAGE_MODIFIED: ")
            assert str(project) not in text and os.path.realpath(project) not in text
            parsed = await session.call_tool("splice_json_parse", {"text": "[1]"})
            assert not parsed.is_error
            uris = [resource.uri for resource in (await session.list_resources()).resources]
            assert "splice://packages/@splice/example/SKILL.md" not in uris

    anyio.run(scenario)


def test_fifty_concurrent_tool_calls(installed: tuple[Path, dict[str, str]]) -> None:
    project, env = installed

    async def scenario() -> dict[int, Any]:
        results: dict[int, Any] = {}
        with anyio.fail_after(LIVENESS_SECONDS):
            async with sdk_stdio(splice_argv("mcp"), env=env, cwd=project) as session:

                async def one(index: int) -> None:
                    answer = await session.call_tool("splice_example_hello", {"name": f"n{index}"})
                    results[index] = answer.structured_content

                async with anyio.create_task_group() as group:
                    for index in range(50):
                        group.start_soon(one, index)
        return results

    results = anyio.run(scenario)
    assert results == {index: {"message": f"Hello, n{index}."} for index in range(50)}


def test_http_with_one_call_at_a_time_serves_every_session(
    installed: tuple[Path, dict[str, str]],
) -> None:
    """`--max-calls 1`: eight SDK sessions, each from its own address, call at once; each
    waits its turn in its own queue (one call each: within the queue's bounds, so none is
    refused) and all are served."""
    project, env = installed
    argv = splice_argv("mcp", "--http", "--port", "0", "--max-calls", "1")
    with http_server(argv, env={**env, "SPLICE_MCP_TOKEN": TOKEN}, cwd=project) as (url, _process):
        results: dict[int, Any] = {}

        async def one(index: int) -> None:
            async with sdk_http(url, TOKEN, source=f"127.0.0.{index + 2}") as session:
                answer = await session.call_tool("splice_example_hello", {"name": f"s{index}"})
                results[index] = answer.structured_content

        async def scenario() -> None:
            with anyio.fail_after(LIVENESS_SECONDS):
                async with anyio.create_task_group() as group:
                    for index in range(8):
                        group.start_soon(one, index)

        anyio.run(scenario)
    assert results == {index: {"message": f"Hello, s{index}."} for index in range(8)}
