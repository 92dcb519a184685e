"""Mapping a session Outcome and a tool's output to final errors (docs/compatibility.md#runtime, docs/compatibility.md#ipc)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode
from splice_build.runtime.protocol import ResultError
from splice_build.runtime.result import ToolError
from splice_build.runtime.session import Outcome

if TYPE_CHECKING:
    from splice_build.spec.manifest import Tool

# Host reply codes the parent keeps; any other code becomes TOOL_ERROR (4.5).
_KEPT_HOST_CODES = frozenset(
    {
        ErrorCode.PERMISSION_DENIED,
        ErrorCode.TOOL_LOAD_FAILED,
        ErrorCode.TOOL_ERROR,
        ErrorCode.INVALID_OUTPUT,
    }
)
_HOST_FAILURE_EXIT = 70  # host.mjs EXIT_HOST_FAILURE: hardening or job read failed
# Node.js's exit code when the module's top-level await (the host awaiting the tool) is still
# pending and nothing is left that could settle it.
_UNSETTLED_EXIT = 13
_OOM_MARKERS = (
    b"JavaScript heap out of memory",
    b"Reached heap limit",
    b"Fatal process out of memory",
)


def outcome_to_error(outcome: Outcome, *, timeout_ms: int, max_output: int) -> ToolError | None:
    """None for a successful result frame; otherwise the error to report."""
    if outcome.oversized_output is not None:
        return ToolError(
            ErrorCode.OUTPUT_TOO_LARGE,
            f"Tool output is {outcome.oversized_output} bytes (max {max_output})",
        )
    if outcome.violation is not None:
        return ToolError(
            ErrorCode.INVALID_OUTPUT, f"Tool process sent an invalid message: {outcome.violation}"
        )
    if isinstance(outcome.message, ResultError):
        code = outcome.message.code
        kept = ErrorCode(code) if code in _KEPT_HOST_CODES else ErrorCode.TOOL_ERROR
        return ToolError(kept, outcome.message.message)
    if outcome.message is not None:
        return None
    if outcome.timed_out:
        return ToolError(ErrorCode.TIMEOUT, f"Tool timed out after {timeout_ms} ms")
    raw_logs = outcome.logs.raw()
    if any(marker in raw_logs for marker in _OOM_MARKERS):
        return ToolError(ErrorCode.TOOL_CRASHED, "Tool process ran out of memory")
    if b"ERR_ACCESS_DENIED" in raw_logs:
        return ToolError(ErrorCode.PERMISSION_DENIED, "Tool process was denied access")
    if outcome.exit_code is None:
        return ToolError(
            ErrorCode.TOOL_CRASHED,
            "Tool process exited without a result (its exit status is unknown: this program "
            "ignores SIGCHLD, so the kernel discards its children's exit statuses)",
        )
    if outcome.exit_code == _HOST_FAILURE_EXIT:
        return ToolError(ErrorCode.TOOL_CRASHED, "The sandbox host failed before running the tool")
    if outcome.exit_code == _UNSETTLED_EXIT:
        return ToolError(
            ErrorCode.TOOL_CRASHED,
            "Tool process exited without a result (exit code 13): the tool's promise never "
            "settled, and nothing was left that could settle it",
        )
    return ToolError(
        ErrorCode.TOOL_CRASHED,
        f"Tool process exited without a result (exit code {outcome.exit_code})",
    )


def output_error(package_id: str, tool: Tool, output: Any, *, max_output: int) -> ToolError | None:
    """Size (OUTPUT_TOO_LARGE) and schema (INVALID_OUTPUT) checks on a decoded output."""
    from splice_build.spec.schema_subset import validate_value

    size = len(json.dumps(output, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > max_output:
        return ToolError(
            ErrorCode.OUTPUT_TOO_LARGE, f"Tool output is {size} bytes (max {max_output})"
        )
    if tool.output is not None:
        errors = validate_value(tool.output, output, "output")
        if errors:
            return ToolError(
                ErrorCode.INVALID_OUTPUT,
                f"Invalid output from {package_id}.{tool.name}",
                tuple(errors),
            )
    return None
