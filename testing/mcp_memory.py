"""An in-memory ``Backend``: tools are Python callables, resources are strings.

A test double of our own making, like httpx's ``MockTransport``: the protocol and both
transports are tested against it without installing packages. It lives in ``testing/``
because nothing shipped needs it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from splice_build.mcp.interface import (
    Resource,
    ResourceContents,
    ToolOutcome,
    UnknownResource,
    UnknownTool,
)

# A handler gets the call's arguments and returns a ToolOutcome, or any JSON value (success).
# It may raise SpliceError to refuse the way a loader does (INSTALLED_PACKAGE_MODIFIED, …).
Handler = Callable[[Mapping[str, Any]], Any]


def descriptor(
    package: str,
    tool: str,
    *,
    version: str = "1.0.0",
    description: str = "A tool.",
    input_schema: Mapping[str, Any] | None = None,
    output_schema: Mapping[str, Any] | None = None,
    permissions: Mapping[str, Any] | None = None,
    timeout_ms: int = 10000,
) -> dict[str, Any]:
    """A tool descriptor of the shape ``describe_tools`` produces (docs/compatibility.md#tool-descriptors)."""
    namespace, name = package.removeprefix("@").split("/", 1)
    result: dict[str, Any] = {
        "package": package,
        "version": version,
        "tool": tool,
        "name": f"{name}.{tool}",
        "qualifiedName": f"{package}.{tool}",
        "mcpName": f"{namespace}_{name}_{tool}",
        "description": description,
        "inputSchema": dict(input_schema or {"type": "object"}),
        "permissions": dict(
            permissions or {"fs": {"read": [], "write": []}, "network": [], "env": []}
        ),
        "timeoutMs": timeout_ms,
    }
    if output_schema is not None:
        result["outputSchema"] = dict(output_schema)
    return result


class MemoryBackend:
    """Tools and resources held in dicts; safe to change while a server runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tools: dict[str, tuple[Mapping[str, Any], Handler]] = {}
        self._resources: dict[str, tuple[Resource, str]] = {}

    def add_tool(self, tool_descriptor: Mapping[str, Any], handler: Handler) -> None:
        with self._lock:
            self._tools[str(tool_descriptor["mcpName"])] = (tool_descriptor, handler)

    def remove_tool(self, mcp_name: str) -> None:
        with self._lock:
            self._tools.pop(mcp_name, None)

    def add_resource(
        self, uri: str, name: str, text: str, mime_type: str = "text/markdown"
    ) -> None:
        with self._lock:
            self._resources[uri] = (Resource(uri=uri, name=name, mime_type=mime_type), text)

    # Backend -----------------------------------------------------------------------------
    def list_tools(self) -> Sequence[Mapping[str, Any]]:
        with self._lock:
            entries = list(self._tools.values())
        return [entry[0] for entry in sorted(entries, key=lambda entry: entry[0]["package"])]

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        with self._lock:
            entry = self._tools.get(name)
        if entry is None:
            raise UnknownTool(name)
        result = entry[1](arguments)
        return result if isinstance(result, ToolOutcome) else ToolOutcome(ok=True, output=result)

    def list_resources(self) -> Sequence[Resource]:
        with self._lock:
            return [resource for resource, _text in self._resources.values()]

    def read_resource(self, uri: str) -> ResourceContents:
        with self._lock:
            entry = self._resources.get(uri)
        if entry is None:
            raise UnknownResource(uri)
        return ResourceContents(uri=uri, text=entry[1], mime_type=entry[0].mime_type)


def stdio_script(*requests: object) -> bytes:
    """The bytes a stdio client writes: ``initialize`` (protocol 2025-06-18, id 0), then each
    of ``requests`` (an object, or a list of them: a batch) as given, one JSON line each."""
    import json

    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c"}}
    messages = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, *requests]
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def call_request(tool: str, request_id: int = 1) -> dict[str, Any]:
    """A ``tools/call`` of ``tool`` without arguments."""
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool}}
