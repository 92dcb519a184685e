"""Where a version's artifact is read from, and moving artifacts into the current store.

A version row names the store that holds its bytes (``artifact_backend``). After a
registry switches stores (the data directory's files → S3), older rows still name the
previous one: ``read_artifact`` reads them from there (``Deps.previous_blobs``) until
``migrate`` (``POST /admin/artifacts/migrate``, ``splice registry admin
migrate-artifacts``) has copied them over.

``migrate`` copies, for every version whose row names another store, the bytes from that
store into ``Deps.blobs``: the source bytes must have the row's SHA-256 and size, and so
must the copy read back from the target; only then does the row name the new store
(``artifact_backend`` / ``artifact_url``, the two columns the immutability triggers let
change). Versions already in the current store are left alone, so a second run does
nothing. A source artifact that is missing, damaged or in a store this registry cannot
reach is reported as skipped and its row is kept; a failing target aborts the run
(``ARTIFACT_STORAGE_FAILED``), since every further copy would fail the same way.
"""

from __future__ import annotations

import logging

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass
from splice_build.registry.blobs.interface import BlobReader, BlobStore
from splice_build.registry.db.interface import Version
from splice_build.registry.service.deps import Deps
from splice_build.spec.digests import integrity_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Skipped:
    version: str  # "@ns/name@1.0.0"
    reason: str


@dataclass(frozen=True)
class MigrationReport:
    backend: str  # the store everything was copied into
    migrated: tuple[str, ...]
    skipped: tuple[Skipped, ...]

    def to_json(self) -> dict[str, list[str]]:
        """The API response (docs/compatibility.md#registry-api): version ids only; reasons go to the log."""
        return {
            "migrated": list(self.migrated),
            "skipped": [item.version for item in self.skipped],
        }


def store_of(deps: Deps, row: Version) -> BlobStore | None:
    """The store a row names: the current one, or one of the previous stores."""
    for store in (deps.blobs, *deps.previous_blobs):
        if store.backend == row.artifact_backend:
            return store
    return None


def read_artifact(deps: Deps, row: Version) -> bytes:
    """The stored bytes of one version (unverified: downloads are checked by the client)."""
    store = store_of(deps, row) or deps.blobs
    return store.get(row.artifact_key)


def artifact_reader(deps: Deps, row: Version) -> BlobReader:
    """``read_artifact`` a piece at a time (a download over HTTP), never held whole."""
    store = store_of(deps, row) or deps.blobs
    return store.reader(row.artifact_key)


def _ref(row: Version) -> str:
    return f"{row.package_id}@{row.version}"


def _check(row: Version, data: bytes) -> str | None:
    """Why ``data`` is not this version's artifact, or None when it is."""
    integrity = integrity_of(data)
    if integrity != row.integrity:
        return f"SHA-256 mismatch (recorded {row.integrity}, stored {integrity})"
    if len(data) != row.size:
        return f"size mismatch (recorded {row.size}, stored {len(data)})"
    return None


def _copy(deps: Deps, row: Version, source: BlobStore) -> str | None:
    """Copy one artifact into the current store; the reason it was skipped, or None."""
    try:
        data = source.get(row.artifact_key)
    except RegistryError as exc:
        return exc.message
    problem = _check(row, data)
    if problem is not None:
        return problem
    target = deps.blobs
    try:
        target.put(row.artifact_key, data)
    except RegistryError as exc:
        if exc.code is not ErrorCode.VERSION_EXISTS:
            raise
        return f"the {target.backend} store already holds different bytes under this key"
    copy_problem = _check(row, target.get(row.artifact_key))
    if copy_problem is not None:
        raise RegistryError(
            ErrorCode.ARTIFACT_STORAGE_FAILED,
            f"The copy of {_ref(row)} in the {target.backend} store is wrong: {copy_problem}",
        )
    deps.meta.set_artifact_location(
        row.package_id, row.version, backend=target.backend, url=target.url(row.artifact_key)
    )
    return None


def migrate(deps: Deps) -> MigrationReport:
    """Copy every artifact that is not in the current store yet (see the module docstring)."""
    migrated: list[str] = []
    skipped: list[Skipped] = []
    for row in deps.meta.all_versions():
        if row.artifact_backend == deps.blobs.backend:
            continue
        source = store_of(deps, row)
        reason = (
            f"no {row.artifact_backend!r} artifact store is configured"
            if source is None
            else _copy(deps, row, source)
        )
        if reason is None:
            migrated.append(_ref(row))
        else:
            log.warning("artifact of %s not migrated: %s", _ref(row), reason)
            skipped.append(Skipped(_ref(row), reason))
    return MigrationReport(deps.blobs.backend, tuple(migrated), tuple(skipped))
