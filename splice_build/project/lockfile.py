"""``splice.lock``: the exact versions, bytes and grants a project installed.

docs/compatibility.md#splicelock::

    { "lockfileVersion": 1, "packages": { "@ns/name": LockEntry } }

Entries are written byte for byte as the TypeScript Splice writes them (docs/compatibility.md,
"splice.lock"): its key order (``version``, ``integrity``, ``size?``, ``files?``, ``registry``,
``resolved``, ``permissions?``, ``signedBy?``), package ids in JavaScript's sort order,
``JSON.stringify(…, null, 2)`` and a trailing newline. An empty lock deletes the
file. The legacy ``splice-lock.json`` is read when ``splice.lock`` is missing and deleted on
the next write. Every malformed field is reported as ``INVALID_PROJECT`` ("malformed entry
for @a/b: …"). No credential is ever stored here.

Fail closed by construction (docs/security.md#incomplete-lock-entries): an optional field that
a check depends on (``size``, ``files``, ``permissions``: ``x-when-absent: unknown`` in
``schemas/lock_entry.schema.json``) is read as :data:`UNKNOWN` when absent, never as "nothing
to check". The checks reach those fields only through :meth:`LockEntry.known`, which raises
``LOCK_INCOMPLETE`` while any is unknown; ``splice install`` re-derives them from the verified
artifact. An absent ``signedBy`` is a value (unsigned); an absent ``registry`` comes from
``resolved``.

As with ``splice.json``, a read-modify-write cycle must hold
``lock(ProjectLayout(root).state_lock)``; the functions here do not lock.
"""

from __future__ import annotations

import contextlib
import enum
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from splice_build.errors import ErrorCode, ProjectError, SpecError
from splice_build.project.atomic import atomic_write_json, decode_json, fsync_directory
from splice_build.project.layout import LOCK_FILE, ProjectLayout
from splice_build.project.project_file import shown_problems, sorted_by_id
from splice_build.records import dataclass, field, fields
from splice_build.spec.digests import is_integrity
from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES
from splice_build.spec.names import PackageId
from splice_build.spec.permissions import Permissions
from splice_build.spec.regular_file import read_regular_file
from splice_build.spec.semver import Version

LOCKFILE_VERSION = 1
NO_LOCK_FILE = "none"  # Lockfile.source when neither lock file exists
_KEY_ID = re.compile(r"ed25519:[0-9a-f]{16}")  # docs/compatibility.md#splicelock, signedBy
_KEY_ID_FORM = "ed25519:<16 lowercase hex digits>"
_INTEGRITY_FORM = "sha256-<64 lowercase hex digits>"
_MAX_SAFE_INTEGER = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER


class Unknown(enum.Enum):
    """The state of a lock field the file does not record: every check needing it refuses."""

    UNKNOWN = "unknown"

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = Unknown.UNKNOWN
INCOMPLETE_HINT = "Run `splice install` to re-derive them from the verified artifact."


@dataclass(frozen=True)
class KnownFields:
    """The check fields of a complete entry (only :meth:`LockEntry.known` makes one)."""

    size: int
    files: str
    permissions: Permissions


@dataclass(frozen=True)
class LockEntry:
    """One locked package. ``registry`` is filled from ``resolved`` for old locks; ``size``,
    ``files`` and ``permissions`` are :data:`UNKNOWN` when the file does not record them."""

    version: str
    integrity: str
    resolved: str
    registry: str | None = None
    size: int | Unknown = UNKNOWN
    files: str | Unknown = UNKNOWN
    permissions: Permissions | Unknown = UNKNOWN
    signed_by: str | None = None

    def __post_init__(self) -> None:
        if None in (self.size, self.files, self.permissions):
            raise AssertionError("BUG: a lock field that is not recorded is UNKNOWN, not None")

    @property
    def missing(self) -> tuple[str, ...]:
        """The JSON names of the check fields this entry does not record, in key order."""
        return tuple(
            _JSON_NAME.get(f.name, f.name) for f in fields(self) if getattr(self, f.name) is UNKNOWN
        )

    def known(self, package_id: str) -> KnownFields:
        """The check fields, or ``ProjectError(LOCK_INCOMPLETE)`` naming the missing ones."""
        size, files, permissions = self.size, self.files, self.permissions
        if (
            isinstance(size, Unknown)
            or isinstance(files, Unknown)
            or isinstance(permissions, Unknown)
        ):
            raise incomplete(package_id, self)
        return KnownFields(size, files, permissions)

    @property
    def size_if_known(self) -> int | None:
        """For the install path only, which re-derives the size: the SHA-256 pins the bytes."""
        return None if isinstance(self.size, Unknown) else self.size

    def to_json(self) -> dict[str, Any]:
        """The TypeScript Splice's key order; ``registry`` is always written (from ``resolved``
        when the entry has none); an unknown field stays absent."""
        out: dict[str, Any] = {"version": self.version, "integrity": self.integrity}
        if not isinstance(self.size, Unknown):
            out["size"] = self.size
        if not isinstance(self.files, Unknown):
            out["files"] = self.files
        out["registry"] = self.registry if self.registry is not None else registry_of(self.resolved)
        out["resolved"] = self.resolved
        if not isinstance(self.permissions, Unknown):
            out["permissions"] = self.permissions.to_json()
        if self.signed_by is not None:
            out["signedBy"] = self.signed_by
        return out


