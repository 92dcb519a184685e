"""``CompositeBackend``: several backends served as one (``splice mcp --data``).

The first backend that lists a tool name (or a resource URI) owns it: a later backend's tool
of the same name is left out of ``tools/list`` (with a log line) and never called, so the
order given decides which one wins. ``splice mcp --data`` puts the host's data tools first,
so an installed package cannot stand in for one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from splice_build.mcp.interface import (
    Backend,
    Resource,
    ResourceContents,
    ToolOutcome,
    UnknownResource,
    UnknownTool,
)


class CompositeBackend:
    """``Backend`` over ``backends``, in order of precedence."""

    def __init__(self, *backends: Backend, log: Callable[[str], None] | None = None) -> None:
        if not backends:
            raise AssertionError("BUG: a CompositeBackend needs at least one backend")
        self._backends = backends
        self._log = log or (lambda _message: None)

    def list_tools(self) -> Sequence[Mapping[str, Any]]:
        seen: set[str] = set()
        tools = []
        for backend in self._backends:
            for descriptor in backend.list_tools():
                name = str(descriptor["mcpName"])
                if name in seen:
                    self._log(f"hiding tool {name!r}: an earlier backend serves that name")
                    continue
                seen.add(name)
                tools.append(descriptor)
        return tools

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        for backend in self._backends:
            try:
                return backend.call_tool(name, arguments)
            except UnknownTool:
                continue
        raise UnknownTool(name)

    def list_resources(self) -> Sequence[Resource]:
        seen: set[str] = set()
        resources = []
        for backend in self._backends:
            for resource in backend.list_resources():
                if resource.uri not in seen:
                    seen.add(resource.uri)
                    resources.append(resource)
        return resources

    def read_resource(self, uri: str) -> ResourceContents:
        for backend in self._backends:
            try:
                return backend.read_resource(uri)
            except UnknownResource:
                continue
        raise UnknownResource(uri)
