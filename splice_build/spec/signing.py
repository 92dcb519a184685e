"""Publisher signatures (docs/compatibility.md#signatures): the signed payload, key ids, and verification.

- Ed25519. A public key travels as its raw 32 bytes in standard base64 (44 characters); a
  signature as its 64 bytes in standard base64 (88 characters).
- Key id: ``ed25519:`` + the first 16 hex digits of SHA-256 of the raw public key. It is always
  *recomputed* from the public key, never taken on trust from whoever sent it.
- Payload (UTF-8), four lines each ending in ``\\n``: ``splice-package-signature-v1``, package
  id, version, integrity. The integrity pins the exact bytes and the id/version pin the place,
  so a signature moved to other bytes or to another version does not verify.

:func:`check_signatures` is the client's rule for a version's signatures: signatures by revoked
keys are ignored, any other signature that does not verify fails the whole check (fail closed,
``SIGNATURE_INVALID``), the first valid one names the signer, none at all means unsigned.
``cryptography`` is imported only inside the functions that verify.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence

from splice_build.errors import ErrorCode, SpecError
from splice_build.records import dataclass

PAYLOAD_HEADER = "splice-package-signature-v1"
KEY_ID_PREFIX = "ed25519:"
KEY_ID_PATTERN = re.compile(
    r"^ed25519:[0-9a-f]{16}$"
)  # docs/compatibility.md#splicelock (signedBy)
PUBLIC_KEY_BYTES = 32  # RFC 8032
SIGNATURE_BYTES = 64  # RFC 8032


def signing_payload(package_id: str, version: str, integrity: str) -> bytes:
    """The exact bytes a publisher signs for ``package_id@version`` with ``integrity``."""
    return f"{PAYLOAD_HEADER}\n{package_id}\n{version}\n{integrity}\n".encode()


def key_id(raw_public_key: bytes) -> str:
    """``ed25519:<16 hex>`` of a raw 32-byte public key. (hashlib loads OpenSSL, about 4 ms:
    ``splice run`` reads splice.json, whose ``trustedSigners`` this module checks, and
    computes no key id.)"""
    import hashlib

    if len(raw_public_key) != PUBLIC_KEY_BYTES:
        raise SpecError(ErrorCode.SIGNATURE_INVALID, "an Ed25519 public key has 32 bytes")
    return KEY_ID_PREFIX + hashlib.sha256(raw_public_key).hexdigest()[:16]


def is_key_id(text: object) -> bool:
    return isinstance(text, str) and KEY_ID_PATTERN.fullmatch(text) is not None


def encode_b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _decode_b64(text: object, size: int, what: str) -> bytes:
    """Strict standard base64 of exactly ``size`` bytes; SpecError(SIGNATURE_INVALID) otherwise."""
    if not isinstance(text, str) or not text.isascii():
        raise SpecError(ErrorCode.SIGNATURE_INVALID, f"{what} must be a base64 string")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SpecError(ErrorCode.SIGNATURE_INVALID, f"{what} is not valid base64") from exc
    if len(raw) != size or encode_b64(raw) != text:
        raise SpecError(
            ErrorCode.SIGNATURE_INVALID, f"{what} must be {size} bytes in canonical base64"
        )
    return raw


def decode_public_key(text: object) -> bytes:
    """The raw 32 bytes of a base64 public key; raises SpecError(SIGNATURE_INVALID)."""
    return _decode_b64(text, PUBLIC_KEY_BYTES, "publicKey")


def decode_signature(text: object) -> bytes:
    """The raw 64 bytes of a base64 signature; raises SpecError(SIGNATURE_INVALID)."""
    return _decode_b64(text, SIGNATURE_BYTES, "signature")


def verify_signature(public_key_b64: object, signature_b64: object, payload: bytes) -> None:
    """Return when the signature verifies; raise SpecError(SIGNATURE_INVALID) otherwise."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    raw_key = decode_public_key(public_key_b64)
    raw_signature = decode_signature(signature_b64)
    try:
        public = Ed25519PublicKey.from_public_bytes(raw_key)
        public.verify(raw_signature, payload)
    except (InvalidSignature, ValueError) as exc:
        raise SpecError(ErrorCode.SIGNATURE_INVALID, "signature does not verify") from exc


@dataclass(frozen=True)
class SignatureCheck:
    """The outcome of :func:`check_signatures` when nothing failed."""

    signed_by: str | None  # the key id of the accepted signature; None = unsigned
    valid: tuple[str, ...]  # every key id whose signature verified, in the registry's order
    ignored_revoked: tuple[str, ...]  # key ids skipped because the registry marks them revoked

    def describe(self) -> str:
        if self.signed_by is None:
            if self.ignored_revoked:
                return (
                    "unsigned: only signatures by revoked keys ("
                    + ", ".join(self.ignored_revoked)
                    + ")"
                )
            return "unsigned: the registry has no publisher signature for this version"
        return f"verified: signed by {self.signed_by}"


def check_signatures(
    signatures: Sequence[object],
    *,
    package_id: str,
    version: str,
    integrity: str,
    preferred: str | None = None,
) -> SignatureCheck:
    """Verify every signature of one version (docs/compatibility.md#signatures ``checkSignatures``).

    ``preferred`` (a pinned signer) is reported as the signer when its signature is among the
    valid ones, so a publisher that adds a second key does not look like a change of signer.
    Raises SpecError(SIGNATURE_INVALID) naming the first bad entry: malformed, key id not
    matching its public key, or a signature that does not verify. ``integrity`` must already
    be the verified digest of the bytes.
    """
    payload = signing_payload(package_id, version, integrity)
    valid: list[str] = []
    revoked: list[str] = []
    for index, entry in enumerate(signatures):
        if not isinstance(entry, Mapping):
            raise _bad(index, "not an object")
        claimed = entry.get("keyId")
        if entry.get("revokedAt") is not None:
            revoked.append(str(claimed))
            continue
        if not is_key_id(claimed):
            raise _bad(index, f"malformed keyId {claimed!r}")
        try:
            raw_key = decode_public_key(entry.get("publicKey"))
        except SpecError as exc:
            raise _bad(index, f"{claimed}: {exc.message}") from exc
        actual = key_id(raw_key)
        if actual != claimed:
            raise _bad(index, f"keyId {claimed} does not match its public key ({actual})")
        try:
            verify_signature(entry.get("publicKey"), entry.get("signature"), payload)
        except SpecError as exc:
            raise _bad(index, f"{claimed}: {exc.message}") from exc
        valid.append(claimed)
    if preferred is not None and preferred in valid:
        signer: str | None = preferred
    else:
        signer = valid[0] if valid else None
    return SignatureCheck(signer, tuple(valid), tuple(revoked))


def _bad(index: int, reason: str) -> SpecError:
    return SpecError(
        ErrorCode.SIGNATURE_INVALID,
        "publisher signature is invalid",
        details=[f"signatures[{index}]: {reason}"],
    )
