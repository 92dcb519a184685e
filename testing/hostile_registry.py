"""The malicious registry: the real server behind a proxy that twists one answer at a time.

``hostile_registry(store)`` serves ``store`` through :func:`testing.counting_proxy.counting_proxy`;
``registry.twist`` (settable at any time) rewrites the JSON answers and ``registry.twist_headers``
the headers of every answer, ``None`` passes them through. ``signed_store`` publishes a package and signs it with a registered key, so a test can
install it honestly first and then turn the registry against the project.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testing.counting_proxy import CountingProxy, Headers, Rewrite, RewriteHeaders, counting_proxy
from testing.registry_fixtures import publish
from testing.registry_server import registry_server
from testing.signing import new_key


@dataclass
class HostileRegistry:
    url: str
    proxy: CountingProxy
    twist: Rewrite | None = None
    twist_headers: RewriteHeaders | None = None


@contextmanager
def hostile_registry(store: Path) -> Iterator[HostileRegistry]:
    """The proxy for the block; answers are honest until ``twist`` is set."""
    hostile = HostileRegistry("", CountingProxy(""))

    def rewrite(path: str, answer: Any) -> Any:
        return answer if hostile.twist is None else hostile.twist(path, answer)

    def rewrite_headers(path: str, headers: Headers) -> Headers:
        return headers if hostile.twist_headers is None else hostile.twist_headers(path, headers)

    with (
        registry_server(store, admin=False) as server,
        counting_proxy(server.url, rewrite, rewrite_headers=rewrite_headers) as p,
    ):
        hostile.url, hostile.proxy = p.url, p
        yield hostile


@dataclass(frozen=True)
class SignedPackage:
    package_id: str
    version: str
    integrity: str
    key_id: str


def signed_store(
    store: Path, work: Path, *, namespace: str = "acme", name: str = "greeter"
) -> SignedPackage:
    """Publish ``@namespace/name@1.0.0`` into ``store`` and sign it with a key registered for the
    namespace (through the embedded client, as the store's local owner)."""
    from splice_build.registry.client.embedded import EmbeddedRegistryClient
    from splice_build.registry.client.signing import upload_signature

    published = publish(store, work, namespace=namespace, name=name)
    key = new_key(work / "keys", namespace)
    client = EmbeddedRegistryClient(store)
    package_id = f"@{namespace}/{name}"
    try:
        client.add_key(f"@{namespace}", key.public_key)
        upload_signature(client, key, package_id, "1.0.0", published["integrity"])
    finally:
        client.close()
    return SignedPackage(package_id, "1.0.0", published["integrity"], key.key_id)


def is_version_answer(path: str, package: SignedPackage) -> bool:
    """The path of ``GET /packages/:ns/:name/:version`` for ``package``."""
    return path.split("?", 1)[0] == f"/packages/{package.package_id[1:]}/{package.version}"
