"""``RegistryService``: one method per API route, shared by the HTTP app and the embedded client.

Each method authenticates as its route requires, then delegates to the module that owns the
rule. Errors are ``RegistryError``s with server codes; transports turn them into responses
(``http.errors``) or client errors (``client.statuses``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from splice_build.registry.api import API_VERSION
from splice_build.registry.blobs.interface import BlobStore
from splice_build.registry.db.interface import MetadataStore
from splice_build.registry.service import (
    admin,
    artifacts,
    fields,
    namespaces,
    publish,
    ratelimit,
    read,
    signing,
    tokens,
)
from splice_build.registry.service.auth import (
    Caller,
    Principal,
    authenticate,
    authenticate_admin,
)
from splice_build.registry.service.clock import Clock, system_clock
from splice_build.registry.service.deps import Deps
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.service.read import Artifact, Keyed, OpenArtifact

ENDPOINTS = (
    "GET /health",
    "GET /packages/search?q=&limit=&kind=",
    "GET /packages/:ns/:name",
    "GET /packages/:ns/:name/versions",
    "GET /packages/:ns/:name/:version",
    "GET /packages/:ns/:name/:version/download",
    "GET /packages/:ns/:name/:version/provenance",
    "POST /publish",
    "GET /auth/whoami",
    "GET /auth/tokens",
    "POST /auth/tokens",
    "DELETE /auth/tokens/:id",
    "GET /namespaces/:ns",
    "PUT /namespaces/:ns/maintainers/:user",
    "DELETE /namespaces/:ns/maintainers/:user",
    "GET /namespaces/:ns/keys",
    "POST /namespaces/:ns/keys",
    "DELETE /namespaces/:ns/keys/:keyId",
    "POST /packages/:ns/:name/:version/signatures",
    "POST /mcp (MCP Streamable HTTP, discovery only, bearer token)",
    "POST /admin/users",
    "POST /admin/users/:name/tokens",
    "POST /admin/tokens/:id/revoke",
    "PUT /admin/namespaces/:ns",
    "PUT /admin/packages/:ns/:name/hidden",
    "POST /admin/artifacts/migrate",
)


class RegistryService:
    def __init__(
        self,
        meta: MetadataStore,
        blobs: BlobStore,
        *,
        clock: Clock = system_clock,
        admin_token_sha256: str | None = None,
        limits: RateLimits | None = None,
        previous_blobs: Sequence[BlobStore] = (),
    ) -> None:
        self.deps = Deps(
            meta, blobs, clock, admin_token_sha256, limits or RateLimits(), tuple(previous_blobs)
        )

    # -- anonymous reads --------------------------------------------------------------

    def index(self) -> dict[str, Any]:
        return {
            "name": "splice-registry",
            "apiVersion": API_VERSION,
            "admin": "enabled" if self.deps.admin_token_sha256 else "disabled",
            "endpoints": list(ENDPOINTS),
        }

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "apiVersion": API_VERSION}

    def search(
        self, query: str, *, limit: str | float | None = None, kind: str | None = None
    ) -> dict[str, Any]:
        return read.search(self.deps, query, limit=limit, kind=kind)

    def package(self, ns: str, name: str) -> dict[str, Any]:
        return read.package(self.deps, ns, name)

    def package_document(self, ns: str, name: str) -> Keyed:
        return read.package_document(self.deps, ns, name)

    def versions(
        self, ns: str, name: str, *, cursor: str | None = None, limit: str | None = None
    ) -> dict[str, Any]:
        return read.versions(self.deps, ns, name, cursor=cursor, limit=limit)

    def version(self, ns: str, name: str, version: str) -> dict[str, Any]:
        return read.version(self.deps, ns, name, version)

    def version_document(self, ns: str, name: str, version: str) -> Keyed:
        return read.version_document(self.deps, ns, name, version)

    def charge_costly_read(self, client: str, cost: int) -> Callable[[float], None]:
        """Charge an answer about to be written (``ratelimit.count_costly_read``); what it
        returns charges the CPU its writing took instead."""
        charged = ratelimit.count_costly_read(self.deps, client, cost)
        return lambda seconds: ratelimit.settle_costly_read(self.deps, client, charged, seconds)

    def provenance(self, ns: str, name: str, version: str) -> dict[str, Any]:
        return read.provenance(self.deps, ns, name, version)

    def download(self, ns: str, name: str, version: str) -> Artifact:
        return read.download(self.deps, ns, name, version)

    def open_download(self, ns: str, name: str, version: str) -> OpenArtifact:
        """``download`` for streaming (``blob.read`` a piece at a time)."""
        return read.open_download(self.deps, ns, name, version)

    def namespace(self, ns: str) -> dict[str, Any]:
        return namespaces.namespace_info(self.deps, ns)

    def keys(self, ns: str) -> dict[str, Any]:
        return signing.list_keys(self.deps, ns)

    # -- authenticated ----------------------------------------------------------------

    def publish(self, caller: Caller, body: bytes) -> dict[str, Any]:
        return publish.publish(self.deps, caller, body)

    def publish_as(self, principal: Principal, body: bytes) -> dict[str, Any]:
        """``publish`` for a principal from ``authenticate`` (HTTP: before the body is read)."""
        return publish.publish_as(self.deps, principal, body)

    def authenticate(self, caller: Caller) -> Principal:
        """Any valid user token (``POST /mcp``, ``POST /publish`` before its body is read);
        raises UNAUTHENTICATED or RATE_LIMITED."""
        return authenticate(self.deps, caller)

    def whoami(self, caller: Caller) -> dict[str, Any]:
        return tokens.whoami(self.deps, authenticate(self.deps, caller))

    def tokens(self, caller: Caller) -> dict[str, Any]:
        return tokens.list_tokens(self.deps, authenticate(self.deps, caller))

    def create_token(self, caller: Caller, body: dict[str, Any]) -> dict[str, Any]:
        return tokens.create_token(self.deps, authenticate(self.deps, caller), body)

    def revoke_token(self, caller: Caller, token_id: str) -> dict[str, Any]:
        return tokens.revoke_token(self.deps, authenticate(self.deps, caller), token_id)

    def set_maintainer(self, caller: Caller, ns: str, user: str, *, add: bool) -> dict[str, Any]:
        principal = authenticate(self.deps, caller)
        return namespaces.set_maintainer(self.deps, principal, ns, user, add=add)

    def add_key(self, caller: Caller, ns: str, body: dict[str, Any]) -> dict[str, Any]:
        return signing.add_key(self.deps, authenticate(self.deps, caller), ns, body)

    def revoke_key(self, caller: Caller, ns: str, key_id: str) -> dict[str, Any]:
        return signing.revoke_key(self.deps, authenticate(self.deps, caller), ns, key_id)

    def add_signature(
        self, caller: Caller, ns: str, name: str, version: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        principal = authenticate(self.deps, caller)
        return signing.add_signature(self.deps, principal, ns, name, version, body)

    # -- admin (HTTP, behind the admin token) -----------------------------------------

    def admin_create_user(self, caller: Caller, body: dict[str, Any]) -> dict[str, Any]:
        authenticate_admin(self.deps, caller)
        return admin.create_user(self.deps, body.get("name"))

    def admin_create_token(self, caller: Caller, user: str, body: dict[str, Any]) -> dict[str, Any]:
        authenticate_admin(self.deps, caller)
        return admin.create_token(self.deps, user, tokens.token_request(body, allow_manage=True))

    def admin_revoke_token(self, caller: Caller, token_id: str) -> dict[str, Any]:
        authenticate_admin(self.deps, caller)
        return admin.revoke_token(self.deps, token_id)

    def admin_set_owner(self, caller: Caller, ns: str, body: dict[str, Any]) -> dict[str, Any]:
        authenticate_admin(self.deps, caller)
        if "owner" not in body:
            raise fields.bad_request('Body must be {"owner": "<user>" | null}')
        owner = body["owner"]
        if owner is not None and not isinstance(owner, str):
            raise fields.bad_request("owner must be a user name or null")
        return admin.set_owner(self.deps, ns, owner)

    def admin_set_hidden(
        self, caller: Caller, ns: str, name: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        authenticate_admin(self.deps, caller)
        if not isinstance(body.get("hidden"), bool):
            raise fields.bad_request('Body must be {"hidden": true | false}')
        return admin.set_hidden(self.deps, ns, name, body["hidden"])

    def admin_migrate_artifacts(self, caller: Caller) -> dict[str, Any]:
        authenticate_admin(self.deps, caller)
        return artifacts.migrate(self.deps).to_json()
