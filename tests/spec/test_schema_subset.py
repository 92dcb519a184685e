from __future__ import annotations

import math
from typing import Any

import pytest

from splice_build.spec.schema_subset import MAX_DEPTH, check_schema, validate_value
from testing.manifests import nested_schema

EXAMPLE: dict[str, Any] = {
    "type": "object",
    "description": "Example input",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 5, "default": "dim"},
        "count": {"type": "integer", "minimum": 0, "maximum": 10},
        "ratio": {"type": "number"},
        "mode": {"enum": ["a", "b", 1, True, None]},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 0, "maxItems": 2},
        "flag": {"type": "boolean"},
        "nothing": {"type": "null"},
        "anything": {},
    },
    "required": ["name"],
    "additionalProperties": False,
}


# --- check_schema --------------------------------------------------------------------------


def test_example_schema_is_valid() -> None:
    assert check_schema(EXAMPLE) == []
    assert check_schema({}) == []


@pytest.mark.parametrize(
    ("schema", "errors"),
    [
        ("object", ["schema: must be an object"]),
        ([], ["schema: must be an object"]),
        (None, ["schema: must be an object"]),
        ({"type": "object", "pattern": "x"}, ['schema: unsupported keyword "pattern"']),
        ({"format": "email"}, ['schema: unsupported keyword "format"']),
        ({"oneOf": []}, ['schema: unsupported keyword "oneOf"']),
        ({"$ref": "#/x"}, ['schema: unsupported keyword "$ref"']),
        ({"x-note": 1}, ['schema: unsupported keyword "x-note"']),
        (
            {"type": "date"},
            ["schema.type: must be one of object, string, number, integer, boolean, array, null"],
        ),
        (
            {"type": ["string", "null"]},
            ["schema.type: must be one of object, string, number, integer, boolean, array, null"],
        ),
        ({"description": 1}, ["schema.description: must be a string"]),
        ({"properties": []}, ["schema.properties: must be an object"]),
        ({"properties": {"a": "string"}}, ["schema.properties.a: must be an object"]),
        ({"required": "a"}, ["schema.required: must be an array of strings"]),
        ({"required": [1]}, ["schema.required: must be an array of strings"]),
        ({"additionalProperties": {}}, ["schema.additionalProperties: must be a boolean"]),
        ({"items": []}, ["schema.items: must be an object"]),
        (
            {"items": {"type": "tuple"}},
            [
                "schema.items.type: must be one of object, string, number, integer, boolean, array, null"
            ],
        ),
        ({"enum": []}, ["schema.enum: must be a non-empty array of primitives"]),
        ({"enum": "a"}, ["schema.enum: must be a non-empty array of primitives"]),
        ({"enum": [[1]]}, ["schema.enum: must be a non-empty array of primitives"]),
        ({"enum": [{"a": 1}]}, ["schema.enum: must be a non-empty array of primitives"]),
        ({"minLength": -1}, ["schema.minLength: must be a non-negative integer"]),
        ({"maxLength": 1.5}, ["schema.maxLength: must be a non-negative integer"]),
        ({"minItems": True}, ["schema.minItems: must be a non-negative integer"]),
        ({"maxItems": "2"}, ["schema.maxItems: must be a non-negative integer"]),
        ({"minimum": "0"}, ["schema.minimum: must be a finite number"]),
        ({"maximum": math.inf}, ["schema.maximum: must be a finite number"]),
        ({"minimum": False}, ["schema.minimum: must be a finite number"]),
    ],
)
def test_check_schema_rejects(schema: object, errors: list[str]) -> None:
    assert check_schema(schema) == errors


def test_check_schema_accepts_edge_values() -> None:
    assert check_schema({"minLength": 0, "maxLength": 3.0, "minimum": -1.5, "maximum": 0}) == []
    assert check_schema({"enum": ["a", 1, 1.5, True, None]}) == []


def test_check_schema_reports_everything_with_paths() -> None:
    schema = {
        "type": "object",
        "pattern": "x",
        "properties": {"a": {"type": "string", "format": "uri"}, "b": {"items": {"anyOf": []}}},
        "required": "a",
    }
    assert check_schema(schema, "tools[0].input") == [
        'tools[0].input: unsupported keyword "pattern"',
        'tools[0].input.properties.a: unsupported keyword "format"',
        'tools[0].input.properties.b.items: unsupported keyword "anyOf"',
        "tools[0].input.required: must be an array of strings",
    ]