_JSON_NAME = {"signed_by": "signedBy"}


def incomplete(package_id: str, entry: LockEntry) -> ProjectError:
    """``LOCK_INCOMPLETE``: nothing of ``package_id`` runs or counts as verified until
    ``splice install`` records the missing fields."""
    missing = entry.missing
    return ProjectError(
        ErrorCode.LOCK_INCOMPLETE,
        f"splice.lock entry for {package_id} does not record {', '.join(missing)}",
        details=[f"{name}: unknown (needed by the {_CHECK_OF[name]} check)" for name in missing],
        hint=INCOMPLETE_HINT,
    )


_CHECK_OF = {"size": "size", "files": "tamper", "permissions": "consent"}


@dataclass(frozen=True)
class Lockfile:
    """The parsed lock: package id → :class:`LockEntry`, in id order."""

    packages: Mapping[str, LockEntry]
    # SHA-256 hex of the bytes of ``splice.lock`` this was read from, NO_LOCK_FILE when
    # neither lock file exists, None otherwise (built in memory, or the legacy file); the
    # no-op state compares it (install/statcache.py).
    source: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "packages", MappingProxyType(sorted_by_id(self.packages)))

    def get(self, package_id: str) -> LockEntry | None:
        return self.packages.get(package_id)

    def with_entry(self, package_id: str, entry: LockEntry) -> Lockfile:
        """A copy with ``package_id`` locked to ``entry`` (added or replaced)."""
        return Lockfile({**self.packages, package_id: entry})

    def without(self, package_id: str) -> Lockfile:
        """A copy without ``package_id`` (unchanged if it was not locked)."""
        return Lockfile({k: v for k, v in self.packages.items() if k != package_id})

    def to_json(self) -> dict[str, Any]:
        packages = {k: entry.to_json() for k, entry in self.packages.items()}
        return {"lockfileVersion": LOCKFILE_VERSION, "packages": packages}


def load_lockfile(root: Path) -> Lockfile:
    """Read ``splice.lock`` (or the legacy ``splice-lock.json``); missing → empty.

    Raises ``ProjectError(INVALID_PROJECT)`` when the file cannot be read or is malformed.
    """
    global _last_read
    layout = ProjectLayout(Path(root))
    for path in (layout.lock_file, layout.legacy_lock_file):
        try:
            data = read_regular_file(path, MAX_PROJECT_STATE_BYTES)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _invalid(path.name, f"cannot be read ({exc.strerror})") from exc
        last = _last_read
        if last is not None and last[0] == path.name and last[1] == data:
            return last[2]
        try:
            parsed = _decode(path.name, data)
        except ProjectError as exc:
            exc.hint = (
                f"Restore {path} from version control, or remove it and run `splice install`"
                " to lock the ranges of splice.json again."
            )
            raise
        if path == layout.lock_file:
            from splice_build.spec.digests import sha256_hex

            parsed = Lockfile(parsed.packages, source=sha256_hex(data))
        _last_read = (path.name, data, parsed)
        return parsed
    return Lockfile({}, source=NO_LOCK_FILE)


# The last lock this process read, by its exact bytes: a long-lived caller (``splice mcp``
# reads the lock for every call) parses it again only when a byte differs. A Lockfile is
# immutable, so handing the same one out twice is safe.
_last_read: tuple[str, bytes, Lockfile] | None = None


def lock_entries(data: bytes) -> Mapping[str, LockEntry]:
    """The entries of ``splice.lock`` bytes the caller already holds (the no-op fast path,
    tasks/noop.py, which has just compared them with the file); raises ``ProjectError``."""
    return _decode(LOCK_FILE, data).packages


def _decode(file_name: str, data: bytes) -> Lockfile:
    try:
        value = decode_json(data, unique_keys=True)
    except ValueError as exc:
        raise _invalid(file_name, str(exc)) from exc
    return _parse(file_name, value)


def save_lockfile(root: Path, lock: Lockfile) -> None:
    """Write ``splice.lock`` atomically, or delete it when ``lock`` is empty.

    The legacy ``splice-lock.json`` is deleted after the new file is in place, so a crash
    in between leaves both files and ``splice.lock`` (the newer) wins on the next read.
    """
    layout = ProjectLayout(Path(root))
    if lock.packages:
        atomic_write_json(layout.lock_file, lock.to_json(), keep_mode=True)
    else:
        _remove(layout.lock_file)
    _remove(layout.legacy_lock_file)


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
        fsync_directory(path.parent)


