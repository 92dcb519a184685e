"""(5) the signature check inside the real install policy, and signer pinning."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, InstallError
from splice_build.install.checks import (
    AllOf,
    Candidate,
    Expected,
    ManifestMatchesMetadata,
    PackageIsValid,
    Sha256Matches,
    SizeMatches,
)
from splice_build.install.signature_check import SignatureValid, signer_pinning
from splice_build.spec.archive import pack_archive
from splice_build.spec.digests import integrity_of
from testing.packages import HELLO_TOOL, minimal_manifest
from testing.signing import new_key, signature_entry, with_field

PKG = "@acme/greeter"


@pytest.fixture(scope="module")
def data() -> bytes:
    return pack_archive(
        {
            "manifest.json": json.dumps(minimal_manifest()).encode(),
            "SKILL.md": b"# Greeter\n",
            "tools/hello.js": HELLO_TOOL.encode(),
        }
    )


def run(
    data: bytes,
    signatures,
    *,
    require: bool = False,
    trusted: str | None = None,
    integrity: str | None = None,
):
    digest = integrity or integrity_of(data)
    expected = Expected(PKG, "1.0.0", digest, len(data), minimal_manifest(), require_signed=require)
    check = SignatureValid(signatures, trusted_signer=trusted)
    policy = AllOf(
        [Sha256Matches(), SizeMatches(), PackageIsValid(), ManifestMatchesMetadata(), check]
    )
    return policy.report(Candidate(data, expected)), check


def test_a_valid_signature_passes_and_names_the_signer(data: bytes, tmp_path: Path) -> None:
    key = new_key(tmp_path)
    report, check = run(data, [signature_entry(key, PKG, "1.0.0", integrity_of(data))])
    assert report.verified
    assert report.results[-1].to_json() == {
        "id": "signature",
        "status": "passed",
        "message": f"verified: signed by {key.key_id}",
    }
    assert check.signed_by == key.key_id


def test_unsigned_is_an_honest_skip(data: bytes) -> None:
    report, check = run(data, [])
    assert report.verified and check.signed_by is None
    assert report.results[-1].status == "skipped"
    assert report.results[-1].message.startswith("unsigned:")


def test_unsigned_under_require_signed_fails(data: bytes) -> None:
    report, _ = run(data, [], require=True)
    with pytest.raises(InstallError) as info:
        report.raise_for_failure()
    assert info.value.code is ErrorCode.SIGNATURE_REQUIRED


def test_tampered_signature_metadata_fails_closed(data: bytes, tmp_path: Path) -> None:
    entry = signature_entry(new_key(tmp_path), PKG, "1.0.0", integrity_of(data))
    raw = bytearray(base64.b64decode(entry["signature"]))
    raw[10] ^= 0x01
    flipped = base64.b64encode(bytes(raw)).decode()
    for tampered in (
        with_field(entry, signature=flipped),
        with_field(entry, publicKey=new_key(tmp_path, "other").public_key),
        with_field(entry, keyId="ed25519:" + "0" * 16),
    ):
        report, check = run(data, [tampered])
        assert not report.verified and check.signed_by is None
        with pytest.raises(InstallError) as info:
            report.raise_for_failure()
        assert info.value.code is ErrorCode.SIGNATURE_INVALID


def test_a_signature_of_another_version_or_other_bytes_fails(data: bytes, tmp_path: Path) -> None:
    key = new_key(tmp_path)
    for moved in (
        signature_entry(key, PKG, "1.0.1", integrity_of(data)),
        signature_entry(key, PKG, "1.0.0", integrity_of(data + b"x")),
    ):
        report, _ = run(data, [moved])
        assert report.failure is not None
        assert report.failure.code is ErrorCode.SIGNATURE_INVALID


def test_a_revoked_key_is_ignored(data: bytes, tmp_path: Path) -> None:
    entry = signature_entry(new_key(tmp_path), PKG, "1.0.0", integrity_of(data), revoked_at="x")
    report, check = run(data, [entry])
    assert report.verified and check.signed_by is None
    assert report.results[-1].status == "skipped" and "revoked" in report.results[-1].message
    report, _ = run(data, [entry], require=True)
    assert report.failure is not None and report.failure.code is ErrorCode.SIGNATURE_REQUIRED


def test_the_pinned_signer_is_kept_when_it_signed(data: bytes, tmp_path: Path) -> None:
    old, new = new_key(tmp_path, "old"), new_key(tmp_path, "new")
    entries = [signature_entry(k, PKG, "1.0.0", integrity_of(data)) for k in (new, old)]
    _, check = run(data, entries, trusted=old.key_id)
    assert check.signed_by == old.key_id


def test_signatures_are_not_checked_against_bytes_that_failed_sha256(
    data: bytes, tmp_path: Path
) -> None:
    entry = signature_entry(new_key(tmp_path), PKG, "1.0.0", integrity_of(data))
    corrupted = data[:-1] + bytes([data[-1] ^ 1])
    report, check = run(corrupted, [entry], integrity=integrity_of(data))
    assert report.failure is not None and report.failure.code is ErrorCode.INTEGRITY_MISMATCH
    assert report.results[-1].status == "skipped" and check.signed_by is None


A, B = "ed25519:" + "a" * 16, "ed25519:" + "b" * 16


@pytest.mark.parametrize(
    ("previous", "new", "allow"),
    [(None, None, False), (None, A, False), (A, A, False), (A, B, True), (A, None, True)],
)
def test_signer_pinning_allows(previous, new, allow) -> None:
    signer_pinning(previous, new, allow)


@pytest.mark.parametrize("new", [B, None])
def test_signer_pinning_refuses_a_changed_or_missing_signer(new) -> None:
    with pytest.raises(InstallError) as info:
        signer_pinning(A, new, False)
    assert info.value.code is ErrorCode.SIGNER_CHANGED
    # the CLI's flag; the SDK names its argument beside it (tests/test_sdk.py)
    assert "re-run with --allow-signer-change." in (info.value.hint or "") or new is None
    assert "Python SDK" not in (info.value.hint or "")
    # an unsigned version is no key rotation: the hint says what it is (main: "rotated")
    assert ("rotated its key" in (info.value.hint or "")) is (new is not None)