@pytest.mark.parametrize("via", ["items", "properties"])
def test_nesting_depth_limit(via: str) -> None:
    assert MAX_DEPTH == 16
    assert check_schema(nested_schema(16, via=via)) == []
    errors = check_schema(nested_schema(17, via=via))
    assert len(errors) == 1
    assert errors[0].endswith(": schema nesting is too deep (max 16)")


def test_very_deep_schema_definition_is_refused_without_recursion_error() -> None:
    errors = check_schema(nested_schema(5000))
    assert len(errors) == 1 and "too deep" in errors[0]


# --- validate_value ------------------------------------------------------------------------


def test_valid_value() -> None:
    value = {
        "name": "dim",
        "count": 2,
        "ratio": 0.5,
        "mode": "a",
        "tags": ["x"],
        "flag": False,
        "nothing": None,
        "anything": [1, {"a": None}],
    }
    assert validate_value(EXAMPLE, value) == []


def test_every_problem_reported_in_document_order() -> None:
    value = {"count": 1.5, "mode": "c", "tags": ["x", 1, "z"], "extra": 1, "ratio": "1"}
    assert validate_value(EXAMPLE, value) == [
        "$.name: is required",
        "$.count: expected integer, got non-integer number",
        '$.mode: must be one of "a", "b", 1, true, null',
        "$.tags: must contain at most 2 items",
        "$.tags[1]: expected string, got number",
        "$.extra: unknown property",
        "$.ratio: expected number, got string",
    ]


@pytest.mark.parametrize(
    ("schema", "value", "errors"),
    [
        ({"type": "integer"}, 3, []),
        ({"type": "integer"}, 3.0, []),
        ({"type": "integer"}, 3.5, ["$: expected integer, got non-integer number"]),
        ({"type": "integer"}, True, ["$: expected integer, got boolean"]),
        ({"type": "number"}, True, ["$: expected number, got boolean"]),
        ({"type": "number"}, math.nan, ["$: expected number, got other"]),
        ({"type": "number"}, math.inf, ["$: expected number, got other"]),
        ({"type": "string"}, 5, ["$: expected string, got number"]),
        ({"type": "object"}, [], ["$: expected object, got array"]),
        ({"type": "array"}, {}, ["$: expected array, got object"]),
        ({"type": "null"}, 0, ["$: expected null, got number"]),
        ({"type": "boolean"}, None, ["$: expected boolean, got null"]),
        ({"type": "string"}, object(), ["$: expected string, got other"]),
        # a type mismatch reports only itself
        ({"type": "string", "enum": ["a"], "minLength": 3}, 1, ["$: expected string, got number"]),
        # enum is JavaScript ===
        ({"enum": [1]}, True, ["$: must be one of 1"]),
        ({"enum": [True]}, 1, ["$: must be one of true"]),
        ({"enum": [1]}, 1.0, []),
        ({"enum": [None]}, None, []),
        ({"enum": [0]}, None, ["$: must be one of 0"]),
        ({"enum": ["a"]}, ["a"], ['$: must be one of "a"']),
        # string lengths count UTF-16 code units
        ({"maxLength": 2}, "😀", []),
        ({"maxLength": 1}, "😀", ["$: must be at most 1 characters"]),
        ({"minLength": 3}, "😀", ["$: must be at least 3 characters"]),
        ({"minimum": 0.5, "maximum": 2}, 0, ["$: must be >= 0.5"]),
        ({"minimum": 0.5, "maximum": 2.0}, 3, ["$: must be <= 2"]),
        ({"minimum": 1}, True, []),  # booleans are not numbers
        ({"minItems": 2}, [1], ["$: must contain at least 2 items"]),
        # no type: any JSON value; constraints apply by the value's own type
        ({}, {"deep": [1, 2]}, []),
        ({"properties": {"a": {"type": "string"}}}, {"a": 1}, ["$.a: expected string, got number"]),
        ({"required": ["a"]}, "not an object", []),
        ({"type": "object", "additionalProperties": True}, {"x": 1}, []),
        ({"type": "object"}, {"x": 1}, []),
    ],
)
def test_validate_value_table(schema: dict[str, Any], value: object, errors: list[str]) -> None:
    assert validate_value(schema, value) == errors


def test_root_path_is_configurable() -> None:
    assert validate_value(EXAMPLE, {}, "input") == ["input.name: is required"]


def test_deep_values_do_not_recurse() -> None:
    deep: Any = "leaf"
    for _ in range(100_000):
        deep = [deep]
    assert validate_value({"type": "array"}, deep) == []
    schema: Any = {"type": "string"}
    for _ in range(5000):
        schema = {"type": "array", "items": schema}
    errors = validate_value(schema, deep)
    assert errors == ["$" + "[0]" * 5000 + ": expected string, got array"]
