"""SQLite metadata store (stdlib ``sqlite3``, WAL): the default back end.

One connection per store, serialized by a lock (the HTTP app runs handlers on a thread
pool); cross-process safety comes from SQLite itself (``BEGIN IMMEDIATE`` + busy timeout),
so embedded CLI processes and a server may share one file. A writer also takes an exclusive
``flock`` on ``registry.db.lock`` first: SQLite's busy handler polls with sleeps of up to
100 ms, so writers of several server processes (``--workers``) would otherwise wait far
longer than the transaction they wait for; the kernel wakes a ``flock`` waiter as soon as
the lock is free. The lock is only a queue: correctness still comes from SQLite's own. The queries are the shared ones
of ``db.sql_store``; this module holds only the connection and its transactions.

Every open store also holds a shared lock on the first byte of that file for as long as it
is open (an open-file-description lock, ``F_OFD_SETLK``, independent of the ``flock``
queue; Linux only: elsewhere there is no such lock and nothing is refused). ``exclusive()`` turns it into an exclusive one, refused at once while any other
store is open (``STATE_LOCKED``): ``splice registry admin migrate`` copies a store nobody
serves, and nobody opens it (a server start, another admin command) until the copy ends,
so no publish is accepted by a store that is being left behind.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.db.migrate import apply_migrations
from splice_build.registry.db.sql_store import (
    Params,
    Row,
    SqlMetadataStore,
    Transaction,
    first_line,
    write_failed,
)

BUSY_TIMEOUT_MS = 10_000  # concurrent CLI processes wait rather than fail
LOCK_SUFFIX = ".lock"
_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", None)  # open-file-description locks: Linux only
_FLOCK = "hhqqi4x"  # Linux's struct flock: l_type, l_whence, l_start, l_len, l_pid (0 for OFD)
_NO_LOCKS = (errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP)  # a file system without them


class SqliteMetadataStore(SqlMetadataStore):
    """``MetadataStore`` over one SQLite file (``":memory:"`` works for unit tests)."""

    def __init__(self, path: Path | str) -> None:
        super().__init__()
        self.path = str(path)
        self._lock = threading.RLock()
        self._queue: _WriterQueue | None = None
        if self.path != ":memory:":
            self._queue = _WriterQueue(self.path + LOCK_SUFFIX)
            try:
                self._queue.hold(fcntl.F_RDLCK, "is being migrated by another process")
            except BaseException:
                self._close_queue()
                raise
        try:
            self._conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1000,
            )
        except BaseException:
            self._close_queue()
            raise
        try:
            # Switching a fresh file to WAL needs SQLite's exclusive lock and does not wait
            # for it (SQLITE_BUSY at once, whatever the busy timeout): openers of one new
            # store (the first CLI calls on a fresh home) take their turn like writers.
            with self._queue.turn() if self._queue else nullcontext():
                self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = FULL")
                self._conn.execute("PRAGMA foreign_keys = ON")
                apply_migrations(self._conn)
        except BaseException as exc:
            self._conn.close()
            self._close_queue()
            if isinstance(exc, sqlite3.DatabaseError):
                raise unusable_database(self.path, exc) from exc
            raise
        self._conn.row_factory = _dict_row  # the shared queries read columns by name

    def _close_queue(self) -> None:
        if self._queue is not None:
            self._queue.close()

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            self._close_queue()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the store alone: ``STATE_LOCKED`` while another store (any process) has it
        open; until the block ends no other store opens it (module docstring)."""
        if self._queue is None:
            yield
            return
        self._queue.hold(fcntl.F_WRLCK, "is open in another process (a running server?)")
        try:
            yield
        finally:
            self._queue.hold(fcntl.F_RDLCK, "")

    # -- dialect hooks ----------------------------------------------------------------

    def _fetch(self, sql: str, params: Params) -> list[Row]:
        with self._lock:
            return list(self._conn.execute(sql, params).fetchall())

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._queue.turn() if self._queue else nullcontext():
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise write_failed(exc) from exc
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                # SQLite may have rolled back already (a full disk fails the COMMIT and ends
                # the transaction): a second ROLLBACK would hide the real error.
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise write_failed(exc) from exc
                raise

    def _is_unique_violation(self, exc: BaseException | None) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)

    def _serialize_publish(self, tx: Transaction, package_id: str) -> None:
        """Nothing to add: ``BEGIN IMMEDIATE`` already admits one writer at a time."""


class _WriterQueue:
    """An exclusive ``flock`` on a file beside the database, held around each write.

    Taken under the store's thread lock: ``flock`` belongs to the open file, so two threads
    of one process would both "hold" it.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise RegistryError(
                ErrorCode.STORAGE_UNAVAILABLE,
                f"cannot open the registry's write lock {path}: {exc.strerror or exc}",
            ) from exc

    @contextmanager
    def turn(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def hold(self, kind: int, refusal: str) -> None:
        """Take (or change to) the shared or exclusive in-use lock on the file's first byte;
        ``STATE_LOCKED`` saying the store ``refusal`` when another store holds a conflicting
        one. Where there are no such locks (not Linux, a file system without them) nothing
        is held and nothing refused, as before there was this lock."""
        if _OFD_SETLK is None:
            return
        try:
            fcntl.fcntl(self._fd, _OFD_SETLK, struct.pack(_FLOCK, kind, os.SEEK_SET, 0, 1, 0))
        except OSError as exc:
            if exc.errno in _NO_LOCKS:
                return
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise RegistryError(
                ErrorCode.STATE_LOCKED,
                f"the registry store {self.path.removesuffix(LOCK_SUFFIX)} {refusal}",
                hint="stop the server (or wait for the migration to end), then run this again",
            ) from exc

    def close(self) -> None:
        os.close(self._fd)


def unusable_database(path: str, exc: sqlite3.DatabaseError) -> RegistryError:
    """STORAGE_UNAVAILABLE for a database file that is damaged, not SQLite, or refused.

    Unlike the graph's cache of file states this file is the registry's only record of its
    packages and users: it is never deleted or rewritten, only reported
    (docs/lifecycle.md#failure-and-recovery).
    """
    return RegistryError(
        ErrorCode.STORAGE_UNAVAILABLE,
        f"the registry database {path} cannot be used: {first_line(exc)}",
        hint="restore the file from a backup (it was left as it is), then start again",
    )


def _dict_row(cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> Row:
    return {column[0]: value for column, value in zip(cursor.description, values, strict=True)}
