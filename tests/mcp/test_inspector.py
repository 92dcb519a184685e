"""A second, independent client: the MCP Inspector CLI (npm, run with Node 24).

`.ci/run` installs it into ``$SPLICE_TEST_CACHE/inspector`` (default ``.cache/inspector``);
``python -c "from testing.mcp_clients import install_inspector; install_inspector()"`` does
the same by hand.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from testing.mcp_clients import (
    DEMO_TOKEN,
    child_env,
    demo_argv,
    free_port,
    http_server,
    inspector_cli,
    inspector_dir,
    installed_project,
    run_inspector,
    splice_argv,
)

pytestmark = pytest.mark.skipif(
    inspector_cli() is None,
    reason=f"MCP Inspector not installed in {inspector_dir()} (.ci/run installs it)",
)


def check_stdio(
    argv: list[str], tool: str, arguments: dict[str, str], env: dict[str, str], cwd: Path
) -> dict:
    listed = run_inspector(["--cwd", str(cwd), "--method", "tools/list", "--", *argv], env=env)
    assert tool in [entry["name"] for entry in listed["tools"]]
    pairs = [f"{key}={value}" for key, value in arguments.items()]
    called = run_inspector(
        [
            "--cwd",
            str(cwd),
            "--method",
            "tools/call",
            "--tool-name",
            tool,
            "--tool-arg",
            *pairs,
            "--",
            *argv,
        ],
        env=env,
    )
    assert called["isError"] is False
    return called


def check_http(
    url: str, token: str, tool: str, arguments: dict[str, str], env: dict[str, str]
) -> dict:
    header = ["--header", f"Authorization: Bearer {token}"]
    listed = run_inspector([url, *header, "--method", "tools/list"], env=env)
    assert tool in [entry["name"] for entry in listed["tools"]]
    pairs = [f"{key}={value}" for key, value in arguments.items()]
    called = run_inspector(
        [url, *header, "--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs], env=env
    )
    assert called["isError"] is False
    return called


def test_inspector_against_the_transports(tmp_path: Path) -> None:
    env = child_env({"HOME": str(tmp_path)})
    called = check_stdio(demo_argv("stdio"), "demo_echo_echo", {"text": "hi"}, env, Path.cwd())
    assert called["structuredContent"] == {"echo": {"text": "hi"}}
    with http_server(demo_argv("http", str(free_port())), env=env) as (url, _process):
        called = check_http(url, DEMO_TOKEN, "demo_echo_echo", {"text": "yo"}, env)
        assert called["structuredContent"] == {"echo": {"text": "yo"}}


@pytest.mark.skipif(
    importlib.util.find_spec("splice_build.sdk") is None,
    reason="needs the SDK's Splice (install-graph issue)",
)
def test_inspector_against_splice_mcp(tmp_path: Path) -> None:
    project, env = installed_project(tmp_path)
    env = {**env, "HOME": env["HOME"]}
    called = check_stdio(splice_argv("mcp"), "splice_example_hello", {"name": "Ada"}, env, project)
    assert called["structuredContent"] == {"message": "Hello, Ada."}
    token = "inspector-token-abcdefghijklmnop"
    argv = splice_argv("mcp", "--http", "--port", str(free_port()))
    with http_server(argv, env={**env, "SPLICE_MCP_TOKEN": token}, cwd=project) as (url, _process):
        called = check_http(url, token, "splice_example_hello", {"name": "Bo"}, env)
        assert called["structuredContent"] == {"message": "Hello, Bo."}
