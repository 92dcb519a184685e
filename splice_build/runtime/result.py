"""ToolResult: the outcome of one execution, in the JSON shape of interfaces.md 4.3."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode

if TYPE_CHECKING:
    from splice_build.runtime.isolation.plan import IsolationPlan


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
    isolation: IsolationPlan | None = None  # None when no process was started

    def to_json(self) -> dict[str, Any]:
        """``{ok, package, tool, output|error, logs, durationMs}`` (interfaces.md 4.3), plus
        ``isolation`` (the layers that ran, issue #14) when a process was started."""
        out: dict[str, Any] = {"ok": self.ok, "package": self.package, "tool": self.tool}
        if self.ok:
            out["output"] = self.output
        else:
            assert self.error is not None, "BUG: failed ToolResult without error"
            out["error"] = self.error.to_json()
        out["logs"] = self.logs
        out["durationMs"] = self.duration_ms
        if self.isolation is not None:
            out["isolation"] = self.isolation.to_json()
        return out
