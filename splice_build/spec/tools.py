"""Tool descriptors: the one description of a tool that the SDK, MCP and the registry share.

docs/compatibility.md#tool-descriptors. Names: ``example.hello`` (short, for ``splice run``),
``@splice/example.hello`` (qualified) and ``splice_example_hello`` (MCP; segments never
contain ``_``, so the name is unambiguous). MCP annotations are derived from the package's
permissions, never declared by it.
"""

from __future__ import annotations

from typing import Any

from splice_build.spec.manifest import Manifest
from splice_build.spec.permissions import Permissions


def mcp_tool_name(namespace: str, name: str, tool: str) -> str:
    return f"{namespace}_{name}_{tool}"


def split_mcp_tool_name(text: str) -> tuple[str, str] | None:
    """``(package id, tool)`` named by an MCP tool name, or None when ``text`` cannot be one
    (segments and tools never hold ``_``, so exactly two separate the three parts)."""
    parts = text.split("_")
    if len(parts) != 3:
        return None
    namespace, name, tool = parts
    return f"@{namespace}/{name}", tool


def annotations_for(permissions: Permissions) -> dict[str, bool]:
    """``readOnlyHint`` / ``destructiveHint`` from ``fs.write``; ``openWorldHint`` from network
    or capabilities (host capabilities reach external data too)."""
    read_only = not permissions.fs_write
    return {
        "readOnlyHint": read_only,
        "destructiveHint": not read_only,
        "openWorldHint": bool(permissions.network or permissions.capabilities),
    }


def describe_tools(manifest: Manifest, *, shared: bool = False) -> list[dict[str, Any]]:
    """One descriptor per tool, in manifest order (fresh dicts: callers may modify them;
    ``shared``: their schemas are the manifest's own, for a caller that only writes them)."""
    descriptors = []
    for tool in manifest.tools:
        spec = tool.to_json(shared=shared)
        descriptor: dict[str, Any] = {
            "package": manifest.id,
            "version": manifest.version,
            "tool": tool.name,
            "name": f"{manifest.name}.{tool.name}",
            "qualifiedName": f"{manifest.id}.{tool.name}",
            "mcpName": mcp_tool_name(manifest.namespace, manifest.name, tool.name),
            "description": tool.description,
            "inputSchema": spec["input"],
            "permissions": manifest.permissions.to_json(),
            "annotations": annotations_for(manifest.permissions),
            "timeoutMs": tool.effective_timeout_ms,
        }
        if "output" in spec:
            descriptor["outputSchema"] = spec["output"]
        descriptors.append(descriptor)
    return descriptors
