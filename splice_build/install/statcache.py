"""The stat cache: a no-op ``install``/``sync`` re-hashes only files that changed (issue #22).

docs/lifecycle.md#the-stat-cache. Like git's index, ``.splice/statcache.json`` remembers, per
installed file, ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns, st_mode)`` and the
SHA-256 of its bytes as read right after that stat. A later walk of the package directory
(every entry is still listed, so an added, removed or renamed file is seen) reuses the
recorded SHA-256 of a file whose stat is unchanged and hashes every other file; the files
digest is then built from those per-file hashes exactly as :func:`tree_digest` builds it, and
compared with the lock as before. Only the graph's ``verify`` task of ``install``/``sync``/
``sync --check`` uses it; ``splice run``, ``splice verify``, ``splice mcp`` and doit's
``splice:verify`` never read it.

Why the stat is enough: any write to a file, ``chmod``, ``utime`` or rename sets its ``ctime``
to the file system's "now", and no user process can set ``ctime`` back; a replaced file also
has a new inode. The one hole is a change within the same clock tick as the recorded ``ctime``
(git's "racy" case; file system timestamps are coarse, often a few milliseconds, a second or
two on some file systems). It is closed by taking a timestamp from the file system's own clock
(``utime`` of ``.splice/state.lock``, which a writing run holds) *before* the files are read,
and recording only files whose ``mtime`` and ``ctime`` are strictly older: any change after
that moment carries a later ``ctime``, so it can never look like the recorded one. A file that
is not strictly older (just installed, just edited) is hashed again on the next run, and
recorded then. When loading, an entry not strictly older than the cache file's own ``mtime``
is ignored as well (git's rule), for a cache written by some other means.

The file also holds the project's *no-op state* (:class:`NoopState`), written only by a run
that found the project a complete no-op: the text of the ``splice.json`` and ``splice.lock``
that run parsed (the bytes whose SHA-256 it parsed, read again when the state is written), the
project's real path, the Splice version, each package's version and every ``fs`` entry of the
packages' grants and manifests (judged again on each no-op: their real paths and
``SPLICE_HOME`` are in no file the state compares).
When every member's state still matches and every installed file's stat is exactly recorded,
``sync`` skips the graph (tasks/noop.py, docs/lifecycle.md#the-no-op-fast-path).

The file is only a hint: unreadable, of another version or malformed in any field, it is
ignored as a whole (every file is hashed) and rewritten by the next writing run. A ``check``
run reads it but never writes it. Writes go through ``atomic_write_bytes``, not fsynced
(``durable=False``): a power cut can leave the previous cache, whose every entry a later
change of its file no longer matches, or an empty or short one, which is ignored as a whole;
neither can make a changed file pass (docs/lifecycle.md#the-stat-cache).

Each package's table holds its names, their keys packed (``_KEY``) in one hex string and, for
files, their hashes joined in another (:data:`Packed`). A no-op packs the keys it takes and
compares the strings (``unchanged``); the tables are decoded into per-file records only for a
run of the graph (``records``, ``directories``). A key that does not fit ``_KEY`` (a time
beyond 64 bits of nanoseconds, which tmpfs allows) is never recorded (``_kept``).
"""

from __future__ import annotations

import json
import os
import stat
import struct
from collections.abc import Callable, Iterable, Mapping
from functools import reduce
from itertools import chain
from operator import attrgetter, itemgetter, or_
from pathlib import Path

from splice_build.file_keys import CHANGE_FIELDS, FileIdentity
from splice_build.records import dataclass, field
from splice_build.spec.limits import MAX_FILES, MAX_PROJECT_STATE_BYTES
from splice_build.spec.names import is_valid_package_id
from splice_build.spec.regular_file import read_regular_file_and_stat

# spec/tree_digest.py (and the digests it imports) only for hashing: a no-op sync judges
# stats alone and never loads them (tests/runtime/test_lean_path.py).

# 2: the no-op state; 3: it holds the texts of splice.json and splice.lock; 4: directory keys;
# 5: the state names the identity of splice.json and splice.lock; 6: and the fs grants;
# 7: a record of 6 may hold a tree others may write, which only a run of the graph closes
# (install/modes.py); 8: the state names the artifacts whose files digests it relied on;
# 9: each package's keys packed in one hex string (``_KEY``), its hashes joined in another;
# 10: the state holds the warnings of its splice.json's unknown keys
VERSION = 10

