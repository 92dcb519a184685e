"""Publisher side of signatures: sign a version's payload and hand it to the registry.

Used by ``splice publish --sign`` and ``splice sign``. The caller decides *which* bytes are
being vouched for (the integrity); this module only signs exactly the payload of
docs/compatibility.md#signatures for it and uploads the signature, which the registry verifies again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice_build.project.keys import SigningKey
    from splice_build.registry.client.interface import RegistryClient


def upload_signature(
    client: RegistryClient, key: SigningKey, package_id: str, version: str, integrity: str
) -> dict[str, Any]:
    """Sign ``package_id@version`` with ``integrity`` and store it; returns PackageSignature.

    Raises RegistryError: ``KEY_NOT_REGISTERED``, ``KEY_REVOKED``, ``INVALID_SIGNATURE`` (the
    registry's integrity differs), ``FORBIDDEN``/``TOKEN_SCOPE``, ``PACKAGE_NOT_FOUND``.
    """
    from splice_build.spec.signing import signing_payload

    signature = key.sign(signing_payload(package_id, version, integrity))
    return client.add_signature(package_id, version, key.key_id, signature)
