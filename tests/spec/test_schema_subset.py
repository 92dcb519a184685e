from __future__ import annotations

import math
from typing import Any

import pytest

from splice_build.spec.schema_subset import MAX_DEPTH, MAX_ERRORS, check_schema, validate_value
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
    # (a checked schema has at most 16 levels; a longer path is cut in the message)
    path = "$" + "[0]" * 5000
    assert errors == [f"{path[:500]}…{path[-500:]}: expected string, got array"]


# --- a hostile schema meets a hostile value ----------------------------------------------
# The schema comes from an untrusted manifest (2 MiB), the value from a caller (4 MiB): no
# step may cost the product of their sizes (an enum of 500,000 options against 100 items
# took 44 s and 487 MB in `splice run`, each message listing every option).


def test_messages_stop_at_max_errors_and_list_a_bounded_enum() -> None:
    schema = {"type": "array", "items": {"enum": [0] * 5000}}
    errors = validate_value(schema, [1] * 300, "input")
    assert len(errors) == MAX_ERRORS + 1 == 101
    options = "0, " * 333 + "… (4667 more)"  # 333 options of 3 characters fill 1,000
    assert errors[0] == f"input[0]: must be one of {options}"
    assert errors[99] == f"input[99]: must be one of {options}"
    assert errors[100] == "input: more than 100 problems; the rest are not listed"
    assert validate_value(schema, [0] * 300) == []


def test_a_repeated_required_name_is_one_problem() -> None:
    schema = {"type": "object", "required": ["a", "b"] * 1000 + ["c"]}
    assert validate_value(schema, {"b": 1}) == ["$.a: is required", "$.c: is required"]


def test_a_long_property_name_is_not_copied_into_each_item() -> None:
    import tracemalloc

    name = "k" * 100_000
    schema = {"type": "object", "properties": {name: {"items": {"type": "number"}}}}
    tracemalloc.start()
    try:
        assert validate_value(schema, {name: [0] * 500}) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # was 500 paths of 100 KB each
    [error] = validate_value(schema, {name: [0, "x"]}, "input")
    assert error == f"input.{name[:494]}…{name[-497:]}[1]: expected number, got string"