# Threads pay off only when hashlib and os.read release the GIL on enough bytes: hashlib does
# for buffers over 2 KiB, and a pool's start-up costs about what hashing 1 MiB does.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
PARALLEL_MIN_FILES = 4
_WORKERS = 4

# A package may hold any number of directories (empty ones too); past this many its
# directories are not recorded, so that package alone goes through the graph.
MAX_DIRECTORIES = 4 * MAX_FILES
# Everything here rests on ``st_ctime`` being the time of the last change, which no user
# process can set back. On Windows it is the creation time: nothing is recorded or trusted
# there, and every no-op hashes from bytes.
CTIME_IS_CHANGE_TIME = os.name != "nt"

Key = tuple[int, int, int, int, int, int]  # dev, ino, size, mtime_ns, ctime_ns, mode
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
Files = dict[str, tuple[Key, str]]  # relative path -> (key, hex sha256)
Directories = dict[str, Key]  # relative path ("" for the package's own) -> key
_HEX_DIGITS = b"0123456789abcdef"
# A key packed: device, inode and size unsigned, the two times signed (before 1970 they are
# negative), the mode unsigned; little-endian, no padding. A no-op compares the packed keys of
# a package's stats now with its recorded string as one string, and unpacks nothing: a JSON
# list of seven numbers per file cost a no-op sync of 990 files some 15 M instructions to
# parse and check field by field.
_KEY = struct.Struct("<QQQqqQ")
_KEY_HEX = 2 * _KEY.size
_SHA_HEX = 64


def _all_hex(texts: list[str]) -> bool:
    """Every text is lowercase hex digits only (an empty one too), checked in one pass over
    them all: ``str.strip`` looked each character up in the digits, some 60 % of a no-op
    sync's parsing of a member's stat cache."""
    joined = "".join(texts)
    return joined.isascii() and not joined.encode("ascii").translate(None, _HEX_DIGITS)


# The key of an ``os.stat_result``, read in C (no Python frame per call): it is taken for
# every installed file and directory of every project on each no-op sync. Its
# ``change_key`` (splice_build/file_keys.py) and the mode: a tree others may write is told by
# it (``_OTHERS_WRITE``), and a link or special file put in a recorded name (``_stats``).
_key: Callable[[os.stat_result], Key] = attrgetter(*CHANGE_FIELDS, "st_mode")


@dataclass(frozen=True)
class NoopState:
    """What a run that changed nothing saw: see the module docstring.

    ``project``/``lock`` are the texts of the parsed files (``lock`` is None when no lock
    file existed): a later no-op compares bytes, so it needs no hashing and no OpenSSL.
    ``project_file``/``lock_file`` are those files' ``file_identity``
    (splice_build/file_keys.py) as they were read: a checkout can ship a state holding the
    texts of its own ``splice.json`` and ``splice.lock`` and no package at all (nothing then
    left to compare), but it cannot know the inode and ``ctime`` its files get when they are
    written on this machine, and no process sets a ``ctime``, so only a state this machine
    wrote can ever match.

    ``fs``: every ``(entry, write)`` of the packages' lock grants and manifests (``fs.read``,
    ``fs.write``). Whether one reaches the project's state or ``SPLICE_HOME`` depends on the
    real path it names and on this run's home, not only on bytes (spec/project_state.py), so
    each no-op judges them again as the graph's ``verify`` does (tasks/noop.py).

    ``artifacts``: the hex of each package's locked integrity, whose files digest record in
    ``SPLICE_HOME`` the run found equal to the lock's (install/derived.py); each no-op finds
    the record still there (a cache removed since is derived again by the graph).

    ``warnings``: the notes on the keys of that ``splice.json`` this version does not read
    (``ProjectFile.unknown_keys``), which its bytes, compared on each no-op, give again: a
    no-op answers them as the graph's run does, so a project with a newer version's key
    (kept as written) skips the graph too."""

    splice: str
    root: str
    project: str
    lock: str | None
    packages: Mapping[str, str]  # id (valid: ``is_valid_package_id``) -> locked version
    project_file: FileIdentity
    lock_file: FileIdentity | None
    fs: tuple[tuple[str, bool], ...]
    artifacts: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "splice": self.splice,
            "root": self.root,
            "project": self.project,
            "lock": self.lock,
            "packages": dict(sorted(self.packages.items())),
            "projectFile": list(self.project_file),
            "lockFile": None if self.lock_file is None else list(self.lock_file),
            "fs": [[entry, write] for entry, write in self.fs],
            "artifacts": list(self.artifacts),
            "warnings": list(self.warnings),
        }


