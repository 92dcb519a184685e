"""Numbered SQL migrations shipped as package data (``migrations/NNNN_name.sql``).

The applied level is SQLite's ``PRAGMA user_version``; each migration runs in the same
``BEGIN IMMEDIATE`` transaction as the version bump, so concurrent openers (two CLI
processes on a fresh home) apply it exactly once. PostgreSQL runs the same numbered sequence
(applied by ``db.postgres``): ``migrations/`` holds every migration, and ``migrations_pg/``
only those PostgreSQL must spell differently, each under the name it replaces. SQL both
databases accept (the reserved namespaces) is written once.

A store whose level is above the last migration this code ships was written by a newer
Splice: its schema holds what this code does not know (a column it would not fill, a trigger
it would not expect), so it is refused (``newer_schema``, ``STORAGE_UNAVAILABLE``) before any
read or write, on both databases, rather than used half-understood.

A value SQL cannot compute is filled in by Python right after its migration's script, in the
same transaction (``FILLS``), for the rows an older store holds: ``versions.precedence``
(migration 4) and ``packages.search_text`` (migration 5).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable
from importlib import resources
from typing import Any

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass

BASE_DIR = "migrations"  # the whole sequence, in SQLite's spelling
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    number: int
    name: str
    sql: str


@dataclass(frozen=True)
class Fill:
    """Values a migration adds that only Python computes: ``updates`` turns the rows
    ``select`` reads into the parameters of ``update`` (``?`` placeholders)."""

    select: str
    update: str
    updates: Callable[[Iterable[tuple[Any, ...]]], list[tuple[Any, ...]]]


def migrations(folder_name: str = BASE_DIR) -> list[Migration]:
    """A dialect's migrations in order; numbers must be 1, 2, 3, ... without gaps.

    ``folder_name`` names the dialect's folder: its files replace the base migrations of the
    same name, and a file that replaces none is a bug.
    """
    by_name = {m.name: m for m in _read(BASE_DIR)}
    if folder_name != BASE_DIR:
        for migration in _read(folder_name):
            if migration.name not in by_name:
                raise AssertionError(f"BUG: {folder_name}/{migration.name} has no {BASE_DIR}/ twin")
            by_name[migration.name] = migration
    found = sorted(by_name.values(), key=lambda m: m.number)
    if [m.number for m in found] != list(range(1, len(found) + 1)):
        raise AssertionError(f"BUG: migration numbers have gaps: {[m.name for m in found]}")
    return found


def _read(folder_name: str) -> list[Migration]:
    folder = resources.files("splice_build.registry.db").joinpath(folder_name)
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    return found


def apply_migrations(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the resulting schema version."""
    pending = migrations()
    conn.execute("BEGIN IMMEDIATE")
    try:
        level = conn.execute("PRAGMA user_version").fetchone()[0]
        if level > len(pending):
            raise newer_schema(level, len(pending))
        for migration in pending[level:]:
            for statement in _statements(migration.sql):
                conn.execute(statement)
            fill = FILLS.get(migration.number)
            if fill is not None:
                rows = conn.execute(fill.select).fetchall()
                conn.executemany(fill.update, fill.updates(rows))
            conn.execute(f"PRAGMA user_version = {migration.number}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(pending)


def newer_schema(level: int, known: int) -> RegistryError:
    """The refusal of a store at a schema level this code does not know (left unchanged)."""
    return RegistryError(
        ErrorCode.STORAGE_UNAVAILABLE,
        f"the registry store has schema level {level}; this Splice knows levels up to {known}",
        hint="a newer Splice wrote this store: run that version (the store was left as it is)",
    )


def precedence_updates(rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``versions.precedence`` of (package_id, version) rows; every stored version passed
    validation when it was published, so one that does not parse stops the migration."""
    from splice_build.spec.semver import Version, precedence_key

    return [
        (precedence_key(Version.parse(version)), package_id, version)
        for package_id, version in rows
    ]


def search_text_updates(rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``packages.search_text`` of (id, description) rows."""
    from splice_build.registry.db.search_key import search_key

    return [(search_key(description), package_id) for package_id, description in rows]


FILLS = {
    4: Fill(
        "SELECT package_id, version FROM versions WHERE precedence IS NULL",
        "UPDATE versions SET precedence = ? WHERE package_id = ? AND version = ?",
        precedence_updates,
    ),
    5: Fill(
        "SELECT id, description FROM packages",
        "UPDATE packages SET search_text = ? WHERE id = ?",
        search_text_updates,
    ),
}


def _statements(script: str) -> list[str]:
    """Split a script into statements, keeping trigger bodies (BEGIN ... END;) whole."""
    out: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not buffer:
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            out.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        out.append(buffer.strip())
    return out
