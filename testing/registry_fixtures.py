"""Publish small real packages into a registry store for install tests.

``publish`` writes a package directory (``testing.packages``), packs it with the real packer
and publishes it through the embedded client into a store directory: ``SPLICE_HOME/registry``
for the embedded registry, or a served registry's ``--data`` directory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testing.packages import minimal_manifest, write_package


def publish(
    store: Path,
    work: Path,
    *,
    namespace: str = "acme",
    name: str = "greeter",
    version: str = "1.0.0",
    permissions: Mapping[str, Any] | None = None,
    files: Mapping[str, str | bytes] | None = None,
    manifest: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Publish ``@namespace/name@version`` into the registry store ``store``; the response.

    ``manifest`` holds further manifest fields (a hostile description, other tools).
    """
    from splice_build.registry.client.embedded import EmbeddedRegistryClient
    from splice_build.spec.pack import pack_directory

    overrides: dict[str, Any] = {"namespace": namespace, "name": name, "version": version}
    if permissions is not None:
        overrides["permissions"] = dict(permissions)
    overrides.update(manifest or {})
    directory = write_package(
        work / f"{namespace}-{name}-{version}", minimal_manifest(**overrides), files
    )
    packed = pack_directory(directory)
    store.mkdir(parents=True, exist_ok=True)
    client = EmbeddedRegistryClient(store)
    try:
        return client.publish(packed.archive)
    finally:
        client.close()


def embedded_store(home: Path) -> Path:
    """The embedded registry's store inside ``SPLICE_HOME``."""
    return home / "registry"


def new_project(root: Path, packages: Mapping[str, str] | None = None) -> Path:
    """A project directory with only ``splice.json``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "splice.json").write_text(
        json.dumps({"specVersion": 1, "packages": dict(packages or {})}, indent=2) + "\n",
        encoding="utf-8",
    )
    return root


def find_stored_artifact(data: Path, artifact: bytes) -> Path:
    """The file under a registry's data directory holding exactly ``artifact``."""
    for path in data.rglob("*"):
        if (
            path.is_file()
            and path.stat().st_size == len(artifact)
            and path.read_bytes() == artifact
        ):
            return path
    raise AssertionError(f"BUG: artifact not found under {data}")


def pinned(project: Path, package_id: str) -> tuple[str, str]:
    """The version ``splice.lock`` pins for ``package_id`` and the range ``splice.json`` saves."""
    lock = json.loads((project / "splice.lock").read_text())["packages"][package_id]["version"]
    return lock, json.loads((project / "splice.json").read_text())["packages"][package_id]