# One package's table as the file holds it: its names (distinct; written sorted), the keys
# of those names packed by ``_KEY`` in lowercase hex, and for files their SHA-256 in lowercase
# hex, joined (None for directories). A plain tuple: a no-op sync makes 180 of them.
Packed = tuple[list[str], str, "str | None"]


@dataclass
class StatCache:
    """The records of one project, loaded once per run; ``save`` writes what changed.

    The tables are kept as read (``Packed``) and decoded only for a run of the graph
    (``records``, ``directories``): a no-op compares them packed (``unchanged``)."""

    path: Path
    state: NoopState | None = None
    changed: bool = False
    # The file's tables, and its mtime (the racy rule: see ``_decode``).
    packed_files: dict[str, Packed] = field(default_factory=dict)
    # Every directory of a package, or the package is absent: see ``unchanged``.
    packed_directories: dict[str, Packed] = field(default_factory=dict)
    written_ns: int = 0
    _decoded: tuple[dict[str, Files], dict[str, Directories]] | None = None
    _fresh: dict[str, tuple[Files, Directories]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> StatCache:
        """The cache at ``path``; empty (and to be rewritten) when it cannot be trusted."""
        cache = cls(path)
        if not CTIME_IS_CHANGE_TIME:
            return cache
        try:
            # Not through a link; a FIFO in its place opens at once (and is no regular file).
            data, info = read_regular_file_and_stat(path, MAX_PROJECT_STATE_BYTES, follow=False)
            parsed = _parse(data, written_ns=info.st_mtime_ns)
        except OSError:  # missing, unreadable, too large, or no regular file
            parsed = None
        if parsed is None:
            cache.changed = True
        else:
            cache.packed_files, cache.packed_directories, cache.state = parsed
            cache.written_ns = info.st_mtime_ns
        return cache

    @property
    def records(self) -> dict[str, Files]:
        """Each package's ``relative path -> (key, hex sha256)``, racy ones dropped."""
        return self._tables()[0]

    @property
    def directories(self) -> dict[str, Directories]:
        """Each package's ``relative path -> key`` of its directories, where every one of
        them and of its files is recorded (``unchanged``)."""
        return self._tables()[1]

    def _tables(self) -> tuple[dict[str, Files], dict[str, Directories]]:
        if self._decoded is None:
            self._decoded = _decode(self.packed_files, self.packed_directories, self.written_ns)
        return self._decoded

    def unchanged(
        self,
        package_id: str,
        directory: str | Path,
        *,
        shared: list[tuple[str, os.stat_result]] | None = None,
    ) -> bool:
        """Every directory and file of ``directory`` has exactly its recorded stat.

        The no-op fast path's check (tasks/noop.py): what the records hash to was verified
        against the lock by the run that wrote them (nothing is hashed here, and nothing is
        listed). A directory's entries change only with its ``mtime`` and ``ctime``, so an
        unchanged key for every directory the run listed means the same names as then, each
        naming the same inode; an unchanged key for every file, the same content. The keys
        now, equal to the recorded ones, must also be strictly older than the cache file (the
        racy rule, as ``records`` drops a record that is not).

        ``shared``, when given, receives the path and stat of each of them that a user besides
        this one and root owns, or a group or others may write (``only_mine``): whether that
        user or group may also write the project is decided by the project's directory and
        groups, which can change while no recorded stat does (install/installed.py
        ``other_writers``). Owners are looked at where the package's directory is not this
        user's or root's; an entry of another user in a tree of this user's (a ``chown`` of
        one file, recorded while that user wrote the project) is left to the check before a
        run."""
        files = self.packed_files.get(package_id)
        directories = self.packed_directories.get(package_id)
        if not files or not files[0] or not directories or "" not in directories[0]:
            return False
        path = os.fspath(directory)
        infos = _stats(path, directories[0], files[0])
        if infos is None:
            return False
        keys = list(map(_key, infos))
        if _packed_now(keys) != directories[1] + files[1] or _newest(keys) >= self.written_ns:
            return False
        # The owner of the package's directory ("") stands for its tree's, which one user's
        # install writes whole; the modes are every entry's.
        own = infos[directories[0].index("")]
        if shared is not None and (
            not only_mine(own) or reduce(or_, map(_MODE, keys)) & _OTHERS_WRITE
        ):
            names = chain(directories[0], files[0])
            shared.extend(
                (os.path.join(path, name), info)
                for name, info in zip(names, infos, strict=True)
                if not only_mine(info)
            )
        return True

    def package_hashes(self, package_id: str, directory: Path) -> dict[str, str] | None:
        """The hash of every file of ``directory`` (as ``tree_hashes``), re-hashing changed
        files."""
        from splice_build.spec.tree_digest import NotAPackageTree

        known = self.records.get(package_id, {})
        listed: list[tuple[str, str, Key]] = []
        walked: dict[str, os.stat_result] = {}
        try:
            if not stat.S_ISDIR(os.lstat(directory).st_mode):
                return None
            _list(os.fspath(directory), listed, walked)
        except (NotAPackageTree, FileNotFoundError, NotADirectoryError):
            return None
        directories = {relative: _key(info) for relative, info in walked.items()}
        hashes: dict[str, str] = {}
        pending: list[tuple[str, str, Key]] = []
        for relative, path, key in listed:
            record = known.get(relative)
            if record is not None and record[0] == key:
                hashes[relative] = record[1]
            else:
                pending.append((relative, path, key))
        try:
            fresh = _hash_all(pending)
        except (NotAPackageTree, FileNotFoundError):
            return None
        for relative, _, key in pending:
            sha, opened = fresh[relative]
            if not _same_file(key, opened):  # another file, or this one changed, since listed
                return None
            hashes[relative] = sha
        if pending or len(known) != len(listed) or directories != self.directories.get(package_id):
            files = {rel: (key, hashes[rel]) for rel, _, key in listed}
            self._fresh[package_id] = (files, directories)
        return hashes

    def save(
        self, package_ids: Iterable[str], *, before_ns: int, state: NoopState | None = None
    ) -> None:
        """Record the packages of this run whose files are strictly older than ``before_ns``.

        ``before_ns`` is a file-system timestamp taken before any file was read (see the
        module docstring). Packages not in ``package_ids`` are dropped. ``state``: the
        project was a complete no-op (None drops a recorded one). Raises ``OSError``.
        """
        if not CTIME_IS_CHANGE_TIME:
            return
        ids = sorted(set(package_ids))
        records: dict[str, Files] = {}
        directories: dict[str, Directories] = {}
        for package_id in ids:
            files, walked = self._fresh.get(package_id) or (
                self.records.get(package_id),
                self.directories.get(package_id, {}),
            )
            if files is None:
                continue
            kept = {rel: (key, sha) for rel, (key, sha) in files.items() if _kept(key, before_ns)}
            if kept:
                records[package_id] = kept
            # All of them or none, and only with every file (see ``unchanged``).
            if (
                walked
                and len(walked) <= MAX_DIRECTORIES
                and len(kept) == len(files)
                and all(_kept(k, before_ns) for k in walked.values())
            ):
                directories[package_id] = walked
        if (
            not self.changed
            and records == self.records
            and directories == self.directories
            and state == self.state
        ):
            return
        from splice_build.project.atomic import atomic_write_bytes

        atomic_write_bytes(self.path, _encode(records, directories, state), durable=False)
        self.packed_files = {pid: _pack_files(entries) for pid, entries in records.items()}
        self.packed_directories = {pid: _pack_directories(w) for pid, w in directories.items()}
        self.written_ns, self._decoded, self.state = before_ns, (records, directories), state
        self.changed = False
        self._fresh.clear()


def file_system_now(marker: Path) -> int:
    """Now, by the clock of the file system holding ``marker`` (a file this run owns).

    ``utime`` with no times asks the file system for its current time (a network file
    system's server clock included), which is the clock every ``ctime`` comes from."""
    os.utime(marker)
    return os.stat(marker).st_mtime_ns


def _older(key: Key, before_ns: int) -> bool:
    """Both stamps of ``key`` are strictly older than ``before_ns`` (the racy rule)."""
    return key[3] < before_ns and key[4] < before_ns


def _kept(key: Key, before_ns: int) -> bool:
    """``key`` may be recorded: older than ``before_ns`` and each field within ``_KEY``'s
    64 bits (a file system such as tmpfs takes times whose nanoseconds do not fit: such a
    file is hashed on every run, as a racy one is)."""
    dev, ino, size, mtime, ctime, mode = key
    signed = min(mtime, ctime) >= -(2**63) and max(mtime, ctime) < 2**63
    return _older(key, before_ns) and signed and max(dev, ino, size, mode) < 2**64


def _stats(directory: str, *names: Iterable[str]) -> list[os.stat_result] | None:
    """The stat of every name of ``names`` under ``directory`` ("" for itself), not following
    links, or None when one cannot be taken.

    This runs for every installed file of every project on each no-op sync: one ``fstatat``
    per directory and file, relative to the package's directory opened once (no listing,
    and no path walked again from ``/`` for each name). A link or special file put in a
    recorded name has another mode (and changed its directory's key). Only reached where
    ``CTIME_IS_CHANGE_TIME`` (never on Windows, which has no ``dir_fd``)."""
    try:
        fd = os.open(directory, _DIRECTORY_FLAGS)
    except (OSError, ValueError):
        return None
    stat_at = os.stat
    infos = []
    try:
        for group in names:
            for relative in group:
                infos.append(
                    stat_at(relative, dir_fd=fd, follow_symlinks=False)
                    if relative
                    else os.fstat(fd)
                )
    except (OSError, ValueError):  # ValueError: a name with NUL or no encoding (a bad file)
        return None
    finally:
        os.close(fd)
    return infos


_MODE = itemgetter(5)
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def only_mine(info: os.stat_result) -> bool:
    """Owned by this user or root, and no group or others may write it: an entry
    ``other_writers`` (install/installed.py) passes without judging it."""
    return info.st_uid in (os.geteuid(), 0) and not info.st_mode & _OTHERS_WRITE


def _list(
    directory: str, listed: list[tuple[str, str, Key]], walked: dict[str, os.stat_result]
) -> None:
    from splice_build.spec.tree_digest import NotAPackageTree, package_files

    for relative, entry in package_files(directory, walked):
        info = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode):
            raise NotAPackageTree(entry.path)
        listed.append((relative, entry.path, _key(info)))


