"""Provider keys never reach an MCP client: results, errors and the server's stderr (docs/security.md).

Every provider variable is set to a recognizable value; the fake providers answer with error
bodies that echo whatever credential the request carried (header, URL path or query), or
with garbage that does the same. Every data tool and every tool of the capability skills
(@splice/web, market, onchain, installed in a real project) is driven through those error
paths over stdio, and the raw protocol lines and the server's stderr are searched for every
key value, including the long pieces of the key-carrying RPC URL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from splice_build.broker.keys import load_keys
from testing.cli import run_splice
from testing.fake_providers import HOSTS, RPC_HOST, fake_providers, recognizable_keys
from testing.mcp_clients import LineClient, child_env, splice_argv
from testing.mcp_data import (
    capability_project,
    keyless_env,
    server_argv,
    skill_calls,
    valid_arguments,
)

pytestmark = pytest.mark.node

FAILURE_MODES = ("status:401", "status:500", "garbage")


def secret_values() -> tuple[str, ...]:
    return load_keys(env=recognizable_keys(), project_root=None, home=None).secret_values()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return capability_project(tmp_path_factory.mktemp("mcp-key-leak"))


class Conversation:
    """A raw stdio session that keeps every line the server wrote."""

    def __init__(self, client: LineClient) -> None:
        self.client = client
        self.lines: list[str] = []
        self._next = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        self.client.request(
            {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        )
        response = self.client.receive(timeout=60)
        self.lines.append(json.dumps(response))
        assert response["id"] == self._next
        return response

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        response = self.request("tools/call", {"name": name, "arguments": arguments})
        assert "result" in response, response
        return response["result"]

    def call_all(self, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """The results of ``calls``, sent at once: the server runs as many at a time as it
        has call threads and queues the rest (docs/mcp.md#stdio), so the skills' sandbox
        processes start two at a time on two cores instead of one after another."""
        ids = []
        for name, arguments in calls:
            self._next += 1
            ids.append(self._next)
            params = {"name": name, "arguments": arguments}
            self.client.request(
                {"jsonrpc": "2.0", "id": self._next, "method": "tools/call", "params": params}
            )
        answers: dict[int, dict[str, Any]] = {}
        for _ in calls:
            response = self.client.receive(timeout=60)
            self.lines.append(json.dumps(response))
            answers[response["id"]] = response
        assert sorted(answers) == ids
        for response in answers.values():
            assert "result" in response, response
        return [answers[number]["result"] for number in ids]


def assert_no_secret(texts: list[str], where: str) -> None:
    for secret in secret_values():
        for text in texts:
            assert secret not in text, f"a provider key value reached the {where}"


def test_keys_never_reach_mcp_messages_or_logs(project: tuple[Path, dict[str, str]]) -> None:
    root, env = project
    with fake_providers() as fake:
        client = LineClient(server_argv(root, fake), env={**env, **recognizable_keys()}, cwd=root)
        talk = Conversation(client)
        try:
            talk.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
            names = {tool["name"] for tool in talk.request("tools/list", {})["result"]["tools"]}
            assert set(valid_arguments()) <= names
            assert {name for name, _ in skill_calls()} <= names
            statuses: dict[str, set[str]] = {}
            for mode in FAILURE_MODES:
                for host in HOSTS:
                    fake.behave(host, mode)
                calls = [
                    (name, {**arguments, **fresh_for(name)})
                    for name, arguments in [*valid_arguments().items(), *skill_calls()]
                ]
                for (name, _), result in zip(calls, talk.call_all(calls), strict=True):
                    status = (result.get("structuredContent") or {}).get("status", "")
                    statuses.setdefault(name, set()).add(status)
            # Error paths that never reach a provider, with a key as an argument.
            key = recognizable_keys()["TAVILY_API_KEY"]
            talk.call("web_search", {"query": "x", "apiKey": key})
            talk.call("splice_web_search", {"query": 5})
        finally:
            code, rest, stderr = client.close()
        assert code == 0
    # The test can fail: the fakes saw the keys and echoed them into what the server read.
    assert any(
        secret_values()[0] in seen.headers.get("authorization", "")
        for seen in fake.requests_to("api.tavily.com")
    )
    assert any(seen.path.endswith(tuple(secret_values())) for seen in fake.requests_to(RPC_HOST))
    # Every tool that calls a provider went through its error paths (skills included).
    failing = {name for name, seen in statuses.items() if "ERROR" in seen}
    assert failing == {*valid_arguments(), *(name for name, _ in skill_calls())} - {
        "providers_status"
    }
    # urllib3's DEBUG request lines carried the RPC URL's key pieces: redacted, yet there.
    assert f"{RPC_HOST}/v2/[REDACTED]" in stderr, stderr[-3000:]
    assert_no_secret([*talk.lines, rest.decode("utf-8", "replace")], "MCP messages")
    assert_no_secret([stderr], "server's stderr")
    assert "provider" in stderr  # the broker did log the failures there


def fresh_for(name: str) -> dict[str, Any]:
    """Data tools skip the cache so every mode reaches the fakes; skills cannot ask that."""
    return {"fresh": True} if name in valid_arguments() else {}


def test_real_process_with_keys_in_a_dotenv(tmp_path: Path) -> None:
    """The real `splice mcp --data`, keys in the project's .env: no path contacts a provider."""
    home = tmp_path / "home"
    env = keyless_env(child_env({"HOME": str(home), "SPLICE_HOME": str(home / ".splice")}))
    root = tmp_path / "project"
    root.mkdir()
    assert run_splice("init", cwd=root, env=env).code == 0
    keys = recognizable_keys()
    (root / ".env").write_text("".join(f"{k}={v}\n" for k, v in keys.items()), encoding="utf-8")
    client = LineClient(splice_argv("mcp", "--data"), env=env, cwd=root)
    talk = Conversation(client)
    try:
        talk.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        status = talk.call("providers_status", {})
        providers = {p["provider"]: p for p in status["structuredContent"]["data"]["providers"]}
        assert providers["tavily"] == {**providers["tavily"], "state": "ready", "keySource": ".env"}
        bad = talk.call("web_extract", {"urls": ["http://169.254.169.254/latest/meta-data"]})
        assert bad["isError"] is True
        bad = talk.call("ai_generate", {"prompt": "x", "maxTokens": 99999})
        assert bad["structuredContent"]["code"] == "INVALID_INPUT"
        talk.request("tools/call", {"name": "splice_web_search", "arguments": {}})
    finally:
        code, rest, stderr = client.close()
    assert code == 0
    assert_no_secret([*talk.lines, rest.decode("utf-8", "replace")], "MCP messages")
    assert_no_secret([stderr], "server's stderr")
