"""The tool-schema subset (checkSchemaDefinition, validateValue) as the TypeScript Splice
applies it (tests/compat/schema.json)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from splice_build.spec.schema_subset import check_schema, validate_value
from testing.compat import load, params

VECTORS = load("schema")


def _schema(case: dict[str, Any]) -> Any:
    if "nested" in case:
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(case["nested"]):
            schema = {"type": "array", "items": schema}
        return schema
    return VECTORS["schemas"][case["schema"]] if "schema" in case else case["inline"]


def _expected(case: dict[str, Any]) -> list[str]:
    """TS's errors, with this implementation's documented wording where it differs."""
    errors = list(case["errors"])
    for index, text in case.get("here", {}).items():
        errors[int(index)] = text
    return errors


@pytest.mark.parametrize("case", params(VECTORS["check"], label="name"))
def test_check_schema(case: dict[str, Any]) -> None:
    errors = check_schema(_schema(case))
    if "errors" in case:
        assert errors == _expected(case)
    for pattern in case.get("errorsMatch", ()):
        assert re.search(pattern, "\n".join(errors)), pattern
    assert errors or not case.get("errorsMatch")


@pytest.mark.parametrize("case", params(VECTORS["validate"], label="name"))
def test_validate_value(case: dict[str, Any]) -> None:
    schema = _schema(case)
    assert check_schema(schema) == []
    assert validate_value(schema, case["value"], case.get("path", "$")) == _expected(case)