def _same_file(listed: Key, opened: Key) -> bool:
    """The stat of the descriptor hashed is the listed one. A listing on Windows reports
    device and inode as 0 (``DirEntry.stat``); there the other fields must agree."""
    if listed[0] == listed[1] == 0:
        return listed[2:] == opened[2:]
    return listed == opened


def _hash_one(item: tuple[str, str, Key]) -> tuple[str, tuple[str, Key]]:
    from splice_build.spec.tree_digest import hash_package_file_and_stat

    relative, path, _ = item
    sha, info = hash_package_file_and_stat(path)
    return relative, (sha, _key(info))


def _hash_all(pending: list[tuple[str, str, Key]]) -> dict[str, tuple[str, Key]]:
    """SHA-256 of every pending file with the stat of the very descriptor it was read from
    (a record pairs a stat with a hash: both must be of one file); on a few threads when
    there are bytes enough to win."""
    total = sum(key[2] for _, _, key in pending)
    if len(pending) < PARALLEL_MIN_FILES or total < PARALLEL_MIN_BYTES:
        return dict(map(_hash_one, pending))
    workers = min(_WORKERS, os.cpu_count() or 1, len(pending))
    if workers < 2:
        return dict(map(_hash_one, pending))
    from concurrent.futures import ThreadPoolExecutor  # ~5 ms of imports a no-op never needs

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(_hash_one, pending))


