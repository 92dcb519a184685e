"""The ``RegistryClient`` protocol: everything the CLI and installer ask of a registry.

Responses are the API's JSON documents (docs/compatibility.md#registry-api) as dicts. Errors are
``RegistryError`` with client codes (docs/compatibility.md#error-codes): the same table maps an HTTP status,
or an embedded service error, to ``PACKAGE_NOT_FOUND``, ``VERSION_EXISTS`` and so on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class RegistryClient(Protocol):
    base_url: str
    has_token: bool  # a token was configured (env or credentials); the registry may still refuse it

    def search(self, query: str, *, limit: int = 20) -> dict[str, Any]: ...
    def package(self, package_id: str) -> dict[str, Any]: ...
    def versions(self, package_id: str, *, cursor: str | None = None) -> dict[str, Any]:
        """One page of ``GET .../versions``; pass its ``nextCursor`` back for the next."""
        ...

    def version(self, package_id: str, version: str) -> dict[str, Any]: ...
    def provenance(self, package_id: str, version: str) -> dict[str, Any]: ...
    def download(self, package_id: str, version: str) -> bytes:
        """The artifact bytes, unverified: the caller checks integrity and size."""
        ...

    def publish(self, archive: bytes) -> dict[str, Any]: ...
    def whoami(self) -> dict[str, Any]: ...
    def tokens(self) -> dict[str, Any]: ...
    def create_token(
        self,
        *,
        label: str | None = None,
        namespaces: Sequence[str] | None = None,
        expires_in_days: int | None = None,
    ) -> dict[str, Any]: ...
    def revoke_token(self, token_id: str) -> dict[str, Any]: ...
    def namespace(self, namespace: str) -> dict[str, Any]: ...
    def set_maintainer(self, namespace: str, user: str, *, add: bool) -> dict[str, Any]:
        """Add (``add=True``) or remove a maintainer; NamespaceResponse (owner, managing token)."""
        ...

    def keys(self, namespace: str) -> dict[str, Any]:
        """``{namespace, keys: [SigningKeyInfo]}`` (anonymous)."""
        ...

    def add_key(self, namespace: str, public_key: str) -> dict[str, Any]: ...
    def revoke_key(self, namespace: str, key_id: str) -> dict[str, Any]: ...
    def add_signature(
        self, package_id: str, version: str, key_id: str, signature: str
    ) -> dict[str, Any]:
        """Store a publisher signature; the registry verifies it first (PackageSignature)."""
        ...

    def close(self) -> None: ...


def split_package_id(package_id: str) -> tuple[str, str]:
    """``@ns/name`` → ``("ns", "name")``; raises SpecError(INVALID_NAME) via spec.names."""
    from splice_build.spec.names import PackageId

    parsed = PackageId.parse(package_id)
    return parsed.namespace, parsed.name


def token_body(
    label: str | None, namespaces: Sequence[str] | None, expires_in_days: int | None
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if label is not None:
        body["label"] = label
    if namespaces:
        body["namespaces"] = [ns.removeprefix("@") for ns in namespaces]
    if expires_in_days is not None:
        body["expiresInDays"] = expires_in_days
    return body
