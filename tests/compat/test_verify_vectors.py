"""The artifact verification pipeline as the TypeScript Splice's trust tests check it
(tests/compat/verify.json): the install policy's checks in order, on real archive bytes, with
real Ed25519 signatures."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from splice_build.install.checks import Candidate, Expected, artifact_policy
from splice_build.install.signature_check import SignatureValid
from splice_build.spec.archive import pack_archive
from splice_build.spec.digests import integrity_of
from splice_build.spec.manifest import Manifest
from splice_build.spec.signing import encode_b64, key_id, signing_payload
from testing.compat import load, params


def _here(vectors: dict[str, Any], manifest: dict[str, Any]) -> tuple[dict, dict]:
    """The vectors under the namespace ``here`` names (its ``why`` says why they move)."""
    namespace = vectors["here"]["namespace"]
    moved = json.loads(json.dumps(vectors).replace("@splice/", f"@{namespace}/"))
    return moved, {**manifest, "namespace": namespace}


VECTORS, MANIFEST = _here(load("verify"), load("manifest")["bases"]["trust"])
PRIVATE = Ed25519PrivateKey.generate()
PUBLIC = PRIVATE.public_key().public_bytes(
    serialization.Encoding.Raw, serialization.PublicFormat.Raw
)
KEY_ID = key_id(PUBLIC)


def _artifact() -> bytes:
    files = {path: text.encode() for path, text in VECTORS["files"].items()}
    files["manifest.json"] = json.dumps(MANIFEST).encode()
    return pack_archive(files)


def _signature(kind: str, integrity: str) -> dict[str, Any]:
    package_id, version = VECTORS["id"], VECTORS["version"]
    signed = {
        "otherIntegrity": (package_id, version, "sha256-" + "0" * 64),
        "otherVersion": (package_id, "1.0.1", integrity),
    }.get(kind, (package_id, version, integrity))
    entry = {
        "keyId": "ed25519:0000000000000000" if kind == "wrongKeyId" else KEY_ID,
        "publicKey": encode_b64(PUBLIC),
        "signature": encode_b64(PRIVATE.sign(signing_payload(*signed))),
        "signedAt": "2026-10-03T00:00:00Z",
        "revokedAt": "2026-10-04T00:00:00Z" if kind == "revoked" else None,
    }
    return entry


def _registry_manifest(case: dict[str, Any]) -> dict[str, Any] | None:
    changes = case.get("registryManifest")
    if changes is None:
        return None
    raw = {**MANIFEST, **(changes if isinstance(changes, dict) else {})}
    return Manifest.from_dict(raw).to_json()


@pytest.mark.parametrize("case", params(VECTORS["cases"], label="name"))
def test_verification(case: dict[str, Any]) -> None:
    data = _artifact()
    integrity = case.get("integrity", integrity_of(data))
    size = len(data) + case.get("sizeDelta", 0) if case.get("size") or "sizeDelta" in case else None
    if "flipFromEnd" in case:
        flipped = bytearray(data)
        flipped[-case["flipFromEnd"]] ^= 0xFF
        data = bytes(flipped)
    expected = Expected(
        package_id=case.get("id", VECTORS["id"]),
        version=case.get("version", VECTORS["version"]),
        integrity=integrity,
        size=size,
        manifest=_registry_manifest(case),
        require_signed=case.get("requireSigned", False),
    )
    signatures = [_signature(case["signature"], integrity)] if "signature" in case else []
    signature = SignatureValid(signatures)
    candidate = Candidate(data, expected)
    outcome = artifact_policy(signature).report(candidate)

    assert outcome.verified is case["verified"], [r.to_json() for r in outcome.results]
    statuses = [(r.id, r.status) for r in outcome.results]
    if "checks" in case:
        assert statuses == [tuple(c) for c in case["checks"]]
    if "statusPrefix" in case:
        assert [s for _, s in statuses][: len(case["statusPrefix"])] == case["statusPrefix"]
    for check, status in case.get("status", {}).items():
        assert dict(statuses)[check] == status, check
    messages = {r.id: r.message for r in outcome.results}
    for check, pattern in {**case.get("messages", {}), **case.get("here", {})}.items():
        assert re.search(pattern, messages[check]), (check, messages[check])
    if "fileCount" in case:
        assert candidate.files is not None and len(candidate.files) == case["fileCount"]
    if not case["verified"] and statuses[0][1] == "failed":
        assert candidate.files is None, "nothing is decoded after a failed sha256 check"
    if "signedBy" in case:
        assert signature.signed_by == (KEY_ID if case["signedBy"] else None)