def _invalid(file_name: str, problem: str, details: tuple[str, ...] = ()) -> ProjectError:
    return ProjectError(
        ErrorCode.INVALID_PROJECT, f"{file_name} is invalid: {problem}", details=details
    )


def _parse(file_name: str, value: object) -> Lockfile:
    if not isinstance(value, dict):
        raise _invalid(file_name, "the top level must be a JSON object")
    problems: list[str] = []
    version = value.get("lockfileVersion")
    if not (_is_number(version) and version == LOCKFILE_VERSION):
        problems.append(f"lockfileVersion: must be {LOCKFILE_VERSION}")
    raw_packages = value.get("packages", {})
    entries: dict[str, LockEntry] = {}
    if isinstance(raw_packages, dict):
        for key, raw in raw_packages.items():
            entry = _parse_entry(key, raw, problems)
            if entry is not None:
                entries[key] = entry
    else:
        problems.append("packages: must be an object")
    if problems:
        # A checkout chooses how many problems its lock has and what each quotes: 5,000
        # malformed entries made every command there print 6 MB.
        shown = shown_problems(problems)
        raise _invalid(file_name, shown[0], tuple(shown) if len(problems) > 1 else ())
    return Lockfile(entries)


def _parse_entry(key: str, raw: object, problems: list[str]) -> LockEntry | None:
    """Parse one entry; append ``malformed entry for <id>: <field>: …`` lines on failure."""
    found: list[str] = []
    try:
        if PackageId.parse(key).id != key:
            found.append("invalid package id")
    except SpecError as exc:
        found.append(f"invalid package id ({exc.message})")
    if not isinstance(raw, dict):
        found.append("must be an object")
        problems.extend(f"malformed entry for {key}: {p}" for p in found)
        return None
    version = _version(raw, found)
    integrity = _matching(raw, "integrity", is_integrity, _INTEGRITY_FORM, found, required=True)
    resolved = _string(raw, "resolved", found, required=True)
    registry = _string(raw, "registry", found)
    size = _size(raw, found)
    files = _matching(raw, "files", is_integrity, _INTEGRITY_FORM, found)
    signed_by = _matching(raw, "signedBy", _KEY_ID.fullmatch, _KEY_ID_FORM, found)
    permissions = _permissions(raw, found)
    if found:
        problems.extend(f"malformed entry for {key}: {p}" for p in found)
        return None
    assert version is not None and integrity is not None and resolved is not None
    if registry is None:
        registry = registry_of(resolved)
    return LockEntry(
        version,
        integrity,
        resolved,
        registry,
        UNKNOWN if size is None else size,
        UNKNOWN if files is None else files,
        UNKNOWN if permissions is None else permissions,
        signed_by,
    )


def registry_of(resolved: str) -> str:
    """The registry base URL of a download URL ``<registry>/packages/<ns>/<name>/<v>/download``:
    the text before the last ``/packages/``, or the whole URL when there is none (as TS reads
    locks that predate the ``registry`` field)."""
    at = resolved.rfind("/packages/")
    return resolved[:at] if at > 0 else resolved


def _string(
    raw: dict[str, Any], field: str, found: list[str], *, required: bool = False
) -> str | None:
    if field not in raw:
        if required:
            found.append(f"{field}: missing")
        return None
    value = raw[field]
    if not isinstance(value, str):
        found.append(f"{field}: must be a string")
        return None
    return value


def _matching(
    raw: dict[str, Any],
    field: str,
    test: Callable[[str], object],
    form: str,
    found: list[str],
    *,
    required: bool = False,
) -> str | None:
    text = _string(raw, field, found, required=required)
    if text is not None and not test(text):
        found.append(f"{field}: must look like {form}")
        return None
    return text


def _version(raw: dict[str, Any], found: list[str]) -> str | None:
    text = _string(raw, "version", found, required=True)
    if text is None:
        return None
    try:
        Version.parse(text)
    except SpecError as exc:
        found.append(f"version: {exc.message}")
        return None
    return text


def _size(raw: dict[str, Any], found: list[str]) -> int | None:
    if "size" not in raw:
        return None
    size = raw["size"]
    # Number.isSafeInteger semantics: 5 and 5.0 are the same JSON number; booleans are not.
    if _is_number(size) and 0 <= size <= _MAX_SAFE_INTEGER and size == int(size):
        return int(size)
    found.append("size: must be a non-negative integer")
    return None


def _is_number(value: object) -> bool:
    # JSON.parse reads 1 and 1.0 as the same number; a boolean is never a number.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _permissions(raw: dict[str, Any], found: list[str]) -> Permissions | None:
    if "permissions" not in raw:
        return None
    try:
        return Permissions.from_json(raw["permissions"], where="permissions")
    except SpecError as exc:
        found.append("permissions: " + "; ".join(exc.details or (exc.message,)))
        return None
