"""Permission normalization, descriptions, grants and host patterns as the TypeScript Splice
applies them (tests/compat/permissions.json)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from splice_build.errors import SpecError
from splice_build.spec.manifest import Manifest
from splice_build.spec.permissions import Permissions, host_allowed, ungranted
from testing.compat import load, params
from testing.packages import minimal_manifest

VECTORS = load("permissions")


@pytest.mark.parametrize("case", params(VECTORS["normalize"], label="name"))
def test_normalize(case: dict[str, Any]) -> None:
    errors: list[str] = []
    permissions = Permissions.parse_into(case["input"], errors)
    if "normalized" in case or "normalizedKeys" in case:
        assert errors == []
    if "normalized" in case:
        assert permissions.to_json() == case["normalized"]
    if "normalizedKeys" in case:
        assert list(permissions.to_json()) == case["normalizedKeys"]
    if "errorCount" in case:
        assert len(errors) == case["errorCount"], errors
    if "firstErrorMatch" in case:
        assert re.search(case["firstErrorMatch"], errors[0])
    for pattern in case.get("errorsMatch", ()):
        assert re.search(pattern, "\n".join(errors)), pattern
    if "manifestError" in case.get("here", {}):  # a documented divergence (docs/compatibility.md)
        with pytest.raises(SpecError) as refused:
            Manifest.from_dict(minimal_manifest(permissions=case["input"]))
        assert re.search(case["here"]["manifestError"], "\n".join(refused.value.details))


@pytest.mark.parametrize("case", params(VECTORS["describe"]))
def test_describe(case: dict[str, Any]) -> None:
    lines = Permissions.from_json(case["input"]).describe()
    if "lines" in case:
        assert lines == case["lines"]
    for line, pattern in zip(lines, case.get("linesMatch", ()), strict=False):
        assert re.search(pattern, line), (pattern, line)
    assert len(lines) >= len(case.get("linesMatch", ()))


@pytest.mark.parametrize("case", params(VECTORS["isEmpty"]))
def test_is_empty(case: dict[str, Any]) -> None:
    assert Permissions.from_json(case["input"]).is_empty is case["expected"]


@pytest.mark.parametrize("case", params(VECTORS["ungranted"], label="name"))
def test_ungranted(case: dict[str, Any]) -> None:
    requested = Permissions.from_json(case["requested"])
    granted = Permissions.from_json(case["granted"])
    assert ungranted(requested, granted).to_json() == case["expected"]


@pytest.mark.parametrize("case", params(VECTORS["hostAllowed"]))
def test_host_allowed(case: list[Any]) -> None:
    host, patterns, expected = case
    assert host_allowed(host, patterns) is expected
