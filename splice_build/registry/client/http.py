"""``HttpRegistryClient``: the registry API over ``requests``.

Every ``requests`` failure becomes ``REGISTRY_UNREACHABLE`` (``raise … from exc``); every
non-2xx answer goes through ``statuses.error_for_status``. The token is sent only as an
``Authorization`` header to this registry's own URL and never appears in an error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.api import BUNDLE_CONTENT_TYPE, TARGZ_CONTENT_TYPE
from splice_build.registry.client.interface import split_package_id, token_body
from splice_build.registry.client.statuses import error_for_status
from splice_build.spec import json_text
from splice_build.spec.limits import MAX_ARCHIVE_BYTES

if TYPE_CHECKING:
    import requests

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0
# A registry is a remote party: every body is read with a cap, never whole on trust.
MAX_JSON_BYTES = 16 * 1024 * 1024  # metadata and search answers (a manifest is far smaller)
MAX_ERROR_BYTES = 64 * 1024
CHUNK = 64 * 1024


class HttpRegistryClient:
    def __init__(self, base_url: str, *, token: str | None = None) -> None:
        import requests

        self.base_url = base_url.rstrip("/")
        self.has_token = token is not None
        self._session = requests.Session()
        self._session.trust_env = True
        self._session.headers["accept"] = "application/json"
        self._session.headers["user-agent"] = "splice-build"
        if token is not None:
            self._session.headers["authorization"] = f"Bearer {token}"

    # -- plumbing ---------------------------------------------------------------------

    def _request(
        self, method: str, path: str, *, limit: int = MAX_JSON_BYTES, **kwargs: Any
    ) -> tuple[requests.Response, bytes]:
        """The answer and its body, read in chunks and refused past ``limit`` bytes."""
        import requests

        try:
            response = self._session.request(
                method,
                self.base_url + path,
                timeout=(CONNECT_TIMEOUT, READ_TIMEOUT),
                allow_redirects=False,
                stream=True,
                **kwargs,
            )
            with response:
                ok = 200 <= response.status_code < 300
                body = _read_capped(response, limit if ok else MAX_ERROR_BYTES, path)
        except requests.RequestException as exc:
            raise RegistryError(
                ErrorCode.REGISTRY_UNREACHABLE,
                f"Cannot reach the registry at {self.base_url}",
                details=[type(exc).__name__],
                hint="Check the URL (`splice config get registry`) and your network.",
            ) from exc
        if not ok:
            raise _error(response, body)
        return response, body

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        _, body = self._request(method, path, **kwargs)
        try:
            value = json_text.parse(body.decode("utf-8"))
        except ValueError as exc:
            raise RegistryError(
                ErrorCode.REGISTRY_ERROR, "Registry error: the answer is not JSON"
            ) from exc
        if not isinstance(value, dict):
            raise RegistryError(ErrorCode.REGISTRY_ERROR, "Registry error: expected a JSON object")
        return value

    @staticmethod
    def _pkg(package_id: str, *rest: str) -> str:
        ns, name = split_package_id(package_id)
        parts = [ns, name, *rest]
        return "/packages/" + "/".join(quote(part, safe="") for part in parts)

    # -- reads ------------------------------------------------------------------------

    def search(self, query: str, *, limit: int = 20) -> dict[str, Any]:
        return self._json("GET", "/packages/search", params={"q": query, "limit": str(limit)})

    def package(self, package_id: str) -> dict[str, Any]:
        return self._json("GET", self._pkg(package_id))

    def versions(self, package_id: str, *, cursor: str | None = None) -> dict[str, Any]:
        params = {"cursor": cursor} if cursor is not None else None
        return self._json("GET", self._pkg(package_id, "versions"), params=params)

    def version(self, package_id: str, version: str) -> dict[str, Any]:
        return self._json("GET", self._pkg(package_id, version))

    def provenance(self, package_id: str, version: str) -> dict[str, Any]:
        return self._json("GET", self._pkg(package_id, version, "provenance"))

    def download(self, package_id: str, version: str) -> bytes:
        """The artifact bytes (≤ 5 MiB, refused while reading past that).

        Nothing about them is trusted here: the installer verifies them against the lock or
        the metadata (SHA-256 and size), which no header can stand in for.
        """
        accept = f"{TARGZ_CONTENT_TYPE}, {BUNDLE_CONTENT_TYPE}"
        _, body = self._request(
            "GET",
            self._pkg(package_id, version, "download"),
            limit=MAX_ARCHIVE_BYTES,
            headers={"accept": accept},
        )
        return body

    def namespace(self, namespace: str) -> dict[str, Any]:
        return self._json("GET", _ns(namespace))

    def keys(self, namespace: str) -> dict[str, Any]:
        return self._json("GET", _ns(namespace) + "/keys")

    # -- authenticated ----------------------------------------------------------------

    def publish(self, archive: bytes) -> dict[str, Any]:
        content_type = TARGZ_CONTENT_TYPE if archive[:2] == b"\x1f\x8b" else BUNDLE_CONTENT_TYPE
        return self._json("POST", "/publish", data=archive, headers={"content-type": content_type})

    def whoami(self) -> dict[str, Any]:
        return self._json("GET", "/auth/whoami")

    def tokens(self) -> dict[str, Any]:
        return self._json("GET", "/auth/tokens")

    def create_token(
        self,
        *,
        label: str | None = None,
        namespaces: Sequence[str] | None = None,
        expires_in_days: int | None = None,
    ) -> dict[str, Any]:
        body = token_body(label, namespaces, expires_in_days)
        return self._json("POST", "/auth/tokens", json=body)

    def revoke_token(self, token_id: str) -> dict[str, Any]:
        return self._json("DELETE", "/auth/tokens/" + quote(token_id, safe=""))

    def set_maintainer(self, namespace: str, user: str, *, add: bool) -> dict[str, Any]:
        path = _ns(namespace) + "/maintainers/" + quote(user, safe="")
        return self._json("PUT" if add else "DELETE", path)

    def add_key(self, namespace: str, public_key: str) -> dict[str, Any]:
        return self._json("POST", _ns(namespace) + "/keys", json={"publicKey": public_key})

    def revoke_key(self, namespace: str, key_id: str) -> dict[str, Any]:
        return self._json("DELETE", _ns(namespace) + "/keys/" + quote(key_id, safe=""))

    def add_signature(
        self, package_id: str, version: str, key_id: str, signature: str
    ) -> dict[str, Any]:
        body = {"keyId": key_id, "signature": signature}
        return self._json("POST", self._pkg(package_id, version, "signatures"), json=body)

    def close(self) -> None:
        self._session.close()


def _ns(namespace: str) -> str:
    return "/namespaces/" + quote(namespace.removeprefix("@"), safe="")


def _read_capped(response: requests.Response, limit: int, path: str) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(path, limit)
    chunks: list[bytes] = []
    total = 0
    for chunk in response.iter_content(CHUNK):
        total += len(chunk)
        if total > limit:
            raise _too_large(path, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(path: str, limit: int) -> RegistryError:
    return RegistryError(
        ErrorCode.REGISTRY_ERROR,
        f"Registry error: the answer to {path} is larger than {limit} bytes",
        hint="The registry may be misbehaving; nothing was kept.",
    )


def _error(response: requests.Response, raw: bytes) -> RegistryError:
    message: str | None = None
    details: list[str] = []
    server_code: str | None = None
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        message = error.get("message") if isinstance(error.get("message"), str) else None
        server_code = error.get("code") if isinstance(error.get("code"), str) else None
        raw = error.get("details")
        if isinstance(raw, list):
            details = [str(item) for item in raw]
    return error_for_status(
        response.status_code,
        message,
        details,
        server_code=server_code,
        retry_after=response.headers.get("retry-after"),
    )
