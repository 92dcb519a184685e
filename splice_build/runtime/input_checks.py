"""Input checks before any process starts (interfaces.md 4.3 steps 3–5)."""

from __future__ import annotations

import json
from typing import Any

from splice_build.errors import ErrorCode
from splice_build.runtime.limits import MAX_INPUT_BYTES, MAX_INPUT_DEPTH
from splice_build.runtime.result import ToolError


def nesting_depth(value: Any, stop_after: int) -> int:
    """Depth of nested objects/arrays (a scalar is 0), counted iteratively.

    Stops early once ``stop_after`` is exceeded, so a hostile 100,000-deep value costs little.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > stop_after:
            return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def serialize_input(value: Any) -> tuple[bytes | None, ToolError | None]:
    """The input as JSON bytes, or the error that stops the call before a process starts."""
    if nesting_depth(value, MAX_INPUT_DEPTH) > MAX_INPUT_DEPTH:
        return None, ToolError(
            ErrorCode.INPUT_TOO_LARGE, f"Input is nested deeper than {MAX_INPUT_DEPTH} levels"
        )
    try:
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError) as exc:
        return None, ToolError(ErrorCode.INVALID_INPUT, f"Input is not JSON-serializable: {exc}")
    if len(data) > MAX_INPUT_BYTES:
        return None, ToolError(
            ErrorCode.INPUT_TOO_LARGE, f"Input is {len(data)} bytes (max {MAX_INPUT_BYTES})"
        )
    return data, None
