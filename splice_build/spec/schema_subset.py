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
from typing import Any

from splice_build.spec.paths import utf16_len
from splice_build.spec.validation import js_literal

MAX_DEPTH = 16
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


def check_schema(schema: object, path: str = "schema") -> list[str]:
    """Why ``schema`` is not a valid Splice schema (empty when it is)."""
    return _check(schema, path, 0)


def _check(schema: object, path: str, depth: int) -> list[str]:
    if depth > MAX_DEPTH:
        return [f"{path}: schema nesting is too deep (max {MAX_DEPTH})"]
    if not isinstance(schema, dict):
        return [f"{path}: must be an object"]
    errors = [f'{path}: unsupported keyword "{key}"' for key in schema if key not in KEYWORDS]
    if "type" in schema and not (isinstance(schema["type"], str) and schema["type"] in TYPES):
        errors.append(f"{path}.type: must be one of {', '.join(TYPES)}")
    if "description" in schema and not isinstance(schema["description"], str):
        errors.append(f"{path}.description: must be a string")
    if "properties" in schema:
        properties = schema["properties"]
        if not isinstance(properties, dict):
            errors.append(f"{path}.properties: must be an object")
        else:
            for name, sub in properties.items():
                errors.extend(_check(sub, f"{path}.properties.{name}", depth + 1))
    if "required" in schema:
        required = schema["required"]
        if not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
            errors.append(f"{path}.required: must be an array of strings")
    if "additionalProperties" in schema and not isinstance(schema["additionalProperties"], bool):
        errors.append(f"{path}.additionalProperties: must be a boolean")
    if "items" in schema:
        errors.extend(_check(schema["items"], f"{path}.items", depth + 1))
    if "enum" in schema:
        options = schema["enum"]
        if not (isinstance(options, list) and options and all(map(_is_primitive, options))):
            errors.append(f"{path}.enum: must be a non-empty array of primitives")
    for key in _NON_NEGATIVE_INT:
        if key in schema and not (
            _is_number(schema[key]) and _is_integral(schema[key]) and schema[key] >= 0
        ):
            errors.append(f"{path}.{key}: must be a non-negative integer")
    for key in ("minimum", "maximum"):
        if key in schema and not (_is_number(schema[key]) and math.isfinite(schema[key])):
            errors.append(f"{path}.{key}: must be a finite number")
    return errors


def validate_value(schema: Mapping[str, Any], value: object, path: str = "$") -> list[str]:
    """Why ``value`` does not match a checked ``schema`` (empty when it does).

    A type mismatch reports only itself; otherwise every problem is reported, in document
    order. The runtime passes ``path="input"`` / ``"output"``.
    """
    errors: list[str] = []
    # Work items: (schema, value, path) to validate, or a ready message (kept in order).
    stack: list[tuple[Mapping[str, Any], object, str] | str] = [(schema, value, path)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            errors.append(item)
            continue
        node, current, where = item
        later: list[tuple[Mapping[str, Any], object, str] | str] = []
        errors.extend(_validate_node(node, current, where, later))
        stack.extend(reversed(later))
    return errors


def _validate_node(
    schema: Mapping[str, Any],
    value: object,
    path: str,
    later: list[tuple[Mapping[str, Any], object, str] | str],
) -> list[str]:
    """Messages about ``value`` itself; child checks and child messages go to ``later``."""
    actual = _type_of(value)
    expected = schema.get("type")
    if expected is not None and not _type_matches(expected, actual, value):
        got = "non-integer number" if expected == "integer" and actual == "number" else actual
        return [f"{path}: expected {expected}, got {got}"]
    errors = []
    if "enum" in schema and not any(_strict_equal(option, value) for option in schema["enum"]):
        options = ", ".join(js_literal(option) for option in schema["enum"])
        errors.append(f"{path}: must be one of {options}")
    if actual == "string":
        assert isinstance(value, str)
        length = utf16_len(value)
        if "minLength" in schema and length < schema["minLength"]:
            errors.append(f"{path}: must be at least {js_literal(schema['minLength'])} characters")
        if "maxLength" in schema and length > schema["maxLength"]:
            errors.append(f"{path}: must be at most {js_literal(schema['maxLength'])} characters")
    if actual == "number":
        assert isinstance(value, int | float)
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: must be >= {js_literal(schema['minimum'])}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: must be <= {js_literal(schema['maximum'])}")
    if actual == "array":
        assert isinstance(value, list)
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: must contain at least {js_literal(schema['minItems'])} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: must contain at most {js_literal(schema['maxItems'])} items")
        items = schema.get("items")
        if isinstance(items, Mapping):
            later.extend((items, item, f"{path}[{i}]") for i, item in enumerate(value))
    if actual == "object":
        assert isinstance(value, dict)
        properties = schema.get("properties") or {}
        errors.extend(
            f"{path}.{key}: is required" for key in schema.get("required", ()) if key not in value
        )
        for key, sub in value.items():
            if isinstance(properties.get(key), Mapping):
                later.append((properties[key], sub, f"{path}.{key}"))
            elif schema.get("additionalProperties") is False:
                later.append(f"{path}.{key}: unknown property")
    return errors


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


def _strict_equal(option: object, value: object) -> bool:
    """JavaScript ``===`` between an enum option (a primitive) and a value."""
    if isinstance(option, bool) or isinstance(value, bool):
        return isinstance(option, bool) and isinstance(value, bool) and option is value
    if _is_number(option) and _is_number(value):
        return option == value
    if option is None or value is None:
        return option is value
    return isinstance(option, str) and isinstance(value, str) and option == value


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integral(value: object) -> bool:
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_primitive(value: object) -> bool:
    return value is None or isinstance(value, str | bool) or _is_number(value)
