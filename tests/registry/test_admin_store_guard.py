"""What ``splice registry admin`` and every opener of a store refuse before touching it.

- A store written by a newer Splice (a schema level above the last migration shipped) is
  ``STORAGE_UNAVAILABLE`` on both databases, left as it is: before, SQLite and PostgreSQL
  alike were used as they were, by code that did not know their schema.
- ``admin migrate`` copies a store nobody has open: a running server (any open store) makes
  it ``STATE_LOCKED`` with nothing copied, and while it copies nobody opens the source.
  Before, it copied a store that kept taking publishes, which the new store never got.
- ``admin migrate`` into a database that holds anything of a registry beyond a new store's
  own rows is refused: before, one holding only a namespace (no user, token or package) was
  merged into, its row overwritten by the source's.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.db.migrate import migrations
from splice_build.registry.db.postgres import SCHEMA_TABLE, PostgresMetadataStore
from splice_build.registry.db.sqlite import SqliteMetadataStore
from splice_build.registry.db.transfer import copy_to_postgres
from splice_build.registry.storage import DB_FILE
from testing.registry_backends import ScaleServices, make_backend

NEWER = len(migrations()) + 1


def _sqlite_store(data: Path) -> Path:
    data.mkdir(parents=True)
    store = SqliteMetadataStore(data / DB_FILE)
    store.create_user("alice", now="2026-01-01T00:00:00.000Z")
    store.close()
    return data / DB_FILE


def _refused(code: ErrorCode, call: object) -> RegistryError:
    with pytest.raises(RegistryError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.code is code, caught.value
    return caught.value


def test_a_store_of_a_newer_schema_is_refused_untouched(
    scale_services: ScaleServices, tmp_path: Path
) -> None:
    path = _sqlite_store(tmp_path / "data")
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {NEWER}")
    conn.close()
    before = path.read_bytes()
    refused = _refused(ErrorCode.STORAGE_UNAVAILABLE, lambda: SqliteMetadataStore(path))
    assert f"schema level {NEWER}" in refused.message
    assert path.read_bytes() == before
    target = make_backend("postgres", tmp_path / "pg", scale_services)
    url = target.database_url or ""
    _refused(ErrorCode.STORAGE_UNAVAILABLE, lambda: copy_to_postgres(path, url))
    assert target.query("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == [(0,)]

    PostgresMetadataStore(url, pool_size=1).close()
    target.execute(f"INSERT INTO {SCHEMA_TABLE} (version) VALUES (%s)", (NEWER,))
    _refused(ErrorCode.STORAGE_UNAVAILABLE, lambda: PostgresMetadataStore(url, pool_size=1))
    assert target.schema_level() == NEWER
    assert target.query("SELECT count(*) FROM users") == [(0,)]


def test_migrate_refuses_a_store_in_use_and_holds_it_while_copying(
    scale_services: ScaleServices, tmp_path: Path
) -> None:
    path = _sqlite_store(tmp_path / "data")
    target = make_backend("postgres", tmp_path / "pg", scale_services)
    url = target.database_url or ""
    serving = SqliteMetadataStore(path)  # what a running server (or admin command) holds
    refused = _refused(ErrorCode.STATE_LOCKED, lambda: copy_to_postgres(path, url))
    assert "open in another process" in refused.message
    assert target.query("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == [(0,)]
    with serving.exclusive():  # a migration in progress: nobody else opens the store
        _refused(ErrorCode.STATE_LOCKED, lambda: SqliteMetadataStore(path))
    serving.close()
    occupant = PostgresMetadataStore(url, pool_size=1)  # a namespace, released, nothing else
    occupant.set_owner("acme", None, now="2026-01-01T00:00:00.000Z")
    occupant.close()
    refused = _refused(ErrorCode.METADATA_WRITE_FAILED, lambda: copy_to_postgres(path, url))
    assert refused.details == ("namespaces: 1 rows",)
    target.execute("DELETE FROM namespaces WHERE name = 'acme'")
    assert copy_to_postgres(path, url).rows["users"] == 1
    SqliteMetadataStore(path).close()  # the copy let the store go
