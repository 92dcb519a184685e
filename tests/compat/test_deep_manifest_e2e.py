"""A manifest whose ``default`` nests 1,000 and 100,000 levels deep is valid, as in the
TypeScript Splice (JSON.parse has no depth limit), and goes the whole way with the real binary:
validate, publish to the real registry server, install over HTTP, run, describe (``info
--json``) and serve over MCP stdio. Nothing on that path recurses per level
(spec/json_text.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from splice_build.spec import json_text
from splice_build.spec.json_depth import nesting_depth
from testing.cli import run_splice, splice_executable
from testing.packages import minimal_manifest
from testing.registry_fixtures import publish
from testing.registry_server import registry_server

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}},
}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _manifest_text(depth: int) -> str:
    manifest = minimal_manifest(name="deep")
    manifest["tools"][0]["input"]["properties"]["name"]["default"] = "DEEP"
    return json.dumps(manifest, indent=2).replace('"DEEP"', "[" * depth + "]" * depth)


def _default_depth(schema: dict) -> int:
    return nesting_depth(schema["properties"]["name"]["default"], 10**6)


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_a_deep_default_goes_the_whole_way(depth: int, tmp_path: Path) -> None:
    store = tmp_path / "store"
    publish(store, tmp_path / "work", name="deep", files={"manifest.json": _manifest_text(depth)})
    package_dir = tmp_path / "work" / "acme-deep-1.0.0"
    assert run_splice("validate", str(package_dir)).code == 0
    with registry_server(store, admin=False) as server:
        project = tmp_path / "project"
        project.mkdir()
        assert run_splice("init", "--registry", server.url, cwd=project).code == 0
        added = run_splice("add", "@acme/deep", cwd=project)
        assert added.code == 0, added.stderr
        info = run_splice("--json", "info", "@acme/deep", cwd=project)
        assert info.code == 0, info.stderr
    (tool,) = json_text.parse(info.stdout)["tools"]
    assert _default_depth(tool["inputSchema"]) == depth

    ran = run_splice("run", "deep.hello", "name=Ada", cwd=project)
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.stdout) == {"message": "Hello, Ada."}

    lines = "".join(json.dumps(m) + "\n" for m in (INITIALIZE, LIST))
    served = subprocess.run(
        [splice_executable(), "mcp"],
        cwd=project,
        input=lines,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    answers = [json_text.parse(line) for line in served.stdout.splitlines()]
    (listed,) = [a["result"]["tools"] for a in answers if a.get("id") == 2]
    assert [t["name"] for t in listed] == ["acme_deep_hello"]
    assert _default_depth(listed[0]["inputSchema"]) == depth
