"""Publisher keys and signatures on the registry (docs/compatibility.md#registry-api, docs/compatibility.md#signatures).

- Keys belong to a namespace. Only its owner, with a managing token, registers or revokes
  one. A key id is registered once, in one namespace (``KEY_EXISTS``); a revoked key stays
  revoked (``KEY_REVOKED``); registering an active key again is a no-op.
- A signature is accepted from the namespace's owner or a maintainer (publish-only tokens
  included, within their scope) only when it verifies, with a registered, unrevoked key of
  that namespace, over the payload of the version's recorded integrity: ``KEY_NOT_REGISTERED``,
  ``KEY_REVOKED``, ``INVALID_SIGNATURE``; a malformed body is ``BAD_REQUEST``.
- Nothing is ever updated or deleted but a key's one revocation; the database enforces it.
"""

from __future__ import annotations

from typing import Any

from splice_build.errors import ErrorCode, RegistryError, SpecError
from splice_build.registry.db.interface import Namespace, SignatureRow, SigningKeyRow
from splice_build.registry.service import fields
from splice_build.registry.service.auth import Principal, require_manage
from splice_build.registry.service.deps import Deps


def key_info(row: SigningKeyRow) -> dict[str, Any]:
    """``SigningKeyInfo`` (docs/compatibility.md#registry-api)."""
    return {
        "keyId": row.key_id,
        "publicKey": row.public_key,
        "namespace": row.namespace,
        "addedBy": row.added_by,
        "addedAt": row.added_at,
        "revokedAt": row.revoked_at,
    }


def version_signatures(deps: Deps, package_id: str, version: str) -> list[dict[str, Any]]:
    """``PackageSignature`` entries of one version, each with its key's revocation."""
    return [
        {
            "keyId": row.key_id,
            "publicKey": row.public_key,
            "signature": row.signature,
            "signedAt": row.signed_at,
            "revokedAt": row.revoked_at,
        }
        for row in deps.meta.signatures_of(package_id, version)
    ]


def list_keys(deps: Deps, namespace: str) -> dict[str, Any]:
    """GET /namespaces/:ns/keys (anonymous)."""
    row = _namespace(deps, namespace)
    return {"namespace": row.name, "keys": [key_info(k) for k in deps.meta.signing_keys(row.name)]}


def add_key(
    deps: Deps, principal: Principal, namespace: str, body: dict[str, Any]
) -> dict[str, Any]:
    """POST /namespaces/:ns/keys ``{publicKey}`` → SigningKeyInfo (201)."""
    from splice_build.spec.signing import decode_public_key, key_id

    row = _owned(deps, principal, namespace)
    try:
        raw = decode_public_key(body.get("publicKey"))
    except SpecError as exc:
        raise fields.bad_request(f"Malformed publicKey: {exc.message}") from exc
    new = SigningKeyRow(
        key_id=key_id(raw),
        namespace=row.name,
        public_key=body["publicKey"],
        added_by=principal.user.name,
        added_at=deps.now_iso(),
        revoked_at=None,
    )
    existing = deps.meta.signing_key(new.key_id)
    if existing is None:
        try:
            deps.meta.insert_signing_key(new)
        except RegistryError as exc:
            if exc.code is not ErrorCode.KEY_EXISTS:
                raise
        existing = deps.meta.signing_key(new.key_id)
        assert existing is not None, "BUG: inserted key not found"
    if existing.namespace != row.name:
        raise RegistryError(
            ErrorCode.KEY_EXISTS, f"Key {new.key_id} is registered for another namespace"
        )
    if existing.revoked_at is not None:
        raise RegistryError(
            ErrorCode.KEY_REVOKED,
            f"Key {new.key_id} was revoked on {existing.revoked_at} and cannot be registered again",
            hint="Generate a new key with `splice keys generate <name>`.",
        )
    return key_info(existing)


