"""The queries and row mapping both SQL back ends share: every ``MetadataStore`` method, once.

Queries are written in SQLite's spelling, with ``?`` (positional) or ``:name`` (named)
placeholders; PostgreSQL accepts the same statements once :func:`pyformat` has rewritten the
placeholders. What differs between the databases is left to a back end's hooks:

- ``_fetch`` runs one read and returns rows as dicts (a back end decides how read failures
  surface);
- ``_transaction`` yields a driver connection inside one write transaction, and turns
  database failures into ``METADATA_WRITE_FAILED`` (the driver error as ``__cause__``);
- ``_is_unique_violation`` recognizes a driver's uniqueness error;
- ``_serialize_publish`` keeps concurrent publishes of one package apart;
- ``_sql`` translates the placeholders, ``COLLATION`` makes ``ORDER BY`` sort by code point;
- ``ROW_LOCK`` ends a read inside a transaction that the transaction's outcome depends on
  (the publisher's rights): PostgreSQL's ``FOR SHARE`` makes a concurrent revocation or
  removal wait for the publish to end; SQLite runs one write transaction at a time.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache
from typing import Any, ClassVar, Protocol

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass
from splice_build.registry.db.interface import (
    LatestOf,
    Namespace,
    NewToken,
    NewVersion,
    Package,
    PageKey,
    Publisher,
    SearchHit,
    SignatureRow,
    SigningKeyRow,
    Token,
    User,
    Version,
    VersionEntry,
    VersionSignature,
)
from splice_build.registry.db.search_key import search_key
from splice_build.spec import semver

Row = dict[str, Any]
Params = Sequence[Any] | Mapping[str, Any]

_VERSION_COLUMNS = (
    "package_id, version, manifest, integrity, size, artifact_key, published_by, "
    "published_at, artifact_backend, artifact_url, provenance"
)
_ENTRY_COLUMNS = "version, published_at, integrity, size"
_KEY_COLUMNS = "key_id, namespace, public_key, added_by, added_at, revoked_at"
_TOKEN_COLUMNS = (
    "id, user_id, label, created_at, last_used_at, revoked_at, expires_at, "
    "scope_namespaces, can_manage"
)
_USER_COLUMNS = "id, name, created_at"
_PLACEHOLDER = re.compile(r"\?|(?<![:\w]):([A-Za-z_]\w*)")


@lru_cache(maxsize=256)
def pyformat(sql: str) -> str:
    """``?`` → ``%s`` and ``:name`` → ``%(name)s``, literal ``%`` doubled (psycopg's style).

    The rewrite is textual: a shared query keeps ``?`` and ``:word`` out of its string
    literals (values travel as parameters anyway).
    """

    def placeholder(match: re.Match[str]) -> str:
        return "%s" if match.group(1) is None else f"%({match.group(1)})s"

    return _PLACEHOLDER.sub(placeholder, sql.replace("%", "%%"))


class Cursor(Protocol):
    """What both drivers' cursors offer and the shared code uses."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


def refuse_nul(params: Params) -> None:
    """400 BAD_REQUEST for a text value holding U+0000, before either driver sees it.

    PostgreSQL cannot hold NUL in text: psycopg refused the value, and the PostgreSQL store
    answered an anonymous ``GET /packages/search?q=a%00b`` (or a token id, user or owner
    with one) 503 STORAGE_UNAVAILABLE, a storage failure that was none, where the SQLite
    store answered 200 or 404. Refused here, for every statement of both stores, the two
    answer alike; no stored name, id or version can hold NUL (their grammars exclude it).
    """
    values = params.values() if isinstance(params, Mapping) else params
    if any(isinstance(value, str) and "\x00" in value for value in values):
        raise RegistryError(ErrorCode.BAD_REQUEST, "Text may not hold a NUL character (U+0000)")


@dataclass(frozen=True)
class Transaction:
    """A connection inside one write transaction, taking queries in the shared spelling."""

    conn: Any
    translate: Callable[[str], str]  # the store's placeholder translation

    def execute(self, sql: str, *params: Any) -> Cursor:
        refuse_nul(params)
        cursor: Cursor = self.conn.execute(self.translate(sql), params)
        return cursor


class SqlMetadataStore(ABC):
    """``MetadataStore`` written once in SQL; a subclass supplies the dialect hooks."""

    COLLATION: ClassVar[str] = ""  # appended to every ORDER BY column
    ROW_LOCK: ClassVar[str] = ""  # appended to a read the transaction's writes depend on

    def __init__(self) -> None:
        # limit name -> the window whose older rows this store has dropped (``hit``)
        self._swept: dict[str, int] = {}

    @abstractmethod
    def close(self) -> None: ...

    # -- dialect hooks ----------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        """The statement in this driver's placeholder style (SQLite's by default)."""
        return sql

    @abstractmethod
    def _fetch(self, sql: str, params: Params) -> list[Row]:
        """Run one read (``sql`` already translated); rows as dicts."""

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Any]:
        """A driver connection inside one write transaction (METADATA_WRITE_FAILED on error)."""

    @abstractmethod
    def _is_unique_violation(self, exc: BaseException | None) -> bool: ...

    @abstractmethod
    def _serialize_publish(self, tx: Transaction, package_id: str) -> None:
        """Inside the publish transaction: wait for other publishes of ``package_id``."""

    # -- plumbing ---------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[Transaction]:
        with self._transaction() as conn:
            yield Transaction(conn, self._sql)

    def _read(self, sql: str, params: Params) -> list[Row]:
        """Every read of the shared queries: its values checked (``refuse_nul``), then run."""
        refuse_nul(params)
        return self._fetch(self._sql(sql), params)

    def _all(self, sql: str, *params: Any) -> list[Row]:
        return self._read(sql, params)

    def _one(self, sql: str, *params: Any) -> Row | None:
        rows = self._all(sql, *params)
        return rows[0] if rows else None

    def _order_by(self, *columns: str) -> str:
        return "ORDER BY " + ", ".join(column + self.COLLATION for column in columns)

    @contextmanager
    def _unique_as(self, code: ErrorCode, message: str) -> Iterator[None]:
        """A uniqueness violation inside the block becomes ``RegistryError(code, message)``."""
        try:
            yield
        except RegistryError as exc:
            if self._is_unique_violation(exc.__cause__):
                raise RegistryError(code, message) from exc.__cause__
            raise

    # -- users ------------------------------------------------------------------------

    def create_user(self, name: str, *, now: str) -> User:
        already = f"User {name} already exists"
        with self._unique_as(ErrorCode.USER_EXISTS, already), self._write() as tx:
            row = tx.execute(
                "INSERT INTO users (name, created_at) VALUES (?, ?) RETURNING id", name, now
            ).fetchone()
        return User(int(row["id"]), name, now)

    def user_by_name(self, name: str) -> User | None:
        row = self._one(f"SELECT {_USER_COLUMNS} FROM users WHERE name = ?", name)
        return _user(row) if row else None

    def user_by_id(self, user_id: int) -> User | None:
        row = self._one(f"SELECT {_USER_COLUMNS} FROM users WHERE id = ?", user_id)
        return _user(row) if row else None

    # -- tokens -----------------------------------------------------------------------

    def insert_token(self, token: NewToken) -> Token:
        scope = ",".join(sorted(token.namespaces)) if token.namespaces is not None else None
        with self._write() as tx:
            tx.execute(
                "INSERT INTO tokens (id, user_id, token_hash, label, created_at, expires_at, "
                "scope_namespaces, can_manage) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                token.id,
                token.user_id,
                token.token_hash,
                token.label,
                token.created_at,
                token.expires_at,
                scope,
                int(token.can_manage),
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
        with self._write() as tx:
            tx.execute("UPDATE tokens SET last_used_at = ? WHERE id = ?", now, token_id)

    def tokens_of(self, user_id: int) -> list[Token]:
        rows = self._all(
            f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE user_id = ? "
            + self._order_by("created_at", "id"),
            user_id,
        )
        return [_token(row) for row in rows]

    def revoke_token(self, token_id: str, *, now: str) -> bool:
        with self._write() as tx:
            cur = tx.execute(
                "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                now,
                token_id,
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

    def reserved_namespaces(self) -> list[str]:
        rows = self._all(f"SELECT name FROM namespaces WHERE reserved = 1 {self._order_by('name')}")
        return [str(row["name"]) for row in rows]

    def namespace_names(self) -> list[str]:
        rows = self._all(f"SELECT name FROM namespaces {self._order_by('name')}")
        return [str(row["name"]) for row in rows]

    def set_owner(self, name: str, owner_id: int | None, *, now: str) -> Namespace:
        with self._write() as tx:
            tx.execute(
                "INSERT INTO namespaces (name, owner_id, reserved, created_at) VALUES (?, ?, 0, ?) "
                "ON CONFLICT (name) DO UPDATE SET owner_id = excluded.owner_id",
                name,
                owner_id,
                now,
            )
        found = self.namespace(name)
        assert found is not None, "BUG: namespace vanished"
        return found

    def maintainers(self, name: str) -> list[str]:
        rows = self._all(
            "SELECT u.name FROM namespace_maintainers m JOIN users u ON u.id = m.user_id "
            "WHERE m.namespace = ? " + self._order_by("u.name"),
            name,
        )
        return [row["name"] for row in rows]

    def add_maintainer(self, name: str, user_id: int, *, now: str) -> None:
        with self._write() as tx:
            tx.execute(
                "INSERT INTO namespace_maintainers (namespace, user_id, added_at) "
                "VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                name,
                user_id,
                now,
            )

    def remove_maintainer(self, name: str, user_id: int) -> None:
        with self._write() as tx:
            tx.execute(
                "DELETE FROM namespace_maintainers WHERE namespace = ? AND user_id = ?",
                name,
                user_id,
            )

    def namespaces_of(self, user_id: int) -> tuple[list[str], list[str]]:
        owned = self._all(
            "SELECT name FROM namespaces WHERE owner_id = ? " + self._order_by("name"), user_id
        )
        maintained = self._all(
            "SELECT namespace FROM namespace_maintainers WHERE user_id = ? "
            + self._order_by("namespace"),
            user_id,
        )
        return [row["name"] for row in owned], [row["namespace"] for row in maintained]

    def packages_in(self, name: str, *, listed: bool = False) -> list[str]:
        hidden = "AND hidden = 0 " if listed else ""
        rows = self._all(
            "SELECT id FROM packages WHERE namespace = ? " + hidden + self._order_by("id"), name
        )
        return [row["id"] for row in rows]

    # -- packages and versions --------------------------------------------------------

    def package(self, package_id: str) -> Package | None:
        row = self._one(
            "SELECT id, namespace, name, description, latest_version, created_at, updated_at, "
            "kind, hidden, version_count FROM packages WHERE id = ?",
            package_id,
        )
        if row is None:
            return None
        return Package(
            **{**row, "hidden": bool(row["hidden"]), "version_count": int(row["version_count"])}
        )

    def versions(self, package_id: str) -> list[Version]:
        rows = self._all(
            f"SELECT {_VERSION_COLUMNS} FROM versions WHERE package_id = ? "
            + self._order_by("published_at", "version"),
            package_id,
        )
        return [Version(**row) for row in rows]

    def versions_page(
        self, package_id: str, *, after: PageKey | None, limit: int
    ) -> list[VersionEntry]:
        c = self.COLLATION
        where = "package_id = ?"
        params: list[Any] = [package_id]
        if after is not None:
            where += f" AND (published_at{c} > ? OR (published_at{c} = ? AND version{c} > ?))"
            params += [after[0], after[0], after[1]]
        rows = self._all(
            f"SELECT {_ENTRY_COLUMNS} FROM versions WHERE {where} "
            + self._order_by("published_at", "version")
            + " LIMIT ?",
            *params,
            limit,
        )
        return [VersionEntry(**row) for row in rows]

    def highest_versions(self, package_id: str, *, limit: int) -> list[VersionEntry]:
        rows = self._all(
            f"SELECT {_ENTRY_COLUMNS} FROM versions WHERE package_id = ? "
            f"ORDER BY precedence{self.COLLATION} DESC LIMIT ?",
            package_id,
            limit,
        )
        return [VersionEntry(**row) for row in rows]

    def version(self, package_id: str, version: str) -> Version | None:
        row = self._one(
            f"SELECT {_VERSION_COLUMNS} FROM versions WHERE package_id = ? AND version = ?",
            package_id,
            version,
        )
        return Version(**row) if row else None

    def all_versions(self) -> list[Version]:
        rows = self._all(
            f"SELECT {_VERSION_COLUMNS} FROM versions "
            + self._order_by("package_id", "published_at", "version")
        )
        return [Version(**row) for row in rows]

    def set_artifact_location(
        self, package_id: str, version: str, *, backend: str, url: str | None
    ) -> bool:
        # The immutability triggers let exactly these two columns change (docs/compatibility.md#registry-api).
        with self._write() as tx:
            cur = tx.execute(
                "UPDATE versions SET artifact_backend = ?, artifact_url = ? "
                "WHERE package_id = ? AND version = ?",
                backend,
                url,
                package_id,
                version,
            )
            return cur.rowcount == 1

    def insert_version(self, new: NewVersion, *, latest_of: LatestOf, now: str) -> None:
        v = new.version
        already = f"{v.package_id}@{v.version} is already published"
        with self._unique_as(ErrorCode.VERSION_EXISTS, already), self._write() as tx:
            self._serialize_publish(tx, v.package_id)
            self._check_publisher(tx, new.namespace, new.publisher, now)
            # The current "latest" is the one row read: latest_of over it and the new version
            # equals latest_of over the whole history (its rule is a maximum), at any size.
            current = tx.execute(
                "SELECT latest_version FROM packages WHERE id = ?", v.package_id
            ).fetchone()
            known = [current["latest_version"]] if current is not None else []
            latest = latest_of([*known, v.version])
            tx.execute(
                "INSERT INTO packages (id, namespace, name, description, search_text, "
                "latest_version, created_at, updated_at, kind, version_count) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1) "
                "ON CONFLICT (id) DO UPDATE SET latest_version = excluded.latest_version, "
                "updated_at = excluded.updated_at, "
                "version_count = packages.version_count + 1",
                v.package_id,
                new.namespace,
                new.name,
                new.description,
                search_key(new.description),
                latest,
                now,
                now,
                new.kind,
            )
            if latest == v.version:
                tx.execute(
                    "UPDATE packages SET description = ?, search_text = ?, kind = ? WHERE id = ?",
                    new.description,
                    search_key(new.description),
                    new.kind,
                    v.package_id,
                )
            tx.execute(
                f"INSERT INTO versions ({_VERSION_COLUMNS}, precedence) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                semver.precedence_key(semver.Version.parse(v.version)),
            )

    def _check_publisher(self, tx: Transaction, namespace: str, who: Publisher, now: str) -> None:
        """Inside the publish transaction: the publisher's token is still valid (not revoked,
        not expired) and the publisher still owns the namespace, claims it free, or
        maintains it. The service checked all this before it stored the artifact; what
        changed since (a body that took minutes to arrive, an artifact written to S3) is
        decided here, with the rows locked until the publish ends (``ROW_LOCK``)."""
        if who.token_id is not None:
            token = tx.execute(
                "SELECT revoked_at, expires_at FROM tokens WHERE id = ?" + self.ROW_LOCK,
                who.token_id,
            ).fetchone()
            if (
                token is None
                or token["revoked_at"] is not None
                or (token["expires_at"] is not None and token["expires_at"] <= now)
            ):
                raise RegistryError(ErrorCode.UNAUTHENTICATED, "Invalid, expired or revoked token")
        if who.claim:
            _claim_namespace(tx, namespace, who.user_id, now)
            return
        owner = tx.execute(
            "SELECT owner_id FROM namespaces WHERE name = ?" + self.ROW_LOCK, namespace
        ).fetchone()
        if owner is not None and owner["owner_id"] == who.user_id:
            return
        maintainer = tx.execute(
            "SELECT user_id FROM namespace_maintainers WHERE namespace = ? AND user_id = ?"
            + self.ROW_LOCK,
            namespace,
            who.user_id,
        ).fetchone()
        if maintainer is None:
            raise RegistryError(
                ErrorCode.FORBIDDEN,
                f"You are no longer the owner or a maintainer of @{namespace}",
            )

    def set_hidden(self, package_id: str, hidden: bool, *, now: str) -> bool:
        with self._write() as tx:
            cur = tx.execute(
                "UPDATE packages SET hidden = ?, updated_at = ? WHERE id = ?",
                int(hidden),
                now,
                package_id,
            )
            return cur.rowcount == 1

    def search(self, query: str, *, limit: int, kind: str | None) -> list[SearchHit]:
        literal = _like_literal(query)
        bare = query.removeprefix("@")
        bare_literal = literal.removeprefix("@")
        sql = (
            "SELECT id, description, latest_version, kind FROM packages "
            "WHERE hidden = 0 AND (id LIKE :sub ESCAPE '\\' OR search_text LIKE :key ESCAPE '\\') "
            + ("AND kind = :kind " if kind else "")
            + "ORDER BY CASE "
            "WHEN id = :q OR name = :bare OR substr(id, 2) = :bare THEN 0 "
            "WHEN id LIKE :prefix ESCAPE '\\' OR name LIKE :bare_prefix ESCAPE '\\' "
            "OR substr(id, 2) LIKE :bare_prefix ESCAPE '\\' THEN 1 ELSE 2 END, "
            f"id{self.COLLATION} LIMIT :limit"
        )
        params = {
            "sub": f"%{literal}%",
            "key": f"%{_like_literal(search_key(query))}%",
            "q": query,
            "bare": bare,
            "prefix": f"{literal}%",
            "bare_prefix": f"{bare_literal}%",
            "limit": limit,
            "kind": kind,
        }
        rows = self._read(sql, params)
        return [
            SearchHit(row["id"], row["description"], row["latest_version"], row["kind"])
            for row in rows
        ]

    # -- signing keys and signatures (append-only: triggers refuse updates and deletes) --

    def signing_key(self, key_id: str) -> SigningKeyRow | None:
        row = self._one(f"SELECT {_KEY_COLUMNS} FROM signing_keys WHERE key_id = ?", key_id)
        return SigningKeyRow(**row) if row else None

    def signing_keys(self, namespace: str) -> list[SigningKeyRow]:
        rows = self._all(
            f"SELECT {_KEY_COLUMNS} FROM signing_keys WHERE namespace = ? "
            + self._order_by("added_at", "key_id"),
            namespace,
        )
        return [SigningKeyRow(**row) for row in rows]

    def insert_signing_key(self, key: SigningKeyRow) -> None:
        already = f"Key {key.key_id} is already registered"
        with self._unique_as(ErrorCode.KEY_EXISTS, already), self._write() as tx:
            tx.execute(
                f"INSERT INTO signing_keys ({_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                key.key_id,
                key.namespace,
                key.public_key,
                key.added_by,
                key.added_at,
                key.revoked_at,
            )

    def revoke_signing_key(self, key_id: str, *, now: str) -> bool:
        with self._write() as tx:
            cur = tx.execute(
                "UPDATE signing_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                now,
                key_id,
            )
            return cur.rowcount == 1

    def insert_signature(self, row: SignatureRow) -> None:
        with self._write() as tx:
            tx.execute(
                "INSERT INTO signatures (package_id, version, key_id, signature, signed_by, "
                "signed_at) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (package_id, version, key_id) DO NOTHING",
                row.package_id,
                row.version,
                row.key_id,
                row.signature,
                row.signed_by,
                row.signed_at,
            )

    def signatures_of(self, package_id: str, version: str) -> list[VersionSignature]:
        rows = self._all(
            "SELECT s.key_id, k.public_key, s.signature, s.signed_at, k.revoked_at "
            "FROM signatures s JOIN signing_keys k ON k.key_id = s.key_id "
            "WHERE s.package_id = ? AND s.version = ? " + self._order_by("s.signed_at", "s.key_id"),
            package_id,
            version,
        )
        return [VersionSignature(**row) for row in rows]

    # -- rate limits ------------------------------------------------------------------

    def hit(self, key: str, window_start: int, weight: int = 1) -> int:
        limit = key.partition(":")[0] + ":"
        sweep = self._swept.get(limit, window_start - 1) < window_start
        with self._write() as tx:
            row = tx.execute(
                "INSERT INTO rate_limits (key, window_start, count) VALUES (?, ?, ?) "
                "ON CONFLICT (key, window_start) DO UPDATE "
                "SET count = rate_limits.count + excluded.count RETURNING count",
                key,
                window_start,
                weight,
            ).fetchone()
            tx.execute(
                "DELETE FROM rate_limits WHERE key = ? AND window_start < ?", key, window_start
            )
            if sweep:  # once per window of a limit: the rows its other clients left behind
                tx.execute(
                    "DELETE FROM rate_limits WHERE substr(key, 1, ?) = ? AND window_start < ?",
                    len(limit),
                    limit,
                    window_start,
                )
        if sweep:
            self._swept[limit] = window_start
        return int(row["count"])

    def count(self, key: str, window_start: int) -> int:
        row = self._one(
            "SELECT count FROM rate_limits WHERE key = ? AND window_start = ?", key, window_start
        )
        return int(row["count"]) if row else 0


def _like_literal(text: str) -> str:
    """``text`` matched literally by ``LIKE … ESCAPE '\\'`` (``%``, ``_`` and ``\\`` escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _claim_namespace(tx: Transaction, name: str, user_id: int, now: str) -> None:
    """Inside the publish transaction: take a free namespace, or fail if someone else has it.

    Under PostgreSQL's READ COMMITTED the conditional UPDATE re-checks a row another
    transaction just claimed, and the SELECT after it sees that commit, so two claimers never
    both win; SQLite runs one write transaction at a time.
    """
    tx.execute(
        "INSERT INTO namespaces (name, owner_id, reserved, created_at) VALUES (?, ?, 0, ?) "
        "ON CONFLICT (name) DO NOTHING",
        name,
        user_id,
        now,
    )
    tx.execute(
        "UPDATE namespaces SET owner_id = ? WHERE name = ? AND owner_id IS NULL AND reserved = 0",
        user_id,
        name,
    )
    row = tx.execute("SELECT owner_id FROM namespaces WHERE name = ?", name).fetchone()
    if row is None or row["owner_id"] != user_id:
        raise RegistryError(ErrorCode.FORBIDDEN, f"Namespace @{name} belongs to another user")


def _user(row: Row) -> User:
    return User(int(row["id"]), row["name"], row["created_at"])


def _token(row: Row) -> Token:
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


def first_line(exc: BaseException) -> str:
    """The first line of a driver error (PostgreSQL's carry DETAIL/HINT lines)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def write_failed(exc: BaseException) -> RegistryError:
    return RegistryError(
        ErrorCode.METADATA_WRITE_FAILED, f"Metadata write failed: {first_line(exc)}"
    )
