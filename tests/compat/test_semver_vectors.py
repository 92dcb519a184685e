"""Semantic versions and ranges as the TypeScript Splice compares and matches them
(tests/compat/semver.json)."""

from __future__ import annotations

from typing import Any

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.semver import (
    Range,
    Version,
    is_valid_range,
    is_valid_version,
    latest_version,
    max_satisfying,
)
from testing.compat import load, params

VECTORS = load("semver")


@pytest.mark.parametrize("case", params(VECTORS["compare"]))
def test_compare(case: list[Any]) -> None:
    a, b, expected = case
    va, vb = Version.parse(a), Version.parse(b)
    assert ((va > vb) - (va < vb), va == vb) == (expected, expected == 0)


@pytest.mark.parametrize("case", params(VECTORS["satisfies"]))
def test_satisfies(case: list[Any]) -> None:
    version, rng, expected = case
    # TS satisfies() answers false for an invalid version or range instead of throwing.
    valid = is_valid_version(version) and is_valid_range(rng)
    assert (valid and Range.parse(rng).satisfies(Version.parse(version))) is expected


@pytest.mark.parametrize("case", params(VECTORS["maxSatisfying"]))
def test_max_satisfying(case: dict[str, Any]) -> None:
    best = max_satisfying(case["versions"], Range.parse(case["range"]))
    assert (None if best is None else str(best)) == case["expected"]


@pytest.mark.parametrize("case", params(VECTORS["latestVersion"]))
def test_latest_version(case: dict[str, Any]) -> None:
    latest = latest_version(case["versions"])
    assert (None if latest is None else str(latest)) == case["expected"]


@pytest.mark.parametrize("text", params(VECTORS["validVersions"]))
def test_valid_version(text: str) -> None:
    assert is_valid_version(text)
    assert str(Version.parse(text)) == text


@pytest.mark.parametrize("text", params(VECTORS["invalidVersions"]))
def test_invalid_version(text: str) -> None:
    assert not is_valid_version(text)
    with pytest.raises(SpecError) as caught:
        Version.parse(text)
    assert caught.value.code is ErrorCode.INVALID_VERSION


@pytest.mark.parametrize("text", params(VECTORS["validRanges"]))
def test_valid_range(text: str) -> None:
    assert is_valid_range(text)
    assert str(Range.parse(text)) == text


@pytest.mark.parametrize("text", params(VECTORS["invalidRanges"]))
def test_invalid_range(text: str) -> None:
    assert not is_valid_range(text)
    with pytest.raises(SpecError) as caught:
        Range.parse(text)
    assert caught.value.code is ErrorCode.INVALID_RANGE
