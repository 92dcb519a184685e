"""Input checks before any process starts (docs/compatibility.md#runtime steps 3–5)."""

from __future__ import annotations

import json
from typing import Any

from splice_build.errors import ErrorCode
from splice_build.runtime.limits import MAX_INPUT_BYTES
from splice_build.runtime.result import ToolError
from splice_build.spec.json_depth import nesting_depth
from splice_build.spec.limits import MAX_INPUT_DEPTH


def input_as_sent(value: Any) -> tuple[Any, ToolError | None]:
    """The input as the tool receives it (``value`` through its JSON text), or the error that
    stops the call before a process starts.

    The schema check reads this value, never the caller's: JSON turns a Python key ``1``,
    ``True`` or ``None`` into ``"1"``, ``"true"`` or ``"null"``, so ``{"1": "ok", 1: {...}}``
    passes a check of ``"1"`` as a string yet reaches the tool as ``{"1": {...}}`` (the last
    of duplicate keys wins in ``JSON.parse``); a tuple becomes an array.
    """
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
    return json.loads(data), None
