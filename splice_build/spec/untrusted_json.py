"""JSON from the network: the one decoder of every protocol entry point (docs/mcp.md#hostile-input).

MCP over stdio and Streamable HTTP and the registry's HTTP API read request bodies with
``decode``, and the registry client reads the registry's answers with it. A document that
would crash, exhaust or slip past a server is refused with ``UntrustedJsonError`` before any
handler sees it, so each transport answers one protocol error (``-32700`` / HTTP 400, or
``REGISTRY_ERROR`` in the client) instead of a 500 or silence:

- more bytes than the caller's limit (checked first, on the raw bytes);
- bytes that are not strict UTF-8 (no overlong forms, no encoded surrogates);
- nesting deeper than ``MAX_DEPTH``, counted on the text by two regular expressions without
  recursion and before the decoder runs, so a 100,000-level ``[[[…`` costs one linear scan;
- more values than the caller's ``max_values``, if it gives one, counted on the same text:
  5 MiB of ``[[],[],…]`` is 1.7 million lists, ~130 MiB of Python objects from one answer;
- a lone surrogate (``"\\ud800"``) in any key or string: it has no UTF-8 form, so it could not
  even be written back in an error message (unless the caller keeps them: a registry answer
  carries manifests, whose strings may hold them as ``JSON.parse`` does, docs/compatibility.md);
- a number literal longer than ``MAX_NUMBER_CHARS`` (CPython refuses integers of more than
  4,300 digits with a plain ``ValueError`` after a quadratic conversion) or one that is not a
  finite double (``1e400``), and ``NaN``/``Infinity``, which JSON does not have.

What remains is what ``json.loads`` gives (the last of duplicate keys wins). A caller may allow
more than ``MAX_DEPTH`` levels (a registry answer holds a manifest, which may nest deep): what
the C decoder cannot reach it decodes with ``json_text``'s explicit stack, under the same rules.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from itertools import accumulate
from typing import Any, NoReturn

from splice_build.spec.json_text import parse_iterative

MAX_DEPTH = 512  # a whole message; tool arguments (256 levels, spec.limits) nest inside it
MAX_NUMBER_CHARS = 100

# A complete string literal, possessively matched (linear, no backtracking), to blank out.
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_SPACE = re.compile(r"[ \t\n\r]++")
_SCALAR = re.compile(r"[^\[\]{},]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# Only a \u escape can put a surrogate into text decoded as strict UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class UntrustedJsonError(ValueError):
    """The document is refused; ``str()`` says why in words safe to send back."""


def decode(
    data: bytes,
    *,
    max_bytes: int,
    max_depth: int = MAX_DEPTH,
    max_values: int | None = None,
    lone_surrogates: bool = False,
) -> Any:
    """The JSON value of ``data``, or UntrustedJsonError (see the module docstring);
    ``lone_surrogates`` keeps strings that hold one instead of refusing them."""
    if len(data) > max_bytes:
        raise UntrustedJsonError(f"document exceeds {max_bytes} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UntrustedJsonError(f"invalid UTF-8 at byte {exc.start}") from exc
    # The value count needs scalars kept apart from brackets: two more passes, only when asked.
    structure = _brackets(text) if max_values is None else _structure(text)
    if _depth(structure) > max_depth:
        raise UntrustedJsonError(f"nested deeper than {max_depth} levels")
    if max_values is not None and _values(structure) > max_values:
        raise UntrustedJsonError(f"more than {max_values} values")
    try:
        value = _loads(text)
    except UntrustedJsonError:
        raise
    except ValueError as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else "invalid JSON"
        raise UntrustedJsonError(message) from exc
    if not lone_surrogates and _SURROGATE_ESCAPE.search(text) and has_lone_surrogate(value):
        raise UntrustedJsonError("a string holds a lone surrogate")
    return value


def _loads(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant, parse_int=_integer, parse_float=_float)
    except RecursionError:
        # Deeper than the C decoder goes (or called on a deep stack), yet within max_depth.
        return parse_iterative(text, parse_int=_integer, parse_float=_float)


def _brackets(text: str) -> str:
    """The brackets of JSON text outside string literals (see ``_structure``)."""
    if text.count("[") + text.count("{") == 0:
        return ""
    return _NOT_BRACKET.sub("", _STRING.sub("", text))


def _structure(text: str) -> str:
    """JSON text outside string literals with each scalar (a string, a number, a key and its
    colon) as ``0`` and no whitespace: ``{"a": [1, "b"], "c": []}`` is ``{0[0,0],0[]}``.

    On invalid text (an unterminated string) it may hold too much, never too little for the
    part that could decode: the document is refused either way.
    """
    if text.count("[") + text.count("{") == 0:
        return ""
    return _SCALAR.sub("0", _SPACE.sub("", _STRING.sub("0", text)))


def _depth(structure: str) -> int:
    """The deepest nesting of ``_brackets`` or ``_structure`` text."""
    brackets = structure.replace(",", "").replace("0", "")
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _values(structure: str) -> int:
    """The values of the document, object keys aside: the first, then each one a non-empty
    container holds (its commas and one more)."""
    opened = structure.count("[") + structure.count("{")
    empty = structure.count("[]") + structure.count("{}")
    return 1 + structure.count(",") + opened - empty


def nesting(text: str) -> int:
    """The deepest bracket nesting of JSON text outside string literals, without recursion."""
    return _depth(_brackets(text))


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


def _json_scalars(value: Any) -> Iterator[Any]:
    """Every value of a JSON value that is no object or list, object keys included, at any
    depth (an explicit stack: a decoded value may nest deeper than Python's recursion limit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            yield item


def json_strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, object keys included, at any depth."""
    return (item for item in _json_scalars(value) if isinstance(item, str))


def has_lone_surrogate(value: Any) -> bool:
    """A string (key or value) anywhere in ``value`` holds a surrogate: it has no UTF-8 form."""
    return any(_SURROGATE.search(text) for text in json_strings(value))


def has_non_finite_number(value: Any) -> bool:
    """A float anywhere in ``value`` is ``NaN`` or infinite: it has no JSON form (a value
    built in Python; ``decode`` never gives one)."""
    return any(isinstance(item, float) and not math.isfinite(item) for item in _json_scalars(value))
