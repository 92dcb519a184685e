"""SQLite metadata store (stdlib ``sqlite3``, WAL): the default back end.

One connection per store, serialized by a lock (the HTTP app runs handlers on a thread
pool); cross-process safety comes from SQLite itself (``BEGIN IMMEDIATE`` + busy timeout),
so embedded CLI processes and a server may share one file.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
from splice_build.registry.db.migrate import apply_migrations

BUSY_TIMEOUT_MS = 10_000  # concurrent CLI processes wait rather than fail
_VERSION_COLUMNS = (
    "package_id, version, manifest, integrity, size, artifact_key, published_by, "
    "published_at, artifact_backend, artifact_url, provenance"
)
_KEY_COLUMNS = "key_id, namespace, public_key, added_by, added_at, revoked_at"
_TOKEN_COLUMNS = (
    "id, user_id, label, created_at, last_used_at, revoked_at, expires_at, "
    "scope_namespaces, can_manage"
)


class SqliteMetadataStore:
    """``MetadataStore`` over one SQLite file (``":memory:"`` works for unit tests)."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.execute("PRAGMA foreign_keys = ON")
        apply_migrations(self._conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- plumbing ---------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; database failures become METADATA_WRITE_FAILED."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _write_failed(exc) from exc
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _write_failed(exc) from exc
                raise

    def _one(self, sql: str, *params: Any) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._conn.execute(sql, params).fetchone()
            return row

    def _all(self, sql: str, *params: Any) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._conn.execute(sql, params).fetchall())

    # -- users ------------------------------------------------------------------------

    def create_user(self, name: str, *, now: str) -> User:
        try:
            with self._write() as conn:
                cur = conn.execute(
                    "INSERT INTO users (name, created_at) VALUES (?, ?)", (name, now)
                )
                user_id = cur.lastrowid
        except RegistryError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                raise RegistryError(
                    ErrorCode.USER_EXISTS, f"User {name} already exists"
                ) from exc.__cause__
            raise
        assert user_id is not None, "BUG: INSERT returned no row id"
        return User(user_id, name, now)

    def user_by_name(self, name: str) -> User | None:
        row = self._one("SELECT id, name, created_at FROM users WHERE name = ?", name)
        return User(row["id"], row["name"], row["created_at"]) if row else None

    def user_by_id(self, user_id: int) -> User | None:
        row = self._one("SELECT id, name, created_at FROM users WHERE id = ?", user_id)
        return User(row["id"], row["name"], row["created_at"]) if row else None

    # -- tokens -----------------------------------------------------------------------

    def insert_token(self, token: NewToken) -> Token:
        scope = ",".join(sorted(token.namespaces)) if token.namespaces is not None else None
        with self._write() as conn:
            conn.execute(
                "INSERT INTO tokens (id, user_id, token_hash, label, created_at, expires_at, "
                "scope_namespaces, can_manage) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
        row = self._one(f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE token_hash = ?", token_hash)
        return _token(row) if row else None

    def token_by_id(self, token_id: str) -> Token | None:
        row = self._one(f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE id = ?", token_id)
        return _token(row) if row else None

    def touch_token(self, token_id: str, *, now: str) -> None:
        with self._write() as conn:
            conn.execute("UPDATE tokens SET last_used_at = ? WHERE id = ?", (now, token_id))

    def tokens_of(self, user_id: int) -> list[Token]:
        rows = self._all(
            f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE user_id = ? ORDER BY created_at, id",
            user_id,
        )
        return [_token(row) for row in rows]

    def revoke_token(self, token_id: str, *, now: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (now, token_id),
            )
            return cur.rowcount == 1

    # -- namespaces -------------------------------------------------------------------

    def namespace(self, name: str) -> Namespace | None:
        row = self._one(
            "SELECT n.name, u.name AS owner, n.reserved, n.created_at FROM namespaces n "
            "LEFT JOIN users u ON u.id = n.owner_id WHERE n.name = ?",
            name,
        )
        if row is None:
            return None
        return Namespace(row["name"], row["owner"], bool(row["reserved"]), row["created_at"])

    def set_owner(self, name: str, owner_id: int | None, *, now: str) -> Namespace:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO namespaces (name, owner_id, reserved, created_at) VALUES (?, ?, 0, ?) "
                "ON CONFLICT(name) DO UPDATE SET owner_id = excluded.owner_id",
                (name, owner_id, now),
            )
        found = self.namespace(name)
        assert found is not None, "BUG: namespace vanished"
        return found

    def maintainers(self, name: str) -> list[str]:
        rows = self._all(
            "SELECT u.name FROM namespace_maintainers m JOIN users u ON u.id = m.user_id "
            "WHERE m.namespace = ? ORDER BY u.name",
            name,
        )
        return [row[0] for row in rows]

    def add_maintainer(self, name: str, user_id: int, *, now: str) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO namespace_maintainers (namespace, user_id, added_at) "
                "VALUES (?, ?, ?)",
                (name, user_id, now),
            )

    def remove_maintainer(self, name: str, user_id: int) -> None:
        with self._write() as conn:
            conn.execute(
                "DELETE FROM namespace_maintainers WHERE namespace = ? AND user_id = ?",
                (name, user_id),
            )

    def namespaces_of(self, user_id: int) -> tuple[list[str], list[str]]:
        owned = self._all("SELECT name FROM namespaces WHERE owner_id = ? ORDER BY name", user_id)
        maintained = self._all(
            "SELECT namespace FROM namespace_maintainers WHERE user_id = ? ORDER BY namespace",
            user_id,
        )
        return [row[0] for row in owned], [row[0] for row in maintained]

    def packages_in(self, name: str) -> list[str]:
        rows = self._all("SELECT id FROM packages WHERE namespace = ? ORDER BY id", name)
        return [row[0] for row in rows]

    # -- packages and versions --------------------------------------------------------

    def package(self, package_id: str) -> Package | None:
        row = self._one(
            "SELECT id, namespace, name, description, latest_version, created_at, updated_at, "
            "kind, hidden FROM packages WHERE id = ?",
            package_id,
        )
        if row is None:
            return None
        return Package(
            row["id"],
            row["namespace"],
            row["name"],
            row["description"],
            row["latest_version"],
            row["created_at"],
            row["updated_at"],
            row["kind"],
            bool(row["hidden"]),
        )

    def versions(self, package_id: str) -> list[Version]:
        rows = self._all(
            f"SELECT {_VERSION_COLUMNS} FROM versions WHERE package_id = ? "
            "ORDER BY published_at, version",
            package_id,
        )
        return [Version(*row) for row in rows]

    def version(self, package_id: str, version: str) -> Version | None:
        row = self._one(
            f"SELECT {_VERSION_COLUMNS} FROM versions WHERE package_id = ? AND version = ?",
            package_id,
            version,
        )
        return Version(*row) if row else None

    def insert_version(self, new: NewVersion, *, latest_of: LatestOf, now: str) -> None:
        v = new.version
        try:
            with self._write() as conn:
                if new.claim_for is not None:
                    _claim_namespace(conn, new.namespace, new.claim_for, now)
                existing = [
                    row[0]
                    for row in conn.execute(
                        "SELECT version FROM versions WHERE package_id = ?", (v.package_id,)
                    )
                ]
                latest = latest_of([*existing, v.version])
                conn.execute(
                    "INSERT INTO packages (id, namespace, name, description, latest_version, "
                    "created_at, updated_at, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET latest_version = excluded.latest_version, "
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
                        "UPDATE packages SET description = ?, kind = ? WHERE id = ?",
                        (new.description, new.kind, v.package_id),
                    )
                conn.execute(
                    f"INSERT INTO versions ({_VERSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            if isinstance(exc.__cause__, sqlite3.IntegrityError) and "UNIQUE" in str(exc.__cause__):
                raise RegistryError(
                    ErrorCode.VERSION_EXISTS,
                    f"{v.package_id}@{v.version} is already published",
                ) from exc.__cause__
            raise

    def set_hidden(self, package_id: str, hidden: bool, *, now: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE packages SET hidden = ?, updated_at = ? WHERE id = ?",
                (int(hidden), now, package_id),
            )
            return cur.rowcount == 1

    def search(self, query: str, *, limit: int, kind: str | None) -> list[SearchHit]:
        literal = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        bare = query.removeprefix("@")
        bare_literal = literal.removeprefix("@")
        sql = (
            "SELECT id, description, latest_version, kind FROM packages "
            "WHERE hidden = 0 AND (id LIKE :sub ESCAPE '\\' OR lower(description) LIKE :sub ESCAPE '\\') "
            + ("AND kind = :kind " if kind else "")
            + "ORDER BY CASE "
            "WHEN id = :q OR name = :bare OR substr(id, 2) = :bare THEN 0 "
            "WHEN id LIKE :prefix ESCAPE '\\' OR name LIKE :bare_prefix ESCAPE '\\' "
            "OR substr(id, 2) LIKE :bare_prefix ESCAPE '\\' THEN 1 ELSE 2 END, id LIMIT :limit"
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
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        return [SearchHit(row[0], row[1], row[2], row[3]) for row in rows]

    # -- signing keys and signatures (append-only: triggers refuse updates and deletes) --

    def signing_key(self, key_id: str) -> SigningKeyRow | None:
        row = self._one(f"SELECT {_KEY_COLUMNS} FROM signing_keys WHERE key_id = ?", key_id)
        return SigningKeyRow(*row) if row else None

    def signing_keys(self, namespace: str) -> list[SigningKeyRow]:
        rows = self._all(
            f"SELECT {_KEY_COLUMNS} FROM signing_keys WHERE namespace = ? "
            "ORDER BY added_at, key_id",
            namespace,
        )
        return [SigningKeyRow(*row) for row in rows]

    def insert_signing_key(self, key: SigningKeyRow) -> None:
        try:
            with self._write() as conn:
                conn.execute(
                    f"INSERT INTO signing_keys ({_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
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
            if isinstance(exc.__cause__, sqlite3.IntegrityError) and "UNIQUE" in str(exc.__cause__):
                raise RegistryError(
                    ErrorCode.KEY_EXISTS, f"Key {key.key_id} is already registered"
                ) from exc.__cause__
            raise

    def revoke_signing_key(self, key_id: str, *, now: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE signing_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                (now, key_id),
            )
            return cur.rowcount == 1

    def insert_signature(self, row: SignatureRow) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO signatures (package_id, version, key_id, signature, signed_by, "
                "signed_at) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(package_id, version, key_id) DO NOTHING",
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
            "WHERE s.package_id = ? AND s.version = ? ORDER BY s.signed_at, s.key_id",
            package_id,
            version,
        )
        return [VersionSignature(*row) for row in rows]

    # -- rate limits ------------------------------------------------------------------

    def hit(self, key: str, window_start: int) -> int:
        with self._write() as conn:
            row = conn.execute(
                "INSERT INTO rate_limits (key, window_start, count) VALUES (?, ?, 1) "
                "ON CONFLICT(key, window_start) DO UPDATE SET count = count + 1 RETURNING count",
                (key, window_start),
            ).fetchone()
            conn.execute(
                "DELETE FROM rate_limits WHERE key = ? AND window_start < ?", (key, window_start)
            )
        return int(row[0])

    def count(self, key: str, window_start: int) -> int:
        row = self._one(
            "SELECT count FROM rate_limits WHERE key = ? AND window_start = ?", key, window_start
        )
        return int(row[0]) if row else 0


def _claim_namespace(conn: sqlite3.Connection, name: str, user_id: int, now: str) -> None:
    """Inside the publish transaction: take a free namespace, or fail if someone else has it."""
    conn.execute(
        "INSERT OR IGNORE INTO namespaces (name, owner_id, reserved, created_at) VALUES (?, ?, 0, ?)",
        (name, user_id, now),
    )
    conn.execute(
        "UPDATE namespaces SET owner_id = ? WHERE name = ? AND owner_id IS NULL AND reserved = 0",
        (user_id, name),
    )
    row = conn.execute("SELECT owner_id FROM namespaces WHERE name = ?", (name,)).fetchone()
    if row is None or row[0] != user_id:
        raise RegistryError(ErrorCode.FORBIDDEN, f"Namespace @{name} belongs to another user")


def _token(row: sqlite3.Row) -> Token:
    scope = row["scope_namespaces"]
    return Token(
        id=row["id"],
        user_id=row["user_id"],
        label=row["label"],
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
        revoked_at=row["revoked_at"],
        expires_at=row["expires_at"],
        namespaces=None if scope is None else tuple(n for n in scope.split(",") if n),
        can_manage=bool(row["can_manage"]),
    )


def _write_failed(exc: sqlite3.Error) -> RegistryError:
    return RegistryError(ErrorCode.METADATA_WRITE_FAILED, f"Metadata write failed: {exc}")
