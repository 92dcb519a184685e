"""ToolResult: the outcome of one execution, in the JSON shape of docs/compatibility.md#runtime."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode
from splice_build.records import dataclass

if TYPE_CHECKING:
    from splice_build.runtime.isolation.plan import IsolationPlan

# A skill's own refusal code ("HARD_LINK"): an upper-case letter, then 1–63 upper-case
# letters, digits or underscores. In a thrown error's message it is followed by ": ".
_CODE = r"[A-Z][A-Z0-9_]{1,63}"
SKILL_CODE = re.compile(rf"({_CODE}): ")
_WHOLE_CODE = re.compile(_CODE)


def is_skill_code(value: object) -> bool:
    """Whether ``value`` is a string of exactly the allow-listed shape ``skill_code_of`` returns.

    For a layer that receives an error as data (the MCP mapping) and must not pass on a
    structure, a 10 KB string or control characters even if its producer changed.
    """
    return isinstance(value, str) and _WHOLE_CODE.fullmatch(value) is not None


def skill_code_of(message: str) -> str | None:
    """The code a tool put before its message, or None.

    The official skills report a refusal as ``Error("CODE: message")``, which the runtime
    returns as ``TOOL_ERROR`` with that message (docs/runtime.md, "Errors"). The code is read
    from the *sanitized* message, so it says nothing the message does not already show: a
    prefix that redaction or path replacement changed is not a code.
    """
    match = SKILL_CODE.match(message)
    return match.group(1) if match else None


@dataclass(frozen=True)
class ToolError:
    code: ErrorCode
    message: str
    details: tuple[str, ...] = ()
    # What to do about a failure Splice found before the tool ran (``SpliceError.hint``:
    # "unset SPLICE_NODE …", "run `splice doctor` …"); a tool's own error has none.
    hint: str | None = None

    @property
    def skill_code(self) -> str | None:
        """The tool's own code of a ``TOOL_ERROR`` (``PATH_OUTSIDE_SANDBOX``, …), else None."""
        return skill_code_of(self.message) if self.code == ErrorCode.TOOL_ERROR else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": str(self.code), "message": self.message}
        if self.details:
            out["details"] = list(self.details)
        if self.hint:
            out["hint"] = self.hint
        skill_code = self.skill_code
        if skill_code is not None:
            out["skillCode"] = skill_code
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
        """``{ok, package, tool, output|error, logs, durationMs}`` (docs/compatibility.md#runtime), plus
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
