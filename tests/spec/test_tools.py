from __future__ import annotations

from typing import Any

import pytest

from splice_build.spec.manifest import Manifest
from splice_build.spec.permissions import Permissions
from splice_build.spec.tools import annotations_for, describe_tools, mcp_tool_name
from testing.manifests import DROP, manifest_dict, tool_dict


def test_descriptor_of_the_example_tool() -> None:
    manifest = Manifest.from_dict(manifest_dict(permissions={"network": ["api.github.com"]}))
    (descriptor,) = describe_tools(manifest)
    assert descriptor == {
        "package": "@splice/example",
        "version": "0.1.0",
        "tool": "hello",
        "name": "example.hello",
        "qualifiedName": "@splice/example.hello",
        "mcpName": "splice_example_hello",
        "description": "Say hello",
        "inputSchema": tool_dict()["input"],
        "permissions": {"fs": {"read": [], "write": []}, "network": ["api.github.com"], "env": []},
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": True},
        "timeoutMs": 10_000,
        "outputSchema": tool_dict()["output"],
    }


def test_descriptors_follow_manifest_order_and_options() -> None:
    tools = [tool_dict(name="get-repo", output=DROP, timeoutMs=2500), tool_dict(name="list")]
    manifest = Manifest.from_dict(manifest_dict(namespace="acme", name="github", tools=tools))
    first, second = describe_tools(manifest)
    assert [first["tool"], second["tool"]] == ["get-repo", "list"]
    assert first["mcpName"] == "acme_github_get-repo" and first["name"] == "github.get-repo"
    assert first["qualifiedName"] == "@acme/github.get-repo"
    assert "outputSchema" not in first and first["timeoutMs"] == 2500
    assert second["timeoutMs"] == 10_000


def test_descriptors_are_fresh_copies() -> None:
    manifest = Manifest.from_dict(manifest_dict())
    describe_tools(manifest)[0]["inputSchema"]["properties"].clear()
    assert describe_tools(manifest)[0]["inputSchema"] == tool_dict()["input"]


def test_agent_package_has_no_descriptors() -> None:
    manifest = Manifest.from_dict(
        manifest_dict(tools=[], agent={"instructions": "x", "skills": []})
    )
    assert describe_tools(manifest) == []


@pytest.mark.parametrize(
    ("permissions", "expected"),
    [
        ({}, (True, False, False)),
        ({"fs": {"read": ["."]}}, (True, False, False)),
        ({"fs": {"write": ["out"]}}, (False, True, False)),
        ({"network": ["*"]}, (True, False, True)),
        ({"capabilities": ["market.price"]}, (True, False, True)),
        ({"env": ["TOKEN"]}, (True, False, False)),
        ({"fs": {"write": ["out"]}, "network": ["x.com"]}, (False, True, True)),
    ],
)
def test_annotations(permissions: dict[str, Any], expected: tuple[bool, bool, bool]) -> None:
    hints = annotations_for(Permissions.from_json(permissions))
    assert list(hints) == ["readOnlyHint", "destructiveHint", "openWorldHint"]
    assert tuple(hints.values()) == expected


def test_mcp_tool_name() -> None:
    assert mcp_tool_name("splice", "github", "get-repo") == "splice_github_get-repo"
