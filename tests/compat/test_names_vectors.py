"""Package ids, package references and tool references as the TypeScript Splice parses them
(tests/compat/names.json)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from splice_build.errors import SpecError
from splice_build.spec.names import PackageRef, ToolRef
from testing.compat import load, params

VECTORS = load("names")


def _package_ref(text: str) -> dict[str, str]:
    ref = PackageRef.parse(text)
    package = ref.package
    return {
        "namespace": package.namespace,
        "name": package.name,
        "id": package.id,
        "range": str(ref.range),
    }


def _tool_ref(text: str) -> dict[str, str]:
    """TS's shape: ``namespace`` only when the reference was fully qualified."""
    ref = ToolRef.parse(text)
    package_id = ref.package_id
    if package_id is None:
        return {"name": ref.package, "tool": ref.tool}
    return {"namespace": package_id.namespace, "name": package_id.name, "tool": ref.tool}


def _check(parse: Any, case: dict[str, Any]) -> None:
    if "expected" in case:
        assert parse(case["input"]) == case["expected"]
        return
    with pytest.raises(SpecError) as caught:
        parse(case["input"])
    assert caught.value.code == case["error"]
    if "message" in case:
        assert re.search(case["message"], caught.value.message)


@pytest.mark.parametrize("case", params(VECTORS["packageRef"], label="input"))
def test_package_ref(case: dict[str, Any]) -> None:
    _check(_package_ref, case)


@pytest.mark.parametrize("case", params(VECTORS["toolRef"], label="input"))
def test_tool_ref(case: dict[str, Any]) -> None:
    _check(_tool_ref, case)
