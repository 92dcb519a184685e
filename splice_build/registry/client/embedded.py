"""``EmbeddedRegistryClient``: the registry service in-process, over the store in SPLICE_HOME.

No HTTP and no server: the same ``RegistryService`` the HTTP app uses, so the rules are
identical. Service errors are pushed through the server's status table and the client's
status table, so callers see exactly the codes an HTTP client would report. Without a token
the caller acts as the local user ``local`` (``via: "internal"``): whoever can write the
store owns it anyway. Rate limits are off (a local store has one client).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from splice_build.errors import RegistryError
from splice_build.project.registry_url import EMBEDDED_REGISTRY as EMBEDDED_URL
from splice_build.registry.client.answers import checked
from splice_build.registry.client.interface import split_package_id, token_body
from splice_build.registry.client.statuses import error_for_status
from splice_build.registry.service.auth import Caller
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.service.registry_service import RegistryService
from splice_build.registry.service.status import RetryLaterError, status_for

LOCAL_USER = "local"
NO_LIMITS = RateLimits(failed_auth=0, publishes=0, requests=0, admin=0, costly_reads=0)
T = TypeVar("T")


class EmbeddedRegistryClient:
    def __init__(self, data: Path, *, token: str | None = None) -> None:
        from splice_build.registry.official import ensure_official_skills
        from splice_build.registry.storage import open_service

        self.base_url = EMBEDDED_URL
        self.has_token = token is not None
        self.service: RegistryService = open_service(data, limits=NO_LIMITS)
        ensure_official_skills(self.service, data)
        self._caller = (
            Caller(authorization=f"Bearer {token}")
            if token is not None
            else Caller(internal_user=LOCAL_USER)
        )

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except RegistryError as exc:
            retry = str(exc.retry_after) if isinstance(exc, RetryLaterError) else None
            raise error_for_status(
                status_for(exc.code),
                exc.message,
                exc.details,
                server_code=str(exc.code),
                retry_after=retry,
            ) from exc

    def search(self, query: str, *, limit: int = 20) -> dict[str, Any]:
        answer = self._call(self.service.search, query, limit=limit)
        return checked("search", answer, "/packages/search")

    def package(self, package_id: str) -> dict[str, Any]:
        answer = self._call(self.service.package, *split_package_id(package_id))
        return checked("package", answer, _pkg(package_id), package_id=package_id)

    def versions(self, package_id: str, *, cursor: str | None = None) -> dict[str, Any]:
        answer = self._call(self.service.versions, *split_package_id(package_id), cursor=cursor)
        return checked("versions", answer, _pkg(package_id, "versions"), package_id=package_id)

    def version(self, package_id: str, version: str) -> dict[str, Any]:
        ns, name = split_package_id(package_id)
        answer = self._call(self.service.version, ns, name, version)
        path = _pkg(package_id, version)
        return checked("version", answer, path, package_id=package_id, version=version)

    def provenance(self, package_id: str, version: str) -> dict[str, Any]:
        answer = self._call(self.service.provenance, *split_package_id(package_id), version)
        path = _pkg(package_id, version, "provenance")
        return checked("provenance", answer, path, package_id=package_id, version=version)

    def download(self, package_id: str, version: str) -> bytes:
        ns, name = split_package_id(package_id)
        return self._call(self.service.download, ns, name, version).data

    def namespace(self, namespace: str) -> dict[str, Any]:
        ns = namespace.removeprefix("@")
        return checked("namespace", self._call(self.service.namespace, ns), f"/namespaces/{ns}")

    def keys(self, namespace: str) -> dict[str, Any]:
        ns = namespace.removeprefix("@")
        return checked("keys", self._call(self.service.keys, ns), f"/namespaces/{ns}/keys")

    def set_maintainer(self, namespace: str, user: str, *, add: bool) -> dict[str, Any]:
        ns = namespace.removeprefix("@")
        answer = self._call(self.service.set_maintainer, self._caller, ns, user, add=add)
        return checked("namespace", answer, f"/namespaces/{ns}/maintainers/{user}")

    def add_key(self, namespace: str, public_key: str) -> dict[str, Any]:
        body = {"publicKey": public_key}
        ns = namespace.removeprefix("@")
        answer = self._call(self.service.add_key, self._caller, ns, body)
        return checked("key", answer, f"/namespaces/{ns}/keys")

    def revoke_key(self, namespace: str, key_id: str) -> dict[str, Any]:
        ns = namespace.removeprefix("@")
        answer = self._call(self.service.revoke_key, self._caller, ns, key_id)
        return checked("key", answer, f"/namespaces/{ns}/keys/{key_id}")

    def add_signature(
        self, package_id: str, version: str, key_id: str, signature: str
    ) -> dict[str, Any]:
        ns, name = split_package_id(package_id)
        body = {"keyId": key_id, "signature": signature}
        answer = self._call(self.service.add_signature, self._caller, ns, name, version, body)
        return checked("signature", answer, _pkg(package_id, version, "signatures"))

    def publish(self, archive: bytes) -> dict[str, Any]:
        return checked(
            "publish", self._call(self.service.publish, self._caller, archive), "/publish"
        )

    def whoami(self) -> dict[str, Any]:
        return checked("whoami", self._call(self.service.whoami, self._caller), "/auth/whoami")

    def tokens(self) -> dict[str, Any]:
        return checked("tokens", self._call(self.service.tokens, self._caller), "/auth/tokens")

    def create_token(
        self,
        *,
        label: str | None = None,
        namespaces: Sequence[str] | None = None,
        expires_in_days: int | None = None,
    ) -> dict[str, Any]:
        body = token_body(label, namespaces, expires_in_days)
        answer = self._call(self.service.create_token, self._caller, body)
        return checked("createdToken", answer, "/auth/tokens")

    def revoke_token(self, token_id: str) -> dict[str, Any]:
        answer = self._call(self.service.revoke_token, self._caller, token_id)
        return checked("revokedToken", answer, f"/auth/tokens/{token_id}")

    def close(self) -> None:
        self.service.deps.meta.close()


def _pkg(package_id: str, *rest: str) -> str:
    """The HTTP path of the same answer, to name it in errors as the HTTP client does."""
    return "/".join(["/packages", package_id[1:], *rest])
