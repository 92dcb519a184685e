"""Moving artifacts into the configured store: ``POST /admin/artifacts/migrate`` and
``splice registry admin migrate-artifacts``.

A registry keeps its artifacts in the data directory, then is restarted with an S3 bucket
configured; its metadata stays where it was (SQLite, or PostgreSQL for the ``postgres``
kind). Versions from before the switch stay downloadable, and migrating copies them into
the bucket, verified, so that the data directory's copies are no longer needed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import requests

from splice_build.registry.blobs.filesystem import FilesystemBlobStore
from splice_build.registry.db.sqlite import SqliteMetadataStore
from splice_build.registry.service.artifacts import migrate as migrate_artifacts
from splice_build.registry.service.auth import Caller
from splice_build.registry.service.registry_service import RegistryService
from splice_build.registry.storage import ARTIFACTS_DIR
from testing.cli import run_splice
from testing.registry import NO_LIMITS, artifact
from testing.registry_backends import S3_PREFIX, ScaleServices, StoreBackend, make_backend
from testing.registry_memory_blobs import MemoryBlobStore
from testing.registry_server import ADMIN_TOKEN, RunningRegistry, registry_server, user_token

VERSIONS = (("tool", "1.0.0"), ("tool", "1.1.0"), ("other", "1.0.0"))
ROW_COLUMNS = "package_id, version, manifest, integrity, size, artifact_key, provenance"


@pytest.fixture
def stores(
    backend_kind: str, scale_services: ScaleServices, tmp_path: Path
) -> tuple[StoreBackend, dict[str, str], dict[str, str], str]:
    """(store, env before the switch, env after it, the new bucket)."""
    store = make_backend(backend_kind, tmp_path / "data", scale_services)
    before = {k: v for k, v in store.env.items() if k != "SPLICE_REGISTRY_ARTIFACTS"}
    bucket = scale_services.s3.create_bucket("migrated")
    after = {
        **before,
        **scale_services.s3.env(),
        "SPLICE_REGISTRY_ARTIFACTS": f"s3://{bucket}/{S3_PREFIX}",
    }
    return store, before, after, bucket


def publish_all(server: RunningRegistry, root: Path) -> dict[str, bytes]:
    token = user_token(server, "mover")
    published = {}
    for name, version in VERSIONS:
        data = artifact(root, "mover", name, version)
        response = requests.post(
            server.url + "/publish",
            data=data,
            headers={"authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert response.status_code == 201, response.text
        published[f"@mover/{name}@{version}"] = data
    return published


def rows(store: StoreBackend) -> dict[str, tuple]:
    found = store.query(f"SELECT {ROW_COLUMNS}, artifact_backend FROM versions")
    return {f"{row[0]}@{row[1]}": row for row in found}


def bucket_objects(services: ScaleServices, bucket: str) -> dict[str, bytes]:
    client = services.s3.client()
    listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {
        item["Key"].removeprefix(S3_PREFIX + "/"): client.get_object(
            Bucket=bucket, Key=item["Key"]
        )["Body"].read()
        for item in listed
    }


def migrate(server: RunningRegistry, token: str | None = ADMIN_TOKEN) -> requests.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return requests.post(server.url + "/admin/artifacts/migrate", headers=headers, timeout=60)


def test_http_migrate_copies_verifies_and_is_idempotent(
    stores: tuple[StoreBackend, dict[str, str], dict[str, str], str],
    scale_services: ScaleServices,
    tmp_path: Path,
) -> None:
    store, before, after, bucket = stores
    data = store.data
    with registry_server(data, env=before) as server:
        published = publish_all(server, tmp_path / "packages")
    original = rows(store)
    assert {row[-1] for row in original.values()} == {"fs"}
    damaged = "@mover/other@1.0.0"
    (data / ARTIFACTS_DIR / original[damaged][5]).write_bytes(b"not the artifact")

    with registry_server(data, env=after) as server:
        old = requests.get(f"{server.url}/packages/mover/tool/1.0.0/download", timeout=10)
        assert old.content == published["@mover/tool@1.0.0"]  # still served from the files
        assert migrate(server, None).status_code == 401
        assert migrate(server, "splice_" + "w" * 43).status_code == 403
        first = migrate(server)
        assert first.status_code == 200, first.text
        assert first.json() == {
            "migrated": ["@mover/tool@1.0.0", "@mover/tool@1.1.0"],
            "skipped": [damaged],
        }
        moved = rows(store)
        objects = bucket_objects(scale_services, bucket)
        for ref in ("@mover/tool@1.0.0", "@mover/tool@1.1.0"):
            assert moved[ref][-1] == "s3"
            assert moved[ref][:-1] == original[ref][:-1]  # nothing but the location changed
            assert objects[original[ref][5]] == published[ref]
        assert moved[damaged] == original[damaged]
        assert original[damaged][5] not in objects

        second = migrate(server)
        assert second.json() == {"migrated": [], "skipped": [damaged]}
        for ref in ("@mover/tool@1.0.0", "@mover/tool@1.1.0"):
            (data / ARTIFACTS_DIR / original[ref][5]).unlink()
        served = requests.get(f"{server.url}/packages/mover/tool/1.1.0/download", timeout=10)
        assert served.status_code == 200
        digest = "sha256-" + hashlib.sha256(served.content).hexdigest()
        assert served.headers["x-splice-integrity"] == digest == original["@mover/tool@1.1.0"][3]


def test_cli_migrate_artifacts(
    stores: tuple[StoreBackend, dict[str, str], dict[str, str], str],
    scale_services: ScaleServices,
    tmp_path: Path,
) -> None:
    store, before, after, bucket = stores
    with registry_server(store.data, env=before) as server:
        published = publish_all(server, tmp_path / "packages")
    args = ("registry", "admin", "migrate-artifacts", "--data", str(store.data))
    done = run_splice(*args, "--json", env=after)
    assert done.code == 0, done.stderr
    assert done.json() == {"migrated": sorted(published), "skipped": []}
    assert {row[-1] for row in rows(store).values()} == {"s3"}
    assert sorted(bucket_objects(scale_services, bucket).values()) == sorted(published.values())
    again = run_splice(*args, env=after)
    assert again.code == 0 and again.stdout.strip() == "Migrated to s3: none"


def test_service_migrate_between_in_process_stores(tmp_path: Path) -> None:
    """Without S3: from the in-memory store into files, a missing artifact is skipped."""
    meta_path = tmp_path / "registry.db"
    memory = MemoryBlobStore()
    first = RegistryService(SqliteMetadataStore(meta_path), memory, limits=NO_LIMITS)
    caller = Caller(internal_user="mover")
    for name, version in VERSIONS[:2]:
        data = artifact(tmp_path / "packages", "mover", name, version)
        first.publish(caller, data)
    first.deps.meta.close()
    files = FilesystemBlobStore(tmp_path / "files")
    orphan = SqliteMetadataStore(meta_path)
    service = RegistryService(orphan, files, limits=NO_LIMITS)
    unreachable = migrate_artifacts(service.deps)
    assert unreachable.migrated == ()
    assert [item.reason for item in unreachable.skipped] == [
        "no 'memory' artifact store is configured"
    ] * 2
    service = RegistryService(orphan, files, limits=NO_LIMITS, previous_blobs=(memory,))
    report = migrate_artifacts(service.deps)
    assert report.migrated == ("@mover/tool@1.0.0", "@mover/tool@1.1.0")
    assert [row.artifact_backend for row in orphan.all_versions()] == ["fs", "fs"]
    for row in orphan.all_versions():
        assert files.get(row.artifact_key) == memory.get(row.artifact_key)
    assert migrate_artifacts(service.deps).to_json() == {"migrated": [], "skipped": []}
    orphan.close()
