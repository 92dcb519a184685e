"""Publisher-signature helpers: real Ed25519 keys and signature entries shaped like the registry's.

Keys are written with the real key store (``project.keys``); entries follow ``PackageSignature``
(docs/compatibility.md#registry-api) so tests can build, move and tamper with version metadata directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from splice_build.project.keys import SigningKey, create_key_file
from splice_build.spec.signing import signing_payload

# RFC 8032, section 7.1, TEST 1 (empty message): independent of our own signing code.
RFC8032_PUBLIC_KEY_HEX = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
RFC8032_SIGNATURE_HEX = (
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555f"
    "b8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)


def new_key(directory: Path, name: str = "test") -> SigningKey:
    """A fresh key in ``directory/<name>.key``."""
    directory.mkdir(parents=True, exist_ok=True)
    return create_key_file(directory / f"{name}.key", name=name)


def signature_entry(
    key: SigningKey,
    package_id: str,
    version: str,
    integrity: str,
    *,
    revoked_at: str | None = None,
) -> dict[str, Any]:
    """A ``PackageSignature`` by ``key`` over exactly this package, version and integrity."""
    return {
        "keyId": key.key_id,
        "publicKey": key.public_key,
        "signature": key.sign(signing_payload(package_id, version, integrity)),
        "signedAt": "2026-01-01T00:00:00.000Z",
        "revokedAt": revoked_at,
    }


def with_field(entry: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of a signature entry with some fields replaced (tampering in one line)."""
    return {**entry, **changes}
