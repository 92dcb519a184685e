"""JSON from the network: the one decoder of every protocol entry point (docs/mcp.md#hostile-input).

MCP over stdio and Streamable HTTP and the registry's HTTP API read request bodies with
``decode``. A document that would crash, exhaust or slip past a server is refused with
``UntrustedJsonError`` before any handler sees it, so each transport answers one protocol
error (``-32700`` / HTTP 400) instead of a 500 or silence:

- more bytes than the caller's limit (checked first, on the raw bytes);
- bytes that are not strict UTF-8 (no overlong forms, no encoded surrogates);
- nesting deeper than ``MAX_DEPTH``, counted on the text by two regular expressions without
  recursion and before the decoder runs, so a 100,000-level ``[[[…`` costs one linear scan;
- a lone surrogate (``"\\ud800"``) in any key or string: it has no UTF-8 form, so it could not
  even be written back in an error message;
- a number literal longer than ``MAX_NUMBER_CHARS`` (CPython refuses integers of more than
  4,300 digits with a plain ``ValueError`` after a quadratic conversion) or one that is not a
  finite double (``1e400``), and ``NaN``/``Infinity``, which JSON does not have.

What remains is what ``json.loads`` gives (the last of duplicate keys wins).
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any, NoReturn

MAX_DEPTH = 512  # a whole message; tool arguments (256 levels, spec.limits) nest inside it
MAX_NUMBER_CHARS = 100

# A complete string literal, possessively matched (linear, no backtracking), to blank out.
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# Only a \u escape can put a surrogate into text decoded as strict UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class UntrustedJsonError(ValueError):
    """The document is refused; ``str()`` says why in words safe to send back."""


def decode(data: bytes, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``data``, or UntrustedJsonError (see the module docstring)."""
    if len(data) > max_bytes:
        raise UntrustedJsonError(f"document exceeds {max_bytes} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UntrustedJsonError(f"invalid UTF-8 at byte {exc.start}") from exc
    if nesting(text) > max_depth:
        raise UntrustedJsonError(f"nested deeper than {max_depth} levels")
    try:
        value = json.loads(
            text, parse_constant=_no_constant, parse_int=_integer, parse_float=_float
        )
    except UntrustedJsonError:
        raise
    except RecursionError as exc:  # only a stack already deep when called gets here
        raise UntrustedJsonError(f"nested deeper than {max_depth} levels") from exc
    except ValueError as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else "invalid JSON"
        raise UntrustedJsonError(message) from exc
    if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        raise UntrustedJsonError("a string holds a lone surrogate")
    return value


def nesting(text: str) -> int:
    """The deepest bracket nesting of JSON text outside string literals, without recursion.

    On invalid text (an unterminated string) the count may be too high, never too low for the
    part that could decode: the document is refused either way.
    """
    if text.count("[") + text.count("{") == 0:
        return 0
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _no_constant(name: str) -> NoReturn:
    raise UntrustedJsonError(f"{name} is not valid JSON")


def _number_text(text: str) -> str:
    if len(text) > MAX_NUMBER_CHARS:
        raise UntrustedJsonError(f"a number is longer than {MAX_NUMBER_CHARS} characters")
    return text


def _integer(text: str) -> int:
    return int(_number_text(text))


def _float(text: str) -> float:
    value = float(_number_text(text))
    if not math.isfinite(value):
        raise UntrustedJsonError("a number is out of range")
    return value


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