def _encode(
    records: Mapping[str, Files], directories: Mapping[str, Directories], state: NoopState | None
) -> bytes:
    # json.dumps, not the JavaScript-compatible writer: its numbers stop at 2**53.
    body = {
        "version": VERSION,
        "state": None if state is None else state.to_json(),
        "packages": {pid: _table(_pack_files(entries)) for pid, entries in records.items()},
        "directories": {pid: _table(_pack_directories(w)) for pid, w in directories.items()},
    }
    return (json.dumps(body, separators=(",", ":")) + "\n").encode("ascii")


def _packed(keys: list[Key]) -> str:
    """``keys`` packed one after the other by ``_KEY``, in lowercase hex: one ``struct.pack``
    of all their fields (the struct module keeps the few formats a run asks for compiled)."""
    return struct.pack("<" + _KEY.format[1:] * len(keys), *chain.from_iterable(keys)).hex()


def _packed_now(keys: list[Key]) -> str | None:
    """:func:`_packed` of keys just taken, or None when one does not fit (``_kept``: it was
    never recorded, so the package differs)."""
    try:
        return _packed(keys)
    except struct.error:
        return None


def _pack_files(entries: Files) -> Packed:
    names = sorted(entries)
    return (
        names,
        _packed([entries[name][0] for name in names]),
        "".join(entries[name][1] for name in names),
    )


