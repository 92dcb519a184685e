"""What `splice mcp` exposes and where it listens: only packages whose grant covers their
manifest, and Streamable HTTP on loopback unless told otherwise."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from splice_build.mcp.backend import INSTRUCTIONS, InstalledBackend
from splice_build.mcp.interface import ServerInfo
from splice_build.mcp.protocol import Server, Session
from splice_build.spec.tree_digest import tree_digest
from testing.cli import run_splice
from testing.mcp_clients import DEMO_TOKEN, child_env, http_server, splice_argv

pytestmark = pytest.mark.node

TOKEN = DEMO_TOKEN


def _ask(server: Server, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    response = server.handle(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}, Session()
    )
    assert response is not None
    return response


def test_a_package_asking_more_than_its_grant_is_not_exposed(tmp_path: Path) -> None:
    """The files digest is made to match again, so only the permission-grant check stands
    between the widened manifest and the client."""
    from splice_build.project.project_file import init_project
    from splice_build.sdk import Splice

    root, _created = init_project(tmp_path / "project")
    splice = Splice(root, home=Path(os.environ["SPLICE_HOME"]))
    splice.add(["@splice/example", "@splice/json"])
    server = Server(InstalledBackend(splice), ServerInfo(instructions=INSTRUCTIONS))
    names = [tool["name"] for tool in _ask(server, "tools/list")["result"]["tools"]]
    assert "splice_example_hello" in names

    package = root / ".splice" / "packages" / "@splice" / "example"
    manifest = json.loads((package / "manifest.json").read_text())
    manifest["permissions"] = {**manifest.get("permissions", {}), "network": ["*"]}
    (package / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    lock = json.loads((root / "splice.lock").read_text())
    lock["packages"]["@splice/example"]["files"] = tree_digest(package)
    (root / "splice.lock").write_text(json.dumps(lock, indent=2) + "\n")

    listed = [tool["name"] for tool in _ask(server, "tools/list")["result"]["tools"]]
    assert listed == ["splice_json_parse", "splice_json_stringify", "splice_json_pick"]
    uris = [r["uri"] for r in _ask(server, "resources/list")["result"]["resources"]]
    assert uris == ["splice://packages/@splice/json/SKILL.md"]
    refused = _ask(
        server, "tools/call", {"name": "splice_example_hello", "arguments": {"name": "Ada"}}
    )["result"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"].startswith("PERMISSIONS_NOT_GRANTED: ")
    assert "network: any public host" in refused["content"][0]["text"]


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=5):
            return True
    except ConnectionRefusedError:
        return False


def test_streamable_http_listens_on_loopback_only_by_default(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    argv = splice_argv("mcp", "--http", "--port", "0")
    env = child_env({"SPLICE_MCP_TOKEN": TOKEN})
    with http_server(argv, env=env, cwd=project) as (url, _process):
        parts = urlsplit(url)
        assert parts.hostname == "127.0.0.1"
        assert parts.port is not None
        assert _accepts("127.0.0.1", parts.port)
        # Bound to 127.0.0.1 itself, not to every address: another address of this machine
        # (127.0.0.2 is local on Linux, like a LAN address would be) is refused.
        assert not _accepts("127.0.0.2", parts.port)
