"""Input checks before any process starts (docs/compatibility.md#runtime steps 3–5)."""

from __future__ import annotations

import json
from typing import Any

from splice_build.errors import ErrorCode
from splice_build.runtime.limits import MAX_INPUT_BYTES
from splice_build.runtime.result import ToolError
from splice_build.spec.json_depth import nesting_depth
from splice_build.spec.limits import MAX_INPUT_DEPTH

# The largest double has 309 integer digits: a shorter run of digits is a finite number.
# With every digit read as "0", one substring search finds a longer run (a regular
# expression tries every position and costs ten times more on 4 MiB).
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 309


def input_as_sent(value: Any) -> tuple[Any, ToolError | None]:
    """The input as the tool receives it (``value`` through its JSON text), or the error that
    stops the call before a process starts.

    The schema check reads this value, never the caller's: JSON turns a Python key ``1``,
    ``True`` or ``None`` into ``"1"``, ``"true"`` or ``"null"``, so ``{"1": "ok", 1: {...}}``
    passes a check of ``"1"`` as a string yet reaches the tool as ``{"1": {...}}`` (the last
    of duplicate keys wins in ``JSON.parse``); a tuple becomes an array.
    """
    try:
        if nesting_depth(value, MAX_INPUT_DEPTH) > MAX_INPUT_DEPTH:
            return None, ToolError(
                ErrorCode.INPUT_TOO_LARGE, f"Input is nested deeper than {MAX_INPUT_DEPTH} levels"
            )
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )
    except Exception as exc:
        return None, ToolError(
            ErrorCode.INVALID_INPUT, f"Input is not JSON-serializable: {_why(exc)}"
        )
    if len(data) > MAX_INPUT_BYTES:
        return None, ToolError(
            ErrorCode.INPUT_TOO_LARGE, f"Input is {len(data)} bytes (max {MAX_INPUT_BYTES})"
        )
    if _LONG_RUN not in data.translate(_DIGITS_AS_ZERO):  # no integer literal is that long
        return json.loads(data), None
    try:
        return json.loads(data, parse_int=_js_integer), None
    except OverflowError:
        return None, ToolError(
            ErrorCode.INVALID_INPUT, "Input holds an integer beyond the largest JavaScript number"
        )


def _why(exc: Exception) -> str:
    """The encoder's own message; for an error a caller's value raised itself (the ``items``,
    ``values`` or ``__iter__`` of a dict or list subclass, which the depth count and the
    encoder call) its type only: the caller's exception is never formatted or raised on."""
    if type(exc) in (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        return str(exc)
    return f"a value in it raised {type(exc).__name__} when read"


def _js_integer(text: str) -> int:
    """An integer the tool's ``JSON.parse`` reads as a finite number: one beyond the largest
    double (310 digits) would reach it as ``Infinity``, which no schema admits."""
    value = int(text)
    float(value)  # OverflowError beyond the largest double
    return value
