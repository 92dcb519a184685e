"""Shared checks of the capability skills (@splice/web, market, onchain) in the real sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from splice_build.runtime import LoadedPackage, SpliceRuntime
from splice_build.spec.package import validate_package_files
from splice_build.spec.schema_subset import check_schema, validate_value
from testing.fake_providers import skill_runtime
from testing.skill_runner import examples, package_files, skill_dir

STATUSES = ["LIVE", "CACHED", "UNAVAILABLE", "ERROR"]


def assert_capability_package(name: str, capabilities: list[str], tools: list[str]) -> None:
    """Capabilities only, strict inputs, outputs requiring ``status``, valid examples."""
    files = package_files(name)
    manifest = validate_package_files(files)
    raw = json.loads(files["manifest.json"])
    assert (manifest.id, manifest.version) == (f"@splice/{name}", "0.1.0")
    assert raw["runtime"] == {"type": "node", "minNodeVersion": "22.18.0"}
    assert raw["permissions"] == {
        "fs": {"read": [], "write": []},
        "network": [],
        "env": [],
        "capabilities": capabilities,
    }
    assert [tool["name"] for tool in raw["tools"]] == tools
    assert all(path.endswith((".mjs", ".md", ".json")) for path in files)
    for tool in raw["tools"]:
        assert tool["entry"].endswith(".mjs")
        assert tool["input"]["additionalProperties"] is False
        assert tool["output"]["required"] == ["status"]
        assert tool["output"]["properties"]["status"]["enum"] == STATUSES
        assert check_schema(tool["input"]) == [] and check_schema(tool["output"]) == []
    by_name = {tool["name"]: tool for tool in raw["tools"]}
    cases = examples(name)
    assert sorted(case["tool"] for case in cases) == sorted(tools)
    for case in cases:
        tool = by_name[case["tool"]]
        assert validate_value(case["input"], tool["input"]) == [], case
        assert validate_value(case["output"], tool["output"]) == [], case
    for source in (skill_dir(name) / "tools").glob("*.mjs"):
        text = source.read_text(encoding="utf-8")
        assert "fetch" not in text and "process.env" not in text, source


def load(name: str, tmp_path: Path, broker: Any) -> tuple[SpliceRuntime, LoadedPackage]:
    runtime = skill_runtime(tmp_path / "project", broker)
    return runtime, runtime.load(skill_dir(name))


def run(
    runtime: SpliceRuntime, package: LoadedPackage, tool: str, tool_input: dict[str, Any]
) -> dict[str, Any]:
    """The tool's output (the capability result); fails the test if the call itself failed."""
    result = runtime.execute(package, tool, tool_input).to_json()
    assert result["ok"], result
    return result["output"]
