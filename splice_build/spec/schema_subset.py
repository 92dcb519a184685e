"""The small JSON Schema subset that describes tool input and output (docs/compatibility.md#schema-subset).

Two jobs: ``check_schema`` says why a schema in a manifest is not a valid Splice schema
(unsupported keywords are rejected, so an author is never surprised by a constraint that is
silently ignored), and ``validate_value`` checks a value against a checked schema with the
TypeScript runtime's semantics and messages. Both are plain Python: the subset is tiny, its
messages are part of the interface, and tool I/O is validated on every call.

Values may nest far deeper than schemas (256 levels), so ``validate_value`` walks with an
explicit stack; ``check_schema`` stops at the depth limit, so its recursion is bounded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from splice_build.spec.paths import utf16_len
from splice_build.spec.validation import js_literal

if TYPE_CHECKING:
    from typing import TypeAlias

    # A place in a value or schema: (parent place or None, step text); its text is built only
    # for a message (``_path_text``), so a long property name is never copied once per item.
    _Where: TypeAlias = tuple[Any, str]
    _Item: TypeAlias = "tuple[Mapping[str, Any], object, _Where] | _Message"

MAX_DEPTH = 16
MAX_ERRORS = 100  # messages of one validation; one more line says the rest is not listed
MAX_ENUM_TEXT = 1000  # characters of enum options listed in one message
MAX_PATH_TEXT = 1000  # characters of a path in one message
TYPES = ("object", "string", "number", "integer", "boolean", "array", "null")
KEYWORDS = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "default",
    }
)
_NON_NEGATIVE_INT = ("minLength", "maxLength", "minItems", "maxItems")


def check_schema(schema: object, path: str = "schema", *, limit: int = MAX_ERRORS) -> list[str]:
    """Why ``schema`` is not a valid Splice schema (empty when it is).

    At most ``limit`` problems are listed, then one line (``<path>: further problems are not
    listed``), so an invalid schema always has a problem and a manifest of 2 MiB cannot make
    a list of messages many times its size: a path is text only in a message, at most
    ``MAX_PATH_TEXT`` characters (a long property name is not copied into each of its
    subschemas' paths).
    """
    found = _Found(limit)
    try:
        _check(schema, (None, path), 0, found)
    except _Enough:
        return [*found.messages, f"{path}: further problems are not listed"]
    return found.messages


class _Enough(Exception):
    """More problems than a caller lists: the check stops."""


class _Found:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.messages: list[str] = []

    def add(self, where: _Where, text: str) -> None:
        if len(self.messages) >= self.limit:
            raise _Enough
        self.messages.append(_path_text(where) + text)


def _check(schema: object, where: _Where, depth: int, found: _Found) -> None:
    if depth > MAX_DEPTH:
        found.add(where, f": schema nesting is too deep (max {MAX_DEPTH})")
        return
    if not isinstance(schema, dict):
        found.add(where, ": must be an object")
        return
    for key in schema:
        if key not in KEYWORDS:
            found.add(where, f': unsupported keyword "{key}"')
    if "type" in schema and not (isinstance(schema["type"], str) and schema["type"] in TYPES):
        found.add(where, f".type: must be one of {', '.join(TYPES)}")
    if "description" in schema and not isinstance(schema["description"], str):
        found.add(where, ".description: must be a string")
    if "properties" in schema:
        properties = schema["properties"]
        if not isinstance(properties, dict):
            found.add(where, ".properties: must be an object")
        else:
            for name, sub in properties.items():
                _check(sub, (where, f".properties.{name}"), depth + 1, found)
    if "required" in schema:
        required = schema["required"]
        if not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
            found.add(where, ".required: must be an array of strings")
    if "additionalProperties" in schema and not isinstance(schema["additionalProperties"], bool):
        found.add(where, ".additionalProperties: must be a boolean")
    if "items" in schema:
        _check(schema["items"], (where, ".items"), depth + 1, found)
    if "enum" in schema:
        options = schema["enum"]
        if not (isinstance(options, list) and options and all(map(_is_primitive, options))):
            found.add(where, ".enum: must be a non-empty array of primitives")
    for key in _NON_NEGATIVE_INT:
        if key in schema and not (
            _is_finite(schema[key]) and _is_integral(schema[key]) and schema[key] >= 0
        ):
            found.add(where, f".{key}: must be a non-negative integer")
    for key in ("minimum", "maximum"):
        if key in schema and not _is_finite(schema[key]):
            found.add(where, f".{key}: must be a finite number")


def validate_value(schema: Mapping[str, Any], value: object, path: str = "$") -> list[str]:
    """Why ``value`` does not match a checked ``schema`` (empty when it does).

    A type mismatch reports only itself; otherwise every problem is reported, in document
    order, up to ``MAX_ERRORS`` (then one line says the rest is not listed). The runtime
    passes ``path="input"`` / ``"output"``.

    The schema comes from an untrusted manifest (up to 2 MiB) and the value from an untrusted
    caller or tool (up to 4 MiB), so no step may cost the product of their sizes: a path is
    text only in a message (long property names are not copied into every item), an ``enum``
    is looked up in a set and listed in at most ``MAX_ENUM_TEXT`` characters, a repeated
    ``required`` name is checked once, and the walk stops at ``MAX_ERRORS`` messages.
    """
    walk = _Walk(path)
    # Work items: (schema, value, where) to validate, or a ready message (kept in order).
    stack: list[_Item] = [(schema, value, (None, path))]
    while stack:
        item = stack.pop()
        if isinstance(item, _Message):
            walk.report(item)
        else:
            later: list[_Item] = []
            _validate_node(*item, walk, later)
            stack.extend(reversed(later))
        if walk.full:
            break
    return walk.errors()


class _Message:
    """A problem found at ``where``: ``<path><text>``."""

    __slots__ = ("text", "where")

    def __init__(self, where: _Where, text: str) -> None:
        self.where = where
        self.text = text


class _Walk:
    """The messages of one validation and what it computed once per schema node."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.messages: list[str] = []
        self.full = False
        self._enums: dict[int, frozenset[tuple[str, object]]] = {}
        self._enum_texts: dict[int, str] = {}
        self._required: dict[int, tuple[str, ...]] = {}

    def report(self, message: _Message) -> None:
        if len(self.messages) == MAX_ERRORS:
            self.full = True
            return
        self.messages.append(_path_text(message.where) + message.text)

    def errors(self) -> list[str]:
        if self.full:
            return [
                *self.messages,
                f"{self.root}: more than {MAX_ERRORS} problems; the rest are not listed",
            ]
        return self.messages

    def in_enum(self, schema: Mapping[str, Any], value: object) -> bool:
        options = self._enums.get(id(schema))
        if options is None:
            keys = (_enum_key(option) for option in schema["enum"])
            options = self._enums[id(schema)] = frozenset(k for k in keys if k is not None)
        key = _enum_key(value)
        return key is not None and key in options

    def enum_text(self, schema: Mapping[str, Any]) -> str:
        text = self._enum_texts.get(id(schema))
        if text is None:
            text = self._enum_texts[id(schema)] = _options_text(schema["enum"])
        return text

    def required(self, schema: Mapping[str, Any]) -> tuple[str, ...]:
        names = self._required.get(id(schema))
        if names is None:
            names = self._required[id(schema)] = tuple(dict.fromkeys(schema.get("required", ())))
        return names


def _path_text(where: _Where) -> str:
    """The path of ``where`` (``input.a[0].b``); one longer than ``MAX_PATH_TEXT``
    characters keeps its start and its end around ``…``."""
    steps: list[str] = []
    node: _Where | None = where
    while node is not None:
        node, step = node
        steps.append(step)
    steps.reverse()
    if sum(map(len, steps)) <= MAX_PATH_TEXT:
        return "".join(steps)
    half = MAX_PATH_TEXT // 2
    head = tail = ""
    for step in steps:
        head += step[: half - len(head)]
        if len(head) == half:
            break
    for step in reversed(steps):
        tail = step[max(0, len(step) - (half - len(tail))) :] + tail
        if len(tail) == half:
            break
    return f"{head}…{tail}"


def _options_text(options: list[Any]) -> str:
    """``"a", "b", 1`` for a message; a list longer than ``MAX_ENUM_TEXT`` characters ends
    with how many options it leaves out."""
    shown: list[str] = []
    size = 0
    for option in options:
        literal = js_literal(option)
        size += len(literal) + 2
        if size > MAX_ENUM_TEXT and shown:
            return f"{', '.join(shown)}, … ({len(options) - len(shown)} more)"
        shown.append(literal if len(literal) <= MAX_ENUM_TEXT else literal[:MAX_ENUM_TEXT] + "…")
    return ", ".join(shown)


def _validate_node(
    schema: Mapping[str, Any], value: object, where: _Where, walk: _Walk, later: list[_Item]
) -> None:
    """Report the problems of ``value`` itself; child checks and child messages go to ``later``."""
    actual = _type_of(value)
    expected = schema.get("type")
    if expected is not None and not _type_matches(expected, actual, value):
        got = "non-integer number" if expected == "integer" and actual == "number" else actual
        walk.report(_Message(where, f": expected {expected}, got {got}"))
        return
    if "enum" in schema and not walk.in_enum(schema, value):
        walk.report(_Message(where, f": must be one of {walk.enum_text(schema)}"))
    if actual == "string":
        assert isinstance(value, str)
        length = utf16_len(value)
        if "minLength" in schema and length < schema["minLength"]:
            walk.report(
                _Message(where, f": must be at least {js_literal(schema['minLength'])} characters")
            )
        if "maxLength" in schema and length > schema["maxLength"]:
            walk.report(
                _Message(where, f": must be at most {js_literal(schema['maxLength'])} characters")
            )
    if actual == "number":
        assert isinstance(value, int | float)
        if "minimum" in schema and value < schema["minimum"]:
            walk.report(_Message(where, f": must be >= {js_literal(schema['minimum'])}"))
        if "maximum" in schema and value > schema["maximum"]:
            walk.report(_Message(where, f": must be <= {js_literal(schema['maximum'])}"))
    if actual == "array":
        assert isinstance(value, list)
        if "minItems" in schema and len(value) < schema["minItems"]:
            walk.report(
                _Message(where, f": must contain at least {js_literal(schema['minItems'])} items")
            )
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            walk.report(
                _Message(where, f": must contain at most {js_literal(schema['maxItems'])} items")
            )
        items = schema.get("items")
        if isinstance(items, Mapping):
            later.extend((items, item, (where, f"[{i}]")) for i, item in enumerate(value))
    if actual == "object":
        assert isinstance(value, dict)
        properties = schema.get("properties") or {}
        for key in walk.required(schema):
            if key not in value:
                walk.report(_Message((where, f".{key}"), ": is required"))
                if walk.full:
                    return
        for key, sub in value.items():
            if isinstance(properties.get(key), Mapping):
                later.append((properties[key], sub, (where, f".{key}")))
            elif schema.get("additionalProperties") is False:
                later.append(_Message((where, f".{key}"), ": unknown property"))


def _type_of(value: object) -> str:
    """The JSON type name; non-finite numbers and non-JSON values are "other"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "number"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "other"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "other"


def _type_matches(expected: object, actual: str, value: object) -> bool:
    if expected == "integer":
        return actual == "number" and _is_integral(value)
    return expected == actual


def _enum_key(value: object) -> tuple[str, object] | None:
    """What JavaScript ``===`` compares of a primitive: two primitives are strictly equal
    exactly when their keys are equal (``1`` and ``1.0`` are one number, ``true`` is not
    ``1``); None for what equals nothing (NaN, arrays, objects)."""
    if isinstance(value, bool):
        return ("boolean", value)
    if _is_number(value):
        return None if value != value else ("number", value)
    if value is None:
        return ("null", None)
    if isinstance(value, str):
        return ("string", value)
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_finite(value: object) -> bool:
    """A number JavaScript holds as a finite double: an integer literal beyond the largest
    double (``1`` and 400 zeros) is ``Infinity`` there (spec/json_text.py), and
    ``math.isfinite`` would raise OverflowError on it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _is_integral(value: object) -> bool:
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_primitive(value: object) -> bool:
    return value is None or isinstance(value, str | bool) or _is_number(value)