def revoke_key(deps: Deps, principal: Principal, namespace: str, key: str) -> dict[str, Any]:
    """DELETE /namespaces/:ns/keys/:keyId → SigningKeyInfo (revoked; revoking twice is a no-op)."""
    row = _owned(deps, principal, namespace)
    existing = deps.meta.signing_key(key)
    if existing is None or existing.namespace != row.name:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Key {key} is not registered for @{row.name}")
    deps.meta.revoke_signing_key(key, now=deps.now_iso())
    revoked = deps.meta.signing_key(key)
    assert revoked is not None and revoked.revoked_at is not None, "BUG: key not revoked"
    return key_info(revoked)


def add_signature(
    deps: Deps,
    principal: Principal,
    namespace: str,
    name: str,
    version: str,
    body: dict[str, Any],
) -> dict[str, Any]:
    """POST /packages/:ns/:name/:version/signatures ``{keyId, signature}`` → PackageSignature."""
    from splice_build.spec.signing import (
        decode_signature,
        is_key_id,
        signing_payload,
        verify_signature,
    )

    package_id = fields.package_id(namespace, name)
    ns = namespace.removeprefix("@")
    _may_sign(deps, principal, ns)
    row = deps.meta.version(package_id, version)
    if row is None:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Version {package_id}@{version} not found")
    key, signature = body.get("keyId"), body.get("signature")
    if not is_key_id(key):
        raise fields.bad_request("keyId must look like ed25519:<16 hex digits>")
    try:
        decode_signature(signature)
    except SpecError as exc:
        raise fields.bad_request(f"Malformed signature: {exc.message}") from exc
    assert isinstance(key, str) and isinstance(signature, str)
    registered = deps.meta.signing_key(key)
    if registered is None or registered.namespace != ns:
        raise RegistryError(
            ErrorCode.KEY_NOT_REGISTERED,
            f"Key {key} is not registered for @{ns}",
            hint=f"Register it with `splice keys register @{ns}`.",
        )
    if registered.revoked_at is not None:
        raise RegistryError(ErrorCode.KEY_REVOKED, f"Key {key} was revoked")
    try:
        verify_signature(
            registered.public_key, signature, signing_payload(package_id, version, row.integrity)
        )
    except SpecError as exc:
        raise RegistryError(
            ErrorCode.INVALID_SIGNATURE,
            f"The signature does not verify for {package_id}@{version}",
            details=[f"integrity: {row.integrity}", f"key: {key}"],
        ) from exc
    deps.meta.insert_signature(
        SignatureRow(package_id, version, key, signature, principal.user.name, deps.now_iso())
    )
    return next(s for s in version_signatures(deps, package_id, version) if s["keyId"] == key)


def _namespace(deps: Deps, namespace: str) -> Namespace:
    try:
        name = fields.namespace_name(namespace)
    except RegistryError as exc:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Namespace {namespace} not found") from exc
    row = deps.meta.namespace(name)
    if row is None:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Namespace @{name} not found")
    return row


def _in_scope(principal: Principal, namespace: str) -> None:
    scope = principal.scope
    if scope is not None and namespace not in scope:
        raise RegistryError(ErrorCode.TOKEN_SCOPE, f"This token may not act on @{namespace}")


def _owned(deps: Deps, principal: Principal, namespace: str) -> Namespace:
    """Key management: the namespace's owner, with a managing token in scope."""
    require_manage(principal)
    row = _namespace(deps, namespace)
    if row.owner != principal.user.name:
        raise RegistryError(ErrorCode.FORBIDDEN, f"Only the owner of @{row.name} manages its keys")
    _in_scope(principal, row.name)
    return row


def _may_sign(deps: Deps, principal: Principal, namespace: str) -> None:
    """Signing: the owner or a maintainer, with any token whose scope includes the namespace."""
    _in_scope(principal, namespace)
    row = _namespace(deps, namespace)
    user = principal.user.name
    if row.owner != user and user not in deps.meta.maintainers(row.name):
        raise RegistryError(
            ErrorCode.FORBIDDEN, f"Only the owner or a maintainer of @{row.name} may sign"
        )
