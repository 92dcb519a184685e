"""Manifest validation, normalization, tool descriptors and package file rules as the
TypeScript Splice applies them (tests/compat/manifest.json)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from splice_build.errors import SpecError
from splice_build.spec.manifest import Manifest
from splice_build.spec.package import validate_package_files
from splice_build.spec.tools import describe_tools
from testing.compat import deepen, load, params

VECTORS = load("manifest")
BASES = VECTORS["bases"]


def _manifest(case: dict[str, Any]) -> dict[str, Any]:
    value = copy.deepcopy(BASES[case["base"]])
    value.update(copy.deepcopy(case.get("merge", {})))
    for key in case.get("drop", ()):
        del value[key]
    if "deepen" in case:
        deepen(value, case["deepen"]["path"], case["deepen"]["depth"])
    return value


def _outcome(parse: Any) -> tuple[Manifest | None, list[str]]:
    try:
        return parse(), []
    except SpecError as exc:
        return None, list(exc.details)


def _check(case: dict[str, Any], manifest: Manifest | None, errors: list[str]) -> None:
    assert (manifest is not None) is case["ok"], errors
    text = "\n".join(errors)
    if "errors" in case:
        assert errors == case["errors"]
    for fragment in case.get("errorsInclude", ()):
        assert fragment in text, fragment
    for pattern in case.get("errorsMatch", ()):
        assert re.search(pattern, text), pattern
    if "firstErrorMatch" in case:
        assert re.search(case["firstErrorMatch"], errors[0])
    if manifest is None:
        return
    normalized = manifest.to_json()
    for key, value in case.get("normalizedIncludes", {}).items():
        assert normalized[key] == value, key
    if "normalizedKeys" in case:
        assert list(normalized) == case["normalizedKeys"]


@pytest.mark.parametrize("case", params(VECTORS["validate"], label="name"))
def test_validate(case: dict[str, Any]) -> None:
    raw = _manifest(case)
    _check(case, *_outcome(lambda: Manifest.from_dict(raw)))


@pytest.mark.parametrize("case", params(VECTORS["text"], label="name"))
def test_parse_text(case: dict[str, Any]) -> None:
    if "raw" in case:
        text = case["raw"]
    elif "rawDeep" in case:
        text = "[" * case["rawDeep"] + "]" * case["rawDeep"]
    else:
        text = case["prefix"] + json.dumps(_manifest(case))
    _check(case, *_outcome(lambda: Manifest.from_json(text)))


@pytest.mark.parametrize("case", params(VECTORS["describeTools"], label="base"))
def test_describe_tools(case: dict[str, Any]) -> None:
    descriptors = describe_tools(Manifest.from_dict(BASES[case["base"]]))
    if "expected" in case:
        assert descriptors == case["expected"]
    if case.get("keyOrder"):
        assert [list(d) for d in descriptors] == [list(d) for d in case["expected"]]
    for key, value in case.get("expectedFields", {}).items():
        assert descriptors[0][key] == value, key


def _content(spec: dict[str, Any]) -> bytes:
    if "text" in spec:
        return spec["text"].encode("utf-8")
    if "hex" in spec:
        return bytes.fromhex(spec["hex"])
    return (spec["repeat"] * spec["count"]).encode("utf-8")


def _bundle(case: dict[str, Any]) -> dict[str, bytes]:
    bundle = VECTORS["bundleFiles"]
    manifest = BASES[case.get("manifest", "trust")]
    entry = manifest["tools"][0]["entry"]
    files = {
        "manifest.json": json.dumps(manifest).encode("utf-8"),
        "SKILL.md": bundle["skill"].encode("utf-8"),
        entry: bundle["entry"].encode("utf-8"),
    }
    for path, spec in {**case.get("replace", {}), **case.get("add", {})}.items():
        files[path] = _content(spec)
    if "only" in case:
        files = {path: data for path, data in files.items() if path in case["only"]}
    return files


@pytest.mark.parametrize("case", params(VECTORS["bundleFiles"]["cases"], label="name"))
def test_bundle_files(case: dict[str, Any]) -> None:
    files = _bundle(case)
    _check(case, *_outcome(lambda: validate_package_files(files)))
