"""Move a registry from its SQLite file to PostgreSQL (``splice registry admin migrate``).

Every table is copied with its rows unchanged (same ids, hashes, timestamps, provenance)
in one PostgreSQL transaction, into a database that holds no registry yet; rate-limit
counters are transient and stay behind. The source is held alone for the whole copy
(``SqliteMetadataStore.exclusive``: ``STATE_LOCKED`` while a server or any other process has
it open, and none opens it meanwhile) and read as one snapshot, so what is copied is the
whole store at one moment and no publish lands in it while, or after, it is copied. With a target artifact store, every artifact is
read from the source store, checked against its version row (SHA-256 and size) and written
to the target *before* the metadata commits, the order a publish uses; the version rows
then name the new store (``artifact_backend`` / ``artifact_url`` are the only columns the
immutability triggers let change). A failure leaves the target database empty and can be
retried: artifact writes are idempotent.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass
from splice_build.registry.blobs.interface import BlobStore
from splice_build.registry.db.postgres import PostgresMetadataStore
from splice_build.registry.db.sqlite import SqliteMetadataStore
from splice_build.spec.digests import integrity_of

# Parents before children (foreign keys); rate_limits is deliberately absent.
TABLES = (
    "users",
    "tokens",
    "namespaces",
    "namespace_maintainers",
    "packages",
    "versions",
    "signing_keys",
    "signatures",
)
# What a registry holds beyond a new database's own rows (the reserved namespaces of
# migration 0003, unowned): any of it makes the target occupied.
_OCCUPIED = {
    **{table: f"SELECT count(*) AS n FROM {table}" for table in TABLES if table != "namespaces"},
    "namespaces": "SELECT count(*) AS n FROM namespaces WHERE owner_id IS NOT NULL OR reserved = 0",
}


@dataclass(frozen=True)
class TransferReport:
    rows: dict[str, int]  # table → rows copied
    artifacts: int  # artifacts copied to the target store (0 when it stays)


def copy_to_postgres(
    source: Path,
    target_url: str,
    *,
    blobs_from: BlobStore | None = None,
    blobs_to: BlobStore | None = None,
    progress: Callable[[str], None] = lambda _line: None,
) -> TransferReport:
    """Copy the SQLite store at ``source`` into the empty PostgreSQL database ``target_url``."""
    if (blobs_from is None) != (blobs_to is None):
        raise AssertionError("BUG: artifacts move with a source and a target store, or not at all")
    if not source.is_file():
        raise RegistryError(ErrorCode.NOT_FOUND, f"No registry database at {source}")
    held = SqliteMetadataStore(source)  # brings the source schema up to date first
    try:
        with held.exclusive():
            return _copy(source, target_url, blobs_from, blobs_to, progress)
    finally:
        held.close()


def _copy(
    source: Path,
    target_url: str,
    blobs_from: BlobStore | None,
    blobs_to: BlobStore | None,
    progress: Callable[[str], None],
) -> TransferReport:
    """The copy itself, of one snapshot of the source (a single read transaction)."""
    reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True, isolation_level=None)
    target = None
    try:
        reader.execute("BEGIN")
        target = PostgresMetadataStore(target_url, pool_size=1)
        with target.connection() as conn, conn.transaction():
            _refuse_occupied(conn)
            rows: dict[str, int] = {}
            artifacts = 0
            for table in TABLES:
                cursor = reader.execute(f"SELECT * FROM {table}")
                columns = [d[0] for d in cursor.description]
                records = [list(record) for record in cursor.fetchall()]
                if table == "versions" and blobs_from is not None and blobs_to is not None:
                    artifacts = _move_artifacts(columns, records, blobs_from, blobs_to, progress)
                _insert(conn, table, columns, records)
                rows[table] = len(records)
                progress(f"{table}: {len(records)} rows")
            conn.execute(
                "SELECT setval(pg_get_serial_sequence('users', 'id'), "
                "coalesce((SELECT max(id) FROM users), 1), "
                "(SELECT count(*) > 0 FROM users))"
            )
    except RegistryError:
        raise
    except Exception as exc:
        if not _is_database_error(exc):
            raise
        raise RegistryError(
            ErrorCode.METADATA_WRITE_FAILED, f"Migration failed, nothing was committed: {exc}"
        ) from exc
    finally:
        reader.close()
        if target is not None:
            target.close()
    return TransferReport(rows, artifacts)


def _refuse_occupied(conn: Any) -> None:
    counts = {table: conn.execute(query).fetchone()["n"] for table, query in _OCCUPIED.items()}
    if any(counts.values()):
        raise RegistryError(
            ErrorCode.METADATA_WRITE_FAILED,
            "The target database already holds a registry; nothing was copied",
            details=[f"{table}: {n} rows" for table, n in counts.items() if n],
            hint="Migrate into a new, empty database.",
        )


def _insert(conn: Any, table: str, columns: list[str], records: list[list[Any]]) -> None:
    if not records:
        return
    names = ", ".join(columns)
    if table == "namespaces":  # the reserved names are already there from migration 0003
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "name")
        placeholders = ", ".join(["%s"] * len(columns))
        with conn.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO namespaces ({names}) VALUES ({placeholders}) "
                f"ON CONFLICT (name) DO UPDATE SET {updates}",
                records,
            )
        return
    with conn.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for record in records:
            copy.write_row(record)


def _move_artifacts(
    columns: list[str],
    records: list[list[Any]],
    blobs_from: BlobStore,
    blobs_to: BlobStore,
    progress: Callable[[str], None],
) -> int:
    """Copy and check every artifact; point the (not yet inserted) rows at the new store."""
    at = {name: index for index, name in enumerate(columns)}
    for record in records:
        key = record[at["artifact_key"]]
        data = blobs_from.get(key)
        integrity = integrity_of(data)
        if integrity != record[at["integrity"]] or len(data) != record[at["size"]]:
            raise RegistryError(
                ErrorCode.ARTIFACT_STORAGE_FAILED,
                f"Artifact {key} does not match its version row; nothing was copied",
                details=[f"recorded: {record[at['integrity']]}", f"stored: {integrity}"],
            )
        blobs_to.put(key, data)
        record[at["artifact_backend"]] = blobs_to.backend
        record[at["artifact_url"]] = blobs_to.url(key)
    progress(f"artifacts: {len(records)} copied and verified")
    return len(records)


def _is_database_error(exc: BaseException) -> bool:
    import psycopg

    return isinstance(exc, psycopg.Error)
