"""The metadata check (install/checks.py ManifestMatchesMetadata) writes both manifests in
canonical JSON without copying their schemas first.

It wrote ``canonical_json(manifest.to_json())`` of the registry's and of the artifact's
manifest, and each ``to_json`` deep-copied every tool schema only for it to be written out:
three copies of each schema per check (the registry's validation makes one). On the deepest
manifest a registry accepts that was about half of the check's CPU. The comparison itself is
unchanged: canonical JSON, which tells ``true`` from ``1`` where Python's ``==`` does not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from splice_build.errors import ErrorCode, InstallError
from splice_build.install.checks import Candidate, Expected, ManifestMatchesMetadata
from splice_build.spec import json_text
from splice_build.spec.manifest import Manifest
from testing.packages import minimal_manifest


def _candidate(artifact: dict[str, Any], registry: dict[str, Any]) -> Candidate:
    expected = Expected("@acme/greeter", "1.0.0", "sha256-unused", manifest=registry)
    return Candidate(b"", expected, manifest=Manifest.from_json(json.dumps(artifact)))


def _with_default(value: object) -> dict[str, Any]:
    manifest = minimal_manifest()
    manifest["tools"][0]["input"]["properties"]["flag"] = {"default": value}
    manifest["tools"][0]["output"] = {"type": "object"}
    return manifest


def test_the_metadata_check_copies_each_schema_once(monkeypatch: pytest.MonkeyPatch) -> None:
    copied = []
    real_copy = json_text.copy

    def counting_copy(value: Any, *rest: Any) -> Any:
        copied.append(value)
        return real_copy(value, *rest)

    candidate = _candidate(_with_default(True), _with_default(True))
    monkeypatch.setattr(json_text, "copy", counting_copy)
    assert ManifestMatchesMetadata().check(candidate) == "manifest equals registry metadata"
    registry_tool = candidate.expected.manifest["tools"][0]  # type: ignore[index]
    assert copied == [registry_tool["input"], registry_tool["output"]]  # validation's, only

    differing = _candidate(_with_default(True), _with_default(1))  # True == 1 in Python
    with pytest.raises(InstallError) as refusal:
        ManifestMatchesMetadata().check(differing)
    assert refusal.value.code is ErrorCode.INVALID_PACKAGE
    assert refusal.value.message == "artifact manifest differs from the registry metadata"
