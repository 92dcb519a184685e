"""The backend a JSON-RPC server dispatches to, and the values it exchanges.

A backend owns *what* is served (tools, resources) and how a call runs; the protocol owns the
wire shapes. Loader failures (a package modified or not granted) are raised as ``SpliceError``
and shown to the client as ``isError`` results; names and URIs the backend does not serve
raise ``UnknownTool`` / ``UnknownResource`` (JSON-RPC -32602 / -32002); a listing or a read
the project's state refuses raises ``Refused`` (-32603 with the refusal's code).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from splice_build.records import dataclass

if TYPE_CHECKING:
    from splice_build.errors import SpliceError


class UnknownTool(LookupError):
    """No tool of that MCP name is served (never was, or its package was removed)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown tool: {name}")
        self.name = name


class Refused(Exception):
    """The backend cannot answer for a reason the user can fix (a broken ``splice.lock``):
    ``error`` says it, in words fit for the client (paths scrubbed). Any other exception of a
    backend is an internal error, and only the server's log says more."""

    def __init__(self, error: SpliceError) -> None:
        super().__init__(error.message)
        self.error = error


class UnknownResource(LookupError):
    """The URI is not one of the listed resources."""

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri}")
        self.uri = uri


@dataclass(frozen=True)
class ToolOutcome:
    """What a call produced: the runtime's ToolResult reduced to what MCP shows.

    ``error`` is ``{code, message, details?}`` (already redacted by the runtime) when ``ok``
    is false; ``logs`` go to the server log, never to the client. A failure may carry an
    ``output`` too (the data tools' ERROR result), shown as ``structuredContent``; ``notice``
    is put before the result text and ``meta`` becomes the result's ``_meta`` (the data
    tools' untrusted-content label).
    """

    ok: bool
    output: Any = None
    error: Mapping[str, Any] | None = None
    logs: str = ""
    notice: str | None = None
    meta: Mapping[str, Any] | None = None

    @classmethod
    def from_result_json(cls, result: Mapping[str, Any]) -> ToolOutcome:
        """Build from the runtime's JSON shape (docs/compatibility.md#runtime)."""
        logs = result.get("logs") or ""
        if result.get("ok"):
            return cls(ok=True, output=result.get("output"), logs=str(logs))
        error = result.get("error")
        if not isinstance(error, Mapping):
            raise AssertionError(f"BUG: failed ToolResult without an error: {result!r}")
        return cls(ok=False, error=dict(error), logs=str(logs))

    @classmethod
    def failure(cls, code: str, message: str, details: Sequence[str] = ()) -> ToolOutcome:
        error: dict[str, Any] = {"code": code, "message": message}
        if details:
            error["details"] = list(details)
        return cls(ok=False, error=error)


@dataclass(frozen=True)
class Resource:
    """One listed resource (a package's SKILL.md)."""

    uri: str
    name: str
    mime_type: str = "text/markdown"
    description: str | None = None


@dataclass(frozen=True)
class ResourceContents:
    uri: str
    text: str
    mime_type: str = "text/markdown"


@dataclass(frozen=True)
class ServerInfo:
    """What ``initialize`` tells the client about the server."""

    name: str = "splice"
    title: str = "Splice"
    version: str = "0.0.0"
    instructions: str | None = None


class Backend(Protocol):
    """Tools and resources to serve; every method is called from worker threads.

    ``list_tools`` returns tool descriptors (docs/compatibility.md#tool-descriptors: ``mcpName``,
    ``qualifiedName``, ``version``, ``description``, ``inputSchema``, ``outputSchema?``,
    ``permissions``, ``annotations``, ``timeoutMs``, ``package``), or, for tools that belong
    to no package (the ``--data`` tools), ``{mcpName, mcpTool}`` where ``mcpTool`` is the
    finished ``tools/list`` entry. ``call_tool`` raises
    ``UnknownTool`` for a name it does not serve and ``SpliceError`` when the package may not
    run (modified, not granted); a tool failure is a ``ToolOutcome`` with ``ok=False``.
    """

    def list_tools(self) -> Sequence[Mapping[str, Any]]: ...

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome: ...

    def list_resources(self) -> Sequence[Resource]: ...

    def read_resource(self, uri: str) -> ResourceContents: ...
