"""``admin migrate --artifacts`` (SQLite + files → PostgreSQL + S3) killed at each kind of step.

The migration runs in a forked child that sends itself ``SIGKILL`` at one of its steps
(before and after the artifacts are written to the bucket, after the first and the last
table's rows are sent; the kill is ``kill -9``: no
``finally``, no rollback by our code, PostgreSQL sees the connection drop). Each step's run is the
re-run of the one killed before it, on the same target. After every kill the
target holds no registry (the one transaction was never committed), the source is unchanged,
and the run after the last kill completes: every version row names the bucket, whose object
has the row's SHA-256 and size. Objects a killed run left in the bucket are the same bytes
under their content-addressed key, which the re-run keeps.
"""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable
from pathlib import Path

from splice_build.registry.blobs.filesystem import FilesystemBlobStore
from splice_build.registry.blobs.s3 import S3BlobStore
from splice_build.registry.db.sqlite import SqliteMetadataStore
from splice_build.registry.db.transfer import TABLES, copy_to_postgres
from splice_build.registry.service.artifacts import migrate as migrate_artifacts
from splice_build.registry.service.artifacts import read_artifact
from splice_build.registry.service.auth import Caller
from splice_build.registry.service.registry_service import RegistryService
from splice_build.registry.storage import ARTIFACTS_DIR, DB_FILE
from splice_build.spec.digests import integrity_of
from testing.registry import NO_LIMITS, artifact
from testing.registry_backends import S3_PREFIX, ScaleServices, make_backend

VERSIONS = ("1.0.0",)


def _run_until(step: int, migrate: Callable[[Callable[[], None]], None]) -> bool:
    """``migrate(hook)`` in a forked child killed just before the hook's ``step``-th call;
    True when it was killed, False when it ran to its end first."""
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery, only the migration
        calls = [0]

        def hook() -> None:
            calls[0] += 1
            if calls[0] == step:
                os.kill(os.getpid(), signal.SIGKILL)

        try:
            migrate(hook)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) or os.WEXITSTATUS(status) == 0, status
    return os.WIFSIGNALED(status)


def _published(tmp_path: Path) -> Path:
    """A data directory (SQLite + files) where alice published ``VERSIONS`` of @alice/tool."""
    data = tmp_path / "data"
    data.mkdir()
    service = RegistryService(
        SqliteMetadataStore(data / DB_FILE),
        FilesystemBlobStore(data / ARTIFACTS_DIR),
        limits=NO_LIMITS,
    )
    for version in VERSIONS:
        service.publish(
            Caller(internal_user="alice"), artifact(tmp_path / "p", "alice", "tool", version)
        )
    service.deps.meta.close()
    FilesystemBlobStore(data / ARTIFACTS_DIR)  # as a restart: what an opening writes is there
    return data


def test_a_migration_killed_at_any_step_converges(
    scale_services: ScaleServices, tmp_path: Path
) -> None:
    data = _published(tmp_path)
    artifacts = {
        path: path.read_bytes() for path in (data / ARTIFACTS_DIR).rglob("*") if path.is_file()
    }
    target = make_backend("postgres", tmp_path / "pg", scale_services)
    client = scale_services.s3.client()  # used only by the children, each on its own copy

    def migrate(hook: Callable[[], None]) -> None:
        to = S3BlobStore(target.bucket or "", S3_PREFIX, client=client)
        put = to.put
        to.put = lambda key, value: (hook(), put(key, value))[1]  # type: ignore[method-assign]
        copy_to_postgres(
            data / DB_FILE,
            target.database_url or "",
            blobs_from=FilesystemBlobStore(data / ARTIFACTS_DIR),
            blobs_to=to,
            progress=lambda _line: hook(),
        )

    # The hook's calls: one per table after its rows are sent (TABLES), one before each put
    # (the puts come before the versions rows) and one when the artifacts are checked. Kills
    # after the first table, before the first and after the last put, and after the last
    # table (just before the commit): between them every step is inside the same open
    # transaction, which a kill there ends alike.
    before_versions = TABLES.index("versions")
    kills = (
        1,
        before_versions + 1,
        before_versions + len(VERSIONS) + 1,
        len(TABLES) + len(VERSIONS) + 1,
    )
    counts = "SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM versions)"
    for step in kills:
        assert _run_until(step, migrate), step
        assert target.query(counts) == [(0, 0)], step
    assert not _run_until(kills[-1] + 1, migrate)
    files = {p: p.read_bytes() for p in (data / ARTIFACTS_DIR).rglob("*") if p.is_file()}
    assert files == artifacts
    left = SqliteMetadataStore(data / DB_FILE)
    assert {row.artifact_backend for row in left.all_versions()} == {"fs"}
    left.close()
    copied = target.query("SELECT artifact_key, integrity, size, artifact_backend FROM versions")
    objects = target.artifacts()
    assert len(copied) == len(VERSIONS) and len(objects) == len(VERSIONS)
    for key, integrity, size, backend in copied:
        assert backend == "s3" and integrity_of(objects[key]) == integrity
        assert len(objects[key]) == size


def test_migrate_artifacts_killed_at_every_step_serves_only_whole_artifacts(
    scale_services: ScaleServices, tmp_path: Path
) -> None:
    """``admin migrate-artifacts`` (files → S3, the metadata stays in SQLite) killed before
    each write to the bucket and before each row is pointed at it: every version still
    reads, from the store its row names, the bytes its row records, and the next run ends
    with every row in the bucket."""
    data = _published(tmp_path)
    bucket = scale_services.s3.create_bucket("moved")
    client = scale_services.s3.client()  # used only by the children, each on its own copy

    def service() -> RegistryService:
        return RegistryService(
            SqliteMetadataStore(data / DB_FILE),
            S3BlobStore(bucket, S3_PREFIX, client=client),
            limits=NO_LIMITS,
            previous_blobs=(FilesystemBlobStore(data / ARTIFACTS_DIR),),
        )

    def migrate(hook: Callable[[], None]) -> None:
        deps = service().deps
        put, point = deps.blobs.put, deps.meta.set_artifact_location
        deps.blobs.put = lambda key, value: (hook(), put(key, value))[1]  # type: ignore[method-assign]
        deps.meta.set_artifact_location = lambda *a, **k: (hook(), point(*a, **k))[1]  # type: ignore[method-assign]
        assert migrate_artifacts(deps).skipped == ()

    def backends() -> set[str]:
        deps = service().deps
        try:
            for row in deps.meta.all_versions():
                assert integrity_of(read_artifact(deps, row)) == row.integrity, row
            return {row.artifact_backend for row in deps.meta.all_versions()}
        finally:
            deps.meta.close()

    seen = []
    for step in range(1, 2 * len(VERSIONS) + 1):
        assert _run_until(step, migrate), step
        seen.append(backends())
    assert not _run_until(2 * len(VERSIONS) + 1, migrate)
    assert seen[-1] == {"fs"} and backends() == {"s3"}