def _pack_directories(walked: Directories) -> Packed:
    names = sorted(walked)
    return (names, _packed([walked[name] for name in names]), None)


def _table(packed: Packed) -> dict[str, object]:
    names, keys, shas = packed
    table: dict[str, object] = {"names": names, "keys": keys}
    if shas is not None:
        table["sha256"] = shas
    return table


Parsed = tuple[dict[str, Packed], dict[str, Packed], NoopState | None]
_TOP_KEYS = {"version", "state", "packages", "directories"}
_FILES_KEYS = {"names", "keys", "sha256"}
_DIRECTORIES_KEYS = {"names", "keys"}
_STATE_KEYS = {
    "splice",
    "root",
    "project",
    "lock",
    "packages",
    "projectFile",
    "lockFile",
    "fs",
    "artifacts",
    "warnings",
}


def _parse(data: bytes, *, written_ns: int) -> Parsed | None:
    """The packed tables and the state of a cache file, or None unless every field has
    exactly its shape (the keys and hashes are checked as hex here, and decoded by
    ``_decode`` only for a run of the graph)."""
    try:
        body = json.loads(data.decode("ascii"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict) or set(body) != _TOP_KEYS:
        return None
    if type(body["version"]) is not int or body["version"] != VERSION:
        return None
    valid: set[str] = set()  # the package ids checked so far: each table names the same
    hexes: list[str] = []  # every keys and hashes string, all hex digits checked at the end
    files = _parse_tables(body["packages"], _FILES_KEYS, MAX_FILES, valid, hexes)
    directories = _parse_tables(
        body["directories"], _DIRECTORIES_KEYS, MAX_DIRECTORIES, valid, hexes
    )
    if files is None or directories is None or not _all_hex(hexes):
        return None
    state = body["state"]
    if state is None:
        return files, directories, None
    parsed_state = _parse_state(state, valid)
    return None if parsed_state is None else (files, directories, parsed_state)


def _parse_tables(
    packages: object, fields: set[str], limit: int, valid: set[str], hexes: list[str]
) -> dict[str, Packed] | None:
    """The tables of a per-package table (see ``Packed``), each of exactly ``fields`` and at
    most ``limit`` names, or None for a bad shape; ``valid``: ids already found valid, to which
    this adds; ``hexes``: the strings still to be checked as hex, to which this adds."""
    if not isinstance(packages, dict):
        return None
    tables = {}
    for package_id, table in packages.items():
        if not isinstance(table, dict) or set(table) != fields:
            return None
        names, keys, shas = table["names"], table["keys"], table.get("sha256")
        if type(names) is not list or len(names) > limit or type(keys) is not str:
            return None
        if len(keys) != _KEY_HEX * len(names) or not set(map(type, names)) <= {str}:
            return None
        if len(set(names)) != len(names):
            return None
        hashed = shas is not None or "sha256" in fields
        if hashed and (type(shas) is not str or len(shas) != _SHA_HEX * len(names)):
            return None
        if not _valid_id(package_id, valid):
            return None
        hexes += (keys, shas) if hashed else (keys,)
        tables[package_id] = (names, keys, shas)
    return tables


def _valid_id(package_id: object, valid: set[str]) -> bool:
    """``is_valid_package_id``, asked once per id of one file (its three tables name the
    same few ids, and a no-op sync parses every member's file)."""
    if package_id in valid:
        return True
    if not is_valid_package_id(package_id):
        return False
    valid.add(package_id)  # type: ignore[arg-type]  # a valid id is a str
    return True


def _newest(keys: list[Key]) -> int:
    """The latest ``mtime`` or ``ctime`` of ``keys``, found in C (a no-op sync asks it of
    every installed file's key)."""
    if not keys:
        return -(2**63)
    return max(max(map(_MTIME, keys)), max(map(_CTIME, keys)))


_MTIME, _CTIME = itemgetter(3), itemgetter(4)


def _unpacked(packed: str) -> list[Key]:
    return list(_KEY.iter_unpack(bytes.fromhex(packed)))


def _decode(
    files: Mapping[str, Packed], directories: Mapping[str, Packed], written_ns: int
) -> tuple[dict[str, Files], dict[str, Directories]]:
    """The records and directories of checked tables. Entries not strictly older than
    ``written_ns`` (the cache file's ``mtime``) are dropped as racy, and with any of a
    package's, its directories."""
    records: dict[str, Files] = {}
    racy = set()
    for package_id, packed in files.items():
        names, _, shas = packed
        hashes = [shas[i : i + _SHA_HEX] for i in range(0, len(shas or ""), _SHA_HEX)]
        entries = zip(names, zip(_unpacked(packed[1]), hashes, strict=True), strict=True)
        records[package_id] = {rel: entry for rel, entry in entries if _older(entry[0], written_ns)}
        if len(records[package_id]) != len(names):
            racy.add(package_id)
    walked: dict[str, Directories] = {}
    for package_id, packed in directories.items():
        keys = _unpacked(packed[1])
        if "" in packed[0] and package_id not in racy and _newest(keys) < written_ns:
            walked[package_id] = dict(zip(packed[0], keys, strict=True))
    return records, walked


def _parse_state(state: object, valid: set[str]) -> NoopState | None:
    if not isinstance(state, dict) or set(state) != _STATE_KEYS:
        return None
    texts = [state[name] for name in ("splice", "root", "project")]
    versions = state["packages"]
    if not all(isinstance(text, str) for text in texts) or not isinstance(versions, dict):
        return None
    if state["lock"] is not None and not isinstance(state["lock"], str):
        return None
    if not all(isinstance(v, str) for v in versions.values()):
        return None
    if not all(_valid_id(package_id, valid) for package_id in versions):
        return None
    project_file = _as_identity(state["projectFile"])
    lock_file = None if state["lockFile"] is None else _as_identity(state["lockFile"])
    if project_file is None or (lock_file is None) != (state["lock"] is None):
        return None
    fs = _as_fs_entries(state["fs"])
    artifacts = state["artifacts"]
    if fs is None or type(artifacts) is not list:
        return None
    if not all(type(a) is str and len(a) == 64 for a in artifacts) or not _all_hex(artifacts):
        return None
    warnings = state["warnings"]
    if type(warnings) is not list or not all(type(w) is str for w in warnings):
        return None
    return NoopState(
        *texts,
        lock=state["lock"],
        packages=versions,
        project_file=project_file,
        lock_file=lock_file,
        fs=fs,
        artifacts=tuple(artifacts),
        warnings=tuple(warnings),
    )


def _as_fs_entries(value: object) -> tuple[tuple[str, bool], ...] | None:
    """A list of ``[entry, write]`` pairs (a string and a bool), else None."""
    if type(value) is not list:
        return None
    entries = []
    for pair in value:
        if type(pair) is not list or len(pair) != 2:
            return None
        entry, write = pair
        if type(entry) is not str or type(write) is not bool:
            return None
        entries.append((entry, write))
    return tuple(entries)


def _as_identity(value: object) -> FileIdentity | None:
    """Three integers (not bools), device and inode not negative, else None."""
    if type(value) is not list or len(value) != 3 or not all(type(v) is int for v in value):
        return None
    dev, ino, ctime = value
    return (dev, ino, ctime) if min(dev, ino) >= 0 else None
