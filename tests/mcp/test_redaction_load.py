"""Redaction never stalls ``splice mcp`` (docs/security.md#redaction): while the server
redacts 64 KiB of crafted log text from one call, it still answers ``ping``.

The crafted text is a run of one keyword: a backtracking engine needed about 20 s for it,
holding the interpreter lock, so nothing else in the server moved (the ping waited for the
whole scan). The ping is sent once the tool's process has written its marker, i.e. when the
parent is about to redact the logs; it must be answered within the client's ordinary read
limit, which is far below that stall. The call's result follows, and the server's log line
for it has the secret redacted.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from testing.cli import run_splice, splice_executable
from testing.mcp_clients import LineClient, child_env
from testing.registry_fixtures import publish
from testing.registry_server import registry_server

pytestmark = pytest.mark.node

SECRET = "ghp_" + "k7Q" * 12
FLOOD_TOOL = """import { writeFileSync } from "node:fs";
export default function hello(input, ctx) {
  console.log("TOKEN".repeat(13000) + " GITHUB_TOKEN=" + input.name);
  writeFileSync(ctx.paths.project + "/out/logged", "1");
  return { message: "done" };
}
"""
READ_LIMIT_S = 10  # LineClient's hang guard for one answer; the old stall was about 20 s
# What is not measured (the server's start, the call's own end): a loaded machine may take
# longer than READ_LIMIT_S to start `splice mcp` or a Node process.
START_LIMIT_S = 60


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    store = tmp_path / "store"
    publish(
        store,
        tmp_path / "work",
        name="flood",
        permissions={"fs": {"write": ["out"]}},
        files={"tools/hello.js": FLOOD_TOOL},
    )
    home = tmp_path / "home"
    env = {"HOME": str(home), "SPLICE_HOME": str(home / ".splice")}
    project = tmp_path / "project"
    project.mkdir()
    with registry_server(store, admin=False) as server:
        assert run_splice("init", "--registry", server.url, cwd=project, env=env).code == 0
        added = run_splice("add", "@acme/flood", "--accept-permissions", cwd=project, env=env)
        assert added.code == 0, added.stderr
    return project, child_env(env)


def _until(
    client: LineClient, wanted: int, seen: dict[int, dict], timeout: float = START_LIMIT_S
) -> dict:
    while wanted not in seen:
        answer = client.receive(timeout=timeout)
        seen[answer["id"]] = answer
    return seen[wanted]


def test_ping_is_answered_while_crafted_logs_are_redacted(tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    marker = project / "out" / "logged"
    client = LineClient([splice_executable(), "mcp"], env=env, cwd=project)
    seen: dict[int, dict] = {}
    try:
        client.request(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
            }
        )
        assert "result" in _until(client, 1, seen)
        client.request(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "acme_flood_hello", "arguments": {"name": SECRET}},
            }
        )
        waited = time.monotonic() + 120  # hang guard: the tool has a 10 s timeout of its own
        while not marker.exists():
            assert time.monotonic() < waited, "the tool never ran"
            time.sleep(0.02)
        client.request({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert _until(client, 3, seen, READ_LIMIT_S) == {"jsonrpc": "2.0", "id": 3, "result": {}}
        result = _until(client, 2, seen)["result"]
        assert not result.get("isError"), result
    finally:
        code, _rest, stderr = client.close()
    assert code == 0
    assert SECRET not in stderr and SECRET not in json.dumps(seen)
    assert "GITHUB_TOKEN=[REDACTED]" in stderr
