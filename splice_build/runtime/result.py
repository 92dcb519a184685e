"""ToolResult: the outcome of one execution, in the JSON shape of interfaces.md 4.3."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from splice_build.errors import ErrorCode


@dataclass(frozen=True)
class ToolError:
    code: ErrorCode
    message: str
    details: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": str(self.code), "message": self.message}
        if self.details:
            out["details"] = list(self.details)
        return out


@dataclass(frozen=True)
class ToolResult:
    """``ok`` with ``output``, or not ``ok`` with ``error``; never both."""

    ok: bool
    package: str
    tool: str
    output: Any = None
    error: ToolError | None = None
    logs: str = ""
    duration_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        """``{ok, package, tool, output|error, logs, durationMs}`` (interfaces.md 4.3)."""
        out: dict[str, Any] = {"ok": self.ok, "package": self.package, "tool": self.tool}
        if self.ok:
            out["output"] = self.output
        else:
            assert self.error is not None, "BUG: failed ToolResult without error"
            out["error"] = self.error.to_json()
        out["logs"] = self.logs
        out["durationMs"] = self.duration_ms
        return out
