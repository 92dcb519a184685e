"""A second, independent client: the MCP Inspector CLI (npm, run with Node 24).

The ``inspector`` fixture installs it once into ``$SPLICE_TEST_CACHE/inspector`` (default
``.cache/inspector``) with the wheel's npm, and later sessions use that copy: the README's
test command runs these tests as CI does. Without the npm registry and without that copy,
the tests fail with npm's message (they are never skipped).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.mcp_clients import (
    DEMO_TOKEN,
    InspectorUnavailable,
    child_env,
    demo_argv,
    free_port,
    http_server,
    install_inspector,
    installed_project,
    run_inspector,
    splice_argv,
)


@pytest.fixture(scope="session")
def inspector() -> Path:
    """The Inspector's launcher, installed once per cache (see the module docstring)."""
    try:
        return install_inspector()
    except InspectorUnavailable as exc:
        pytest.fail(str(exc))


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


def test_inspector_against_the_transports(inspector: Path, tmp_path: Path) -> None:
    env = child_env({"HOME": str(tmp_path)})
    called = check_stdio(demo_argv("stdio"), "demo_echo_echo", {"text": "hi"}, env, Path.cwd())
    assert called["structuredContent"] == {"echo": {"text": "hi"}}
    with http_server(demo_argv("http", "0"), env=env) as (url, _process):
        called = check_http(url, DEMO_TOKEN, "demo_echo_echo", {"text": "yo"}, env)
        assert called["structuredContent"] == {"echo": {"text": "yo"}}


def test_inspector_against_splice_mcp(inspector: Path, tmp_path: Path) -> None:
    project, env = installed_project(tmp_path)
    env = {**env, "HOME": env["HOME"]}
    called = check_stdio(splice_argv("mcp"), "splice_example_hello", {"name": "Ada"}, env, project)
    assert called["structuredContent"] == {"message": "Hello, Ada."}
    token = "inspector-token-abcdefghijklmnop"
    argv = splice_argv("mcp", "--http", "--port", "0")
    with http_server(argv, env={**env, "SPLICE_MCP_TOKEN": token}, cwd=project) as (url, _process):
        called = check_http(url, token, "splice_example_hello", {"name": "Bo"}, env)
        assert called["structuredContent"] == {"message": "Hello, Bo."}


def test_without_the_npm_registry_the_install_fails_with_npm_s_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registry that refuses connections (a closed port on this machine): the fixture's
    install fails with a message that says what is needed, never a silent skip."""
    monkeypatch.setenv("npm_config_registry", f"http://127.0.0.1:{free_port()}/")
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    with pytest.raises(InspectorUnavailable) as caught:
        install_inspector(tmp_path / "cache" / "inspector")
    message = str(caught.value)
    assert "the MCP Inspector tests need the npm registry once" in message
    assert "ECONNREFUSED" in message
