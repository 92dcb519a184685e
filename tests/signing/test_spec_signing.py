"""The signed payload, key ids and the client's signature rule (docs/compatibility.md#signatures)."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.signing import (
    check_signatures,
    decode_public_key,
    decode_signature,
    key_id,
    signing_payload,
    verify_signature,
)
from testing.signing import (
    RFC8032_PUBLIC_KEY_HEX,
    RFC8032_SIGNATURE_HEX,
    new_key,
    signature_entry,
    with_field,
)

PKG, VERSION = "@acme/greeter", "1.0.0"
INTEGRITY = "sha256-" + "ab" * 32
OTHER_INTEGRITY = "sha256-" + "cd" * 32


def b64(hex_text: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_text)).decode()


def test_payload_is_four_newline_terminated_lines() -> None:
    assert signing_payload(PKG, VERSION, INTEGRITY) == (
        b"splice-package-signature-v1\n@acme/greeter\n1.0.0\n" + INTEGRITY.encode() + b"\n"
    )


def test_key_id_is_sha256_prefix_of_the_raw_public_key() -> None:
    raw = bytes.fromhex(RFC8032_PUBLIC_KEY_HEX)
    assert key_id(raw) == "ed25519:" + hashlib.sha256(raw).hexdigest()[:16]
    with pytest.raises(SpecError):
        key_id(raw[:31])


def test_rfc8032_vector_verifies_and_a_flipped_bit_does_not() -> None:
    public, signature = b64(RFC8032_PUBLIC_KEY_HEX), b64(RFC8032_SIGNATURE_HEX)
    verify_signature(public, signature, b"")
    bad = bytearray(bytes.fromhex(RFC8032_SIGNATURE_HEX))
    bad[0] ^= 1
    with pytest.raises(SpecError) as info:
        verify_signature(public, base64.b64encode(bytes(bad)).decode(), b"")
    assert info.value.code is ErrorCode.SIGNATURE_INVALID
    with pytest.raises(SpecError):
        verify_signature(public, signature, b"x")


@pytest.mark.parametrize(
    "text", ["", "not base64!", b64("00" * 31), b64("00" * 33), 42, None, b64("00" * 32)[:-1]]
)
def test_malformed_public_keys_are_refused(text: object) -> None:
    with pytest.raises(SpecError):
        decode_public_key(text)


def test_signature_must_be_64_bytes_of_canonical_base64() -> None:
    assert len(decode_signature(b64(RFC8032_SIGNATURE_HEX))) == 64
    with pytest.raises(SpecError):
        decode_signature(b64(RFC8032_SIGNATURE_HEX[:-2]))


def test_a_valid_signature_names_its_key(tmp_path: Path) -> None:
    key = new_key(tmp_path)
    outcome = check_signatures(
        [signature_entry(key, PKG, VERSION, INTEGRITY)],
        package_id=PKG,
        version=VERSION,
        integrity=INTEGRITY,
    )
    assert outcome.signed_by == key.key_id
    assert outcome.describe() == f"verified: signed by {key.key_id}"


def test_no_signatures_is_unsigned() -> None:
    outcome = check_signatures([], package_id=PKG, version=VERSION, integrity=INTEGRITY)
    assert outcome.signed_by is None
    assert outcome.describe().startswith("unsigned:")


@pytest.mark.parametrize(
    ("package_id", "version", "integrity"),
    [
        (PKG, VERSION, OTHER_INTEGRITY),
        (PKG, "1.0.1", INTEGRITY),
        ("@acme/other", VERSION, INTEGRITY),
    ],
    ids=["other-bytes", "other-version", "other-package"],
)
def test_a_moved_signature_does_not_verify(
    tmp_path: Path, package_id: str, version: str, integrity: str
) -> None:
    entry = signature_entry(new_key(tmp_path), PKG, VERSION, INTEGRITY)
    with pytest.raises(SpecError) as info:
        check_signatures([entry], package_id=package_id, version=version, integrity=integrity)
    assert info.value.code is ErrorCode.SIGNATURE_INVALID


def test_key_id_is_recomputed_not_trusted(tmp_path: Path) -> None:
    real, other = new_key(tmp_path, "real"), new_key(tmp_path, "other")
    entry = with_field(signature_entry(real, PKG, VERSION, INTEGRITY), keyId=other.key_id)
    with pytest.raises(SpecError) as info:
        check_signatures([entry], package_id=PKG, version=VERSION, integrity=INTEGRITY)
    assert "does not match its public key" in info.value.details[0]


def test_one_bad_signature_fails_closed_even_beside_a_good_one(tmp_path: Path) -> None:
    good = signature_entry(new_key(tmp_path, "good"), PKG, VERSION, INTEGRITY)
    bad = signature_entry(new_key(tmp_path, "bad"), PKG, VERSION, OTHER_INTEGRITY)
    with pytest.raises(SpecError) as info:
        check_signatures([good, bad], package_id=PKG, version=VERSION, integrity=INTEGRITY)
    assert info.value.details == ("signatures[1]: " + bad["keyId"] + ": signature does not verify",)


def test_revoked_keys_are_ignored_even_when_their_signature_is_bad(tmp_path: Path) -> None:
    revoked = signature_entry(
        new_key(tmp_path, "old"), PKG, VERSION, OTHER_INTEGRITY, revoked_at="2026-02-01T00:00:00Z"
    )
    outcome = check_signatures([revoked], package_id=PKG, version=VERSION, integrity=INTEGRITY)
    assert outcome.signed_by is None and outcome.ignored_revoked == (revoked["keyId"],)
    assert "revoked" in outcome.describe()
    good = signature_entry(new_key(tmp_path, "new"), PKG, VERSION, INTEGRITY)
    outcome = check_signatures(
        [revoked, good], package_id=PKG, version=VERSION, integrity=INTEGRITY
    )
    assert outcome.signed_by == good["keyId"]


@pytest.mark.parametrize(
    "change",
    [
        {"keyId": "rsa:0000"},
        {"publicKey": "AAAA"},
        {"signature": "AAAA"},
        {"signature": None},
    ],
)
def test_malformed_entries_are_invalid_not_skipped(tmp_path: Path, change: dict) -> None:
    entry = with_field(signature_entry(new_key(tmp_path), PKG, VERSION, INTEGRITY), **change)
    with pytest.raises(SpecError) as info:
        check_signatures([entry], package_id=PKG, version=VERSION, integrity=INTEGRITY)
    assert info.value.code is ErrorCode.SIGNATURE_INVALID
    with pytest.raises(SpecError):
        check_signatures(["not an object"], package_id=PKG, version=VERSION, integrity=INTEGRITY)


def test_the_preferred_signer_is_reported_when_it_signed(tmp_path: Path) -> None:
    first, second = new_key(tmp_path, "first"), new_key(tmp_path, "second")
    entries = [signature_entry(k, PKG, VERSION, INTEGRITY) for k in (first, second)]
    kwargs = {"package_id": PKG, "version": VERSION, "integrity": INTEGRITY}
    assert check_signatures(entries, **kwargs).signed_by == first.key_id
    assert check_signatures(entries, preferred=second.key_id, **kwargs).signed_by == second.key_id
    assert check_signatures(entries, preferred="ed25519:" + "0" * 16, **kwargs).signed_by == (
        first.key_id
    )
