"""PostgreSQL metadata store (``psycopg`` 3 with a connection pool): the back end for a
registry served by several processes.

The behaviour is the SQLite store's, with PostgreSQL's means:

- schema: the numbered migrations of ``migrations_pg/`` (the same sequence as SQLite's),
  applied under an advisory lock so concurrent starters apply each exactly once; the level
  is kept in ``splice_schema_version``.
- immutability: PL/pgSQL triggers refuse updates of a version's identity, deletes (and
  ``TRUNCATE``) and a second provenance write, for every client of the database.
- publish isolation: ``insert_version`` runs in one transaction that first takes a
  transaction-scoped advisory lock on the package id, so concurrent publishes of one package
  (from any number of server processes) are serialized; the primary key turns a lost race
  into ``VERSION_EXISTS``, and "latest" is computed over every committed version.
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
from splice_build.registry.db.interface import (
    LatestOf,
    Namespace,
    NewToken,
    NewVersion,
    Package,
    SearchHit,
    SignatureRow,
    SigningKeyRow,
    Token,
    User,
    Version,
    VersionSignature,
)
from splice_build.registry.db.migrate import migrations

if TYPE_CHECKING:
    import psycopg

MIGRATIONS_DIR = "migrations_pg"
SCHEMA_TABLE = "splice_schema_version"
LOCK_CLASS = 0x5B1CE  # first key of every advisory lock this store takes
CONNECT_TIMEOUT = 10  # seconds, for a database that is down or unreachable
POOL_SIZE = 10
INSTALL_HINT = "pip install 'splice-build[scale]'"
_VERSION_COLUMNS = (
    "package_id, version, manifest, integrity, size, artifact_key, published_by, "
    "published_at, artifact_backend, artifact_url, provenance"
)
_KEY_COLUMNS = "key_id, namespace, public_key, added_by, added_at, revoked_at"
_TOKEN_COLUMNS = (
    "id, user_id, label, created_at, last_used_at, revoked_at, expires_at, "
    "scope_namespaces, can_manage"
)
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
            f"Cannot connect to PostgreSQL at {display_url(url)}: {_first_line(exc)}",
        ) from exc
    return conn


def apply_migrations(conn: psycopg.Connection[Any]) -> int:
    """Bring the schema up to date (one transaction, serialized by an advisory lock)."""
    pending = migrations(MIGRATIONS_DIR)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_CLASS,))
        conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER NOT NULL)")
        row = conn.execute(f"SELECT coalesce(max(version), 0) AS level FROM {SCHEMA_TABLE}")
        level = int(row.fetchone()["level"])
        for migration in pending[level:]:
            conn.execute(migration.sql)
            conn.execute(f"INSERT INTO {SCHEMA_TABLE} (version) VALUES (%s)", (migration.number,))
    return len(pending)


class PostgresMetadataStore:
    """``MetadataStore`` over a PostgreSQL database (``postgresql://user@host/db``)."""

    def __init__(self, url: str, *, pool_size: int = POOL_SIZE) -> None:
        psycopg, psycopg_pool = _psycopg()
        from psycopg.rows import dict_row

        self.url = url
        self._errors = psycopg.Error
        self._unique = psycopg.errors.UniqueViolation
        with connect(url) as conn:
            try:
                apply_migrations(conn)
            except psycopg.Error as exc:
                raise _write_failed(exc) from exc
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

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection[Any]]:
        """One write transaction; database failures become METADATA_WRITE_FAILED."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except self._errors as exc:
            raise _write_failed(exc) from exc

    def _all(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        try:
            with self._pool.connection() as conn:
                return list(conn.execute(sql, params).fetchall())
        except self._errors as exc:
            raise RegistryError(
                ErrorCode.STORAGE_UNAVAILABLE, f"Metadata read failed: {_first_line(exc)}"
            ) from exc

    def _one(self, sql: str, *params: Any) -> dict[str, Any] | None:
        rows = self._all(sql, *params)
        return rows[0] if rows else None

    def _unique_violation(self, exc: RegistryError) -> bool:
        return isinstance(exc.__cause__, self._unique)

    # -- users ------------------------------------------------------------------------

    def create_user(self, name: str, *, now: str) -> User:
        try:
            with self._write() as conn:
                row = conn.execute(
                    "INSERT INTO users (name, created_at) VALUES (%s, %s) RETURNING id",
                    (name, now),
                ).fetchone()
        except RegistryError as exc:
            if self._unique_violation(exc):
                raise RegistryError(
                    ErrorCode.USER_EXISTS, f"User {name} already exists"
                ) from exc.__cause__
            raise
        return User(int(row["id"]), name, now)

    def user_by_name(self, name: str) -> User | None:
        row = self._one("SELECT id, name, created_at FROM users WHERE name = %s", name)
        return User(int(row["id"]), row["name"], row["created_at"]) if row else None

    def user_by_id(self, user_id: int) -> User | None:
        row = self._one("SELECT id, name, created_at FROM users WHERE id = %s", user_id)
        return User(int(row["id"]), row["name"], row["created_at"]) if row else None

    # -- tokens -----------------------------------------------------------------------

    def insert_token(self, token: NewToken) -> Token:
        scope = ",".join(sorted(token.namespaces)) if token.namespaces is not None else None
        with self._write() as conn:
            conn.execute(
                "INSERT INTO tokens (id, user_id, token_hash, label, created_at, expires_at, "
                "scope_namespaces, can_manage) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    token.id,
                    token.user_id,
                    token.token_hash,
                    token.label,
                    token.created_at,
                    token.expires_at,
                    scope,
                    int(token.can_manage),
                ),
            )
        found = self.token_by_id(token.id)
        assert found is not None, "BUG: inserted token not found"
        return found

    def token_by_hash(self, token_hash: str) -> Token | None:
        row = self._one(f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE token_hash = %s", token_hash)
        return _token(row) if row else None

    def token_by_id(self, token_id: str) -> Token | None:
        row = self._one(f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE id = %s", token_id)
        return _token(row) if row else None

    def touch_token(self, token_id: str, *, now: str) -> None:
        with self._write() as conn:
            conn.execute("UPDATE tokens SET last_used_at = %s WHERE id = %s", (now, token_id))

    def tokens_of(self, user_id: int) -> list[Token]:
        rows = self._all(
            f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE user_id = %s "
            'ORDER BY created_at COLLATE "C", id COLLATE "C"',
            user_id,
        )
        return [_token(row) for row in rows]

    def revoke_token(self, token_id: str, *, now: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE tokens SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
                (now, token_id),
            )
            return cur.rowcount == 1

    # -- namespaces -------------------------------------------------------------------

    def namespace(self, name: str) -> Namespace | None:
        row = self._one(
            "SELECT n.name, u.name AS owner, n.reserved, n.created_at FROM namespaces n "
            "LEFT JOIN users u ON u.id = n.owner_id WHERE n.name = %s",
            name,
        )
        if row is None:
            return None
        return Namespace(row["name"], row["owner"], bool(row["reserved"]), row["created_at"])

    def set_owner(self, name: str, owner_id: int | None, *, now: str) -> Namespace:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO namespaces (name, owner_id, reserved, created_at) "
                "VALUES (%s, %s, 0, %s) "
                "ON CONFLICT (name) DO UPDATE SET owner_id = excluded.owner_id",
                (name, owner_id, now),
            )
        found = self.namespace(name)
        assert found is not None, "BUG: namespace vanished"
        return found

    def maintainers(self, name: str) -> list[str]:
        rows = self._all(
            "SELECT u.name FROM namespace_maintainers m JOIN users u ON u.id = m.user_id "
            'WHERE m.namespace = %s ORDER BY u.name COLLATE "C"',
            name,
        )
        return [row["name"] for row in rows]

    def add_maintainer(self, name: str, user_id: int, *, now: str) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO namespace_maintainers (namespace, user_id, added_at) "
                "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (name, user_id, now),
            )

    def remove_maintainer(self, name: str, user_id: int) -> None:
        with self._write() as conn:
            conn.execute(
                "DELETE FROM namespace_maintainers WHERE namespace = %s AND user_id = %s",
                (name, user_id),
            )

    def namespaces_of(self, user_id: int) -> tuple[list[str], list[str]]:
        owned = self._all(
            'SELECT name FROM namespaces WHERE owner_id = %s ORDER BY name COLLATE "C"', user_id
        )
        maintained = self._all(
            "SELECT namespace FROM namespace_maintainers WHERE user_id = %s "
            'ORDER BY namespace COLLATE "C"',
            user_id,
        )
        return [row["name"] for row in owned], [row["namespace"] for row in maintained]

    def packages_in(self, name: str) -> list[str]:
        rows = self._all(
            'SELECT id FROM packages WHERE namespace = %s ORDER BY id COLLATE "C"', name
        )
        return [row["id"] for row in rows]

    # -- packages and versions --------------------------------------------------------

    def package(self, package_id: str) -> Package | None:
        row = self._one(
            "SELECT id, namespace, name, description, latest_version, created_at, updated_at, "
            "kind, hidden FROM packages WHERE id = %s",
            package_id,
        )
        if row is None:
            return None
        return Package(**{**row, "hidden": bool(row["hidden"])})

    def versions(self, package_id: str) -> list[Version]:
        rows = self._all(
            f"SELECT {_VERSION_COLUMNS} FROM versions WHERE package_id = %s "
            'ORDER BY published_at COLLATE "C", version COLLATE "C"',
            package_id,
        )
        return [Version(**row) for row in rows]

    def version(self, package_id: str, version: str) -> Version | None:
        row = self._one(
            f"SELECT {_VERSION_COLUMNS} FROM versions WHERE package_id = %s AND version = %s",
            package_id,
            version,
        )
        return Version(**row) if row else None

    def insert_version(self, new: NewVersion, *, latest_of: LatestOf, now: str) -> None:
        v = new.version
        try:
            with self._write() as conn:
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_CLASS, v.package_id)
                )
                if new.claim_for is not None:
                    _claim_namespace(conn, new.namespace, new.claim_for, now)
                existing = [
                    row["version"]
                    for row in conn.execute(
                        "SELECT version FROM versions WHERE package_id = %s", (v.package_id,)
                    )
                ]
                latest = latest_of([*existing, v.version])
                conn.execute(
                    "INSERT INTO packages (id, namespace, name, description, latest_version, "
                    "created_at, updated_at, kind) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (id) DO UPDATE SET latest_version = excluded.latest_version, "
                    "updated_at = excluded.updated_at",
                    (
                        v.package_id,
                        new.namespace,
                        new.name,
                        new.description,
                        latest,
                        now,
                        now,
                        new.kind,
                    ),
                )
                if latest == v.version:
                    conn.execute(
                        "UPDATE packages SET description = %s, kind = %s WHERE id = %s",
                        (new.description, new.kind, v.package_id),
                    )
                conn.execute(
                    f"INSERT INTO versions ({_VERSION_COLUMNS}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        v.package_id,
                        v.version,
                        v.manifest,
                        v.integrity,
                        v.size,
                        v.artifact_key,
                        v.published_by,
                        v.published_at,
                        v.artifact_backend,
                        v.artifact_url,
                        v.provenance,
                    ),
                )
        except RegistryError as exc:
            if self._unique_violation(exc):
                raise RegistryError(
                    ErrorCode.VERSION_EXISTS,
                    f"{v.package_id}@{v.version} is already published",
                ) from exc.__cause__
            raise

    def set_hidden(self, package_id: str, hidden: bool, *, now: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE packages SET hidden = %s, updated_at = %s WHERE id = %s",
                (int(hidden), now, package_id),
            )
            return cur.rowcount == 1

    def search(self, query: str, *, limit: int, kind: str | None) -> list[SearchHit]:
        literal = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        bare = query.removeprefix("@")
        bare_literal = literal.removeprefix("@")
        sql = (
            "SELECT id, description, latest_version, kind FROM packages "
            "WHERE hidden = 0 AND (id LIKE %(sub)s ESCAPE '\\' "
            "OR lower(description) LIKE %(sub)s ESCAPE '\\') "
            + ("AND kind = %(kind)s " if kind else "")
            + "ORDER BY CASE "
            "WHEN id = %(q)s OR name = %(bare)s OR substr(id, 2) = %(bare)s THEN 0 "
            "WHEN id LIKE %(prefix)s ESCAPE '\\' OR name LIKE %(bare_prefix)s ESCAPE '\\' "
            "OR substr(id, 2) LIKE %(bare_prefix)s ESCAPE '\\' THEN 1 ELSE 2 END, "
            'id COLLATE "C" LIMIT %(limit)s'
        )
        params = {
            "sub": f"%{literal}%",
            "q": query,
            "bare": bare,
            "prefix": f"{literal}%",
            "bare_prefix": f"{bare_literal}%",
            "limit": limit,
            "kind": kind,
        }
        try:
            with self._pool.connection() as conn:
                rows = conn.execute(sql, params).fetchall()
        except self._errors as exc:
            raise RegistryError(
                ErrorCode.STORAGE_UNAVAILABLE, f"Metadata read failed: {_first_line(exc)}"
            ) from exc
        return [
            SearchHit(row["id"], row["description"], row["latest_version"], row["kind"])
            for row in rows
        ]

    # -- signing keys and signatures (append-only: triggers refuse updates and deletes) --

    def signing_key(self, key_id: str) -> SigningKeyRow | None:
        row = self._one(f"SELECT {_KEY_COLUMNS} FROM signing_keys WHERE key_id = %s", key_id)
        return SigningKeyRow(**row) if row else None

    def signing_keys(self, namespace: str) -> list[SigningKeyRow]:
        rows = self._all(
            f"SELECT {_KEY_COLUMNS} FROM signing_keys WHERE namespace = %s "
            'ORDER BY added_at COLLATE "C", key_id COLLATE "C"',
            namespace,
        )
        return [SigningKeyRow(**row) for row in rows]

    def insert_signing_key(self, key: SigningKeyRow) -> None:
        try:
            with self._write() as conn:
                conn.execute(
                    f"INSERT INTO signing_keys ({_KEY_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)",
                    (
                        key.key_id,
                        key.namespace,
                        key.public_key,
                        key.added_by,
                        key.added_at,
                        key.revoked_at,
                    ),
                )
        except RegistryError as exc:
            if self._unique_violation(exc):
                raise RegistryError(
                    ErrorCode.KEY_EXISTS, f"Key {key.key_id} is already registered"
                ) from exc.__cause__
            raise

    def revoke_signing_key(self, key_id: str, *, now: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE signing_keys SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL",
                (now, key_id),
            )
            return cur.rowcount == 1

    def insert_signature(self, row: SignatureRow) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO signatures (package_id, version, key_id, signature, signed_by, "
                "signed_at) VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (package_id, version, key_id) DO NOTHING",
                (
                    row.package_id,
                    row.version,
                    row.key_id,
                    row.signature,
                    row.signed_by,
                    row.signed_at,
                ),
            )

    def signatures_of(self, package_id: str, version: str) -> list[VersionSignature]:
        rows = self._all(
            "SELECT s.key_id, k.public_key, s.signature, s.signed_at, k.revoked_at "
            "FROM signatures s JOIN signing_keys k ON k.key_id = s.key_id "
            "WHERE s.package_id = %s AND s.version = %s "
            'ORDER BY s.signed_at COLLATE "C", s.key_id COLLATE "C"',
            package_id,
            version,
        )
        return [VersionSignature(**row) for row in rows]

    # -- rate limits ------------------------------------------------------------------

    def hit(self, key: str, window_start: int) -> int:
        with self._write() as conn:
            row = conn.execute(
                "INSERT INTO rate_limits (key, window_start, count) VALUES (%s, %s, 1) "
                "ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + 1 "
                "RETURNING count",
                (key, window_start),
            ).fetchone()
            conn.execute(
                "DELETE FROM rate_limits WHERE key = %s AND window_start < %s", (key, window_start)
            )
        return int(row["count"])

    def count(self, key: str, window_start: int) -> int:
        row = self._one(
            "SELECT count FROM rate_limits WHERE key = %s AND window_start = %s", key, window_start
        )
        return int(row["count"]) if row else 0


def _claim_namespace(conn: psycopg.Connection[Any], name: str, user_id: int, now: str) -> None:
    """Inside the publish transaction: take a free namespace, or fail if someone else has it.

    Under READ COMMITTED the conditional UPDATE re-checks a row another transaction just
    claimed, and the SELECT after it sees that commit, so two claimers never both win.
    """
    conn.execute(
        "INSERT INTO namespaces (name, owner_id, reserved, created_at) VALUES (%s, %s, 0, %s) "
        "ON CONFLICT (name) DO NOTHING",
        (name, user_id, now),
    )
    conn.execute(
        "UPDATE namespaces SET owner_id = %s WHERE name = %s AND owner_id IS NULL AND reserved = 0",
        (user_id, name),
    )
    row = conn.execute("SELECT owner_id FROM namespaces WHERE name = %s", (name,)).fetchone()
    if row is None or row["owner_id"] != user_id:
        raise RegistryError(ErrorCode.FORBIDDEN, f"Namespace @{name} belongs to another user")


def _token(row: dict[str, Any]) -> Token:
    scope = row["scope_namespaces"]
    return Token(
        id=row["id"],
        user_id=int(row["user_id"]),
        label=row["label"],
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
        revoked_at=row["revoked_at"],
        expires_at=row["expires_at"],
        namespaces=None if scope is None else tuple(n for n in scope.split(",") if n),
        can_manage=bool(row["can_manage"]),
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _write_failed(exc: BaseException) -> RegistryError:
    return RegistryError(
        ErrorCode.METADATA_WRITE_FAILED, f"Metadata write failed: {_first_line(exc)}"
    )
