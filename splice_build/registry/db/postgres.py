"""PostgreSQL metadata store (``psycopg`` 3 with a connection pool): the back end for a
registry served by several processes.

The queries are the SQLite store's (``db.sql_store``, placeholders translated); what
differs is PostgreSQL's means:

- schema: the numbered migrations of ``migrations/`` with PostgreSQL's spelling from
  ``migrations_pg/`` where it differs (``db.migrate``), applied under an advisory lock so concurrent starters apply each exactly once; the level
  is kept in ``splice_schema_version``.
- immutability: PL/pgSQL triggers refuse updates of a version's identity, deletes (and
  ``TRUNCATE``) and a second provenance write, for every client of the database.
- publish isolation: ``insert_version`` runs in one transaction that first takes a
  transaction-scoped advisory lock on the package id, so concurrent publishes of one package
  (from any number of server processes) are serialized; the primary key turns a lost race
  into ``VERSION_EXISTS``, and "latest" is the package row's pointer, compared with the new
  version under that lock (no read of the other versions). The publisher's token, namespace
  and maintainer rows are read ``FOR SHARE`` in that transaction: a revocation, an owner
  change or a maintainer's removal waits for an in-flight publish to end, and one that
  ended first is seen by it (READ COMMITTED re-reads a row it waited for).
- rate-limit counters are single-statement upserts, atomic across processes.

Every connection runs in autocommit mode; writes open explicit transactions. Failures of a
write become ``METADATA_WRITE_FAILED``, failures of a read ``STORAGE_UNAVAILABLE`` (503).
Sorting uses the ``"C"`` collation, so listings order exactly as SQLite's (code points).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.db.migrate import FILLS, migrations, newer_schema
from splice_build.registry.db.sql_store import (
    Params,
    Row,
    SqlMetadataStore,
    Transaction,
    first_line,
    pyformat,
    write_failed,
)

if TYPE_CHECKING:
    import psycopg

MIGRATIONS_DIR = "migrations_pg"
SCHEMA_TABLE = "splice_schema_version"
LOCK_CLASS = 0x5B1CE  # first key of every advisory lock this store takes
CONNECT_TIMEOUT = 10  # seconds, for a database that is down or unreachable
POOL_SIZE = 10
INSTALL_HINT = "pip install 'splice-build[scale]'"
_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def display_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return _PASSWORD.sub(r"\1***@", url)


def _psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise RegistryError(
            ErrorCode.STORAGE_UNAVAILABLE,
            "PostgreSQL support is not installed",
            hint=f"Install it with: {INSTALL_HINT}",
        ) from exc
    return psycopg, psycopg_pool


def connect(url: str) -> psycopg.Connection[Any]:
    """One autocommit connection returning rows as dicts; unreachable → STORAGE_UNAVAILABLE."""
    psycopg, _ = _psycopg()
    from psycopg.rows import dict_row

    try:
        conn: psycopg.Connection[Any] = psycopg.connect(
            url, autocommit=True, row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT
        )
    except psycopg.Error as exc:
        raise RegistryError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"Cannot connect to PostgreSQL at {display_url(url)}: {first_line(exc)}",
        ) from exc
    return conn


def apply_migrations(conn: psycopg.Connection[Any]) -> int:
    """Bring the schema up to date (one transaction, serialized by an advisory lock)."""
    from psycopg.rows import tuple_row

    pending = migrations(MIGRATIONS_DIR)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_CLASS,))
        conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER NOT NULL)")
        row = conn.execute(f"SELECT coalesce(max(version), 0) AS level FROM {SCHEMA_TABLE}")
        level = int(row.fetchone()["level"])
        if level > len(pending):
            raise newer_schema(level, len(pending))
        for migration in pending[level:]:
            conn.execute(migration.sql)
            fill = FILLS.get(migration.number)
            if fill is not None:
                with conn.cursor(row_factory=tuple_row) as cursor:
                    rows = cursor.execute(fill.select).fetchall()
                    cursor.executemany(pyformat(fill.update), fill.updates(rows))
            conn.execute(f"INSERT INTO {SCHEMA_TABLE} (version) VALUES (%s)", (migration.number,))
    return len(pending)


class PostgresMetadataStore(SqlMetadataStore):
    """``MetadataStore`` over a PostgreSQL database (``postgresql://user@host/db``)."""

    COLLATION = ' COLLATE "C"'
    ROW_LOCK = " FOR SHARE"

    def __init__(self, url: str, *, pool_size: int = POOL_SIZE) -> None:
        super().__init__()
        psycopg, psycopg_pool = _psycopg()
        from psycopg.rows import dict_row

        self.url = url
        self._errors = psycopg.Error
        self._unique_error = psycopg.errors.UniqueViolation
        with connect(url) as conn:
            try:
                apply_migrations(conn)
            except psycopg.Error as exc:
                raise write_failed(exc) from exc
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "row_factory": dict_row},
            open=False,
            name="splice-registry",
        )
        self._pool.open(wait=False)

    def close(self) -> None:
        self._pool.close()

    # -- plumbing ---------------------------------------------------------------------

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection (admin tools and tests; the store uses its own)."""
        with self._pool.connection() as conn:
            yield conn

    # -- dialect hooks ----------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        return pyformat(sql)

    def _fetch(self, sql: str, params: Params) -> list[Row]:
        try:
            with self._pool.connection() as conn:
                return list(conn.execute(sql, params).fetchall())
        except self._errors as exc:
            raise RegistryError(
                ErrorCode.STORAGE_UNAVAILABLE, f"Metadata read failed: {first_line(exc)}"
            ) from exc

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except self._errors as exc:
            raise write_failed(exc) from exc

    def _is_unique_violation(self, exc: BaseException | None) -> bool:
        return isinstance(exc, self._unique_error)

    def _serialize_publish(self, tx: Transaction, package_id: str) -> None:
        """A transaction-scoped advisory lock on the package id, across server processes."""
        tx.execute("SELECT pg_advisory_xact_lock(?, hashtext(?))", LOCK_CLASS, package_id)
