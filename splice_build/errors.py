"""Every error a user can cause, as one exception type with a stable code.

Tree (catch at any level)::

    SpliceError                  code, message, details, hint; exit code from the code
    ├── SpecError                manifests, names, ranges, archives (spec/)
    ├── ProjectError             splice.json, splice.lock, SPLICE_HOME (project/)
    ├── InstallError             resolve, download, verify, consent (install/)
    ├── RegistryError            registry client, store and HTTP service (registry/)
    ├── SandboxError             runtime loader and sandbox (runtime/)
    └── BrokerError              capability broker and providers (broker/)

Tool failures are *results* (``ToolResult`` with ``ok=False``), not exceptions; the
runtime uses the same codes for them. The codes are compatible with the TypeScript
Splice (docs/compatibility.md#names-and-versions, docs/compatibility.md#error-codes, docs/compatibility.md#registry-api).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Any


class ErrorCode(StrEnum):
    """The catalogue: every code any part of Splice may report."""

    # spec (names, semver, manifests, archives)
    INVALID_NAME = "INVALID_NAME"
    INVALID_REF = "INVALID_REF"
    INVALID_VERSION = "INVALID_VERSION"
    INVALID_RANGE = "INVALID_RANGE"
    INVALID_BUNDLE = "INVALID_BUNDLE"
    INVALID_MANIFEST = "INVALID_MANIFEST"
    # core (project files, install, registry client)
    NOT_A_PROJECT = "NOT_A_PROJECT"
    INVALID_PROJECT = "INVALID_PROJECT"
    INVALID_CONFIG = "INVALID_CONFIG"
    PACKAGE_NOT_FOUND = "PACKAGE_NOT_FOUND"
    NO_MATCHING_VERSION = "NO_MATCHING_VERSION"
    INTEGRITY_MISMATCH = "INTEGRITY_MISMATCH"
    LOCK_MISMATCH = "LOCK_MISMATCH"
    LOCK_INCOMPLETE = "LOCK_INCOMPLETE"  # a lock entry lacks a field a check needs
    INSTALLED_PACKAGE_MODIFIED = "INSTALLED_PACKAGE_MODIFIED"
    INVALID_PACKAGE = "INVALID_PACKAGE"
    NOT_INSTALLED = "NOT_INSTALLED"
    AMBIGUOUS_TOOL = "AMBIGUOUS_TOOL"
    NOT_LOGGED_IN = "NOT_LOGGED_IN"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    VERSION_EXISTS = "VERSION_EXISTS"
    RATE_LIMITED = "RATE_LIMITED"
    PERMISSIONS_NOT_ACCEPTED = "PERMISSIONS_NOT_ACCEPTED"
    PERMISSIONS_NOT_GRANTED = "PERMISSIONS_NOT_GRANTED"
    REGISTRY_UNREACHABLE = "REGISTRY_UNREACHABLE"
    REGISTRY_UNAVAILABLE = "REGISTRY_UNAVAILABLE"
    REGISTRY_ERROR = "REGISTRY_ERROR"
    SIGNATURE_INVALID = "SIGNATURE_INVALID"
    SIGNATURE_REQUIRED = "SIGNATURE_REQUIRED"
    SIGNER_CHANGED = "SIGNER_CHANGED"
    SIGNER_UNTRUSTED = "SIGNER_UNTRUSTED"
    OFFICIAL_SIGNATURE_REQUIRED = "OFFICIAL_SIGNATURE_REQUIRED"  # docs/signing.md
    KEY_NOT_FOUND = "KEY_NOT_FOUND"
    KEY_EXISTS = "KEY_EXISTS"
    USAGE = "USAGE"
    STATE_LOCKED = "STATE_LOCKED"
    ISOLATION_UNAVAILABLE = "ISOLATION_UNAVAILABLE"
    DISK_FULL = "DISK_FULL"  # a write found no space (or hit a file size limit)
    NOT_WRITABLE = "NOT_WRITABLE"  # a write was refused: read-only file system or permissions
    INTERRUPTED = "INTERRUPTED"  # ^C, SIGTERM or SIGHUP stopped the command; close() a call
    # runtime
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    INVALID_INPUT = "INVALID_INPUT"
    INPUT_TOO_LARGE = "INPUT_TOO_LARGE"
    INVALID_OUTPUT = "INVALID_OUTPUT"
    OUTPUT_TOO_LARGE = "OUTPUT_TOO_LARGE"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    TOOL_LOAD_FAILED = "TOOL_LOAD_FAILED"
    TOOL_ERROR = "TOOL_ERROR"
    TIMEOUT = "TIMEOUT"
    TOOL_CRASHED = "TOOL_CRASHED"
    RUNTIME_UNSUPPORTED = "RUNTIME_UNSUPPORTED"
    # capability channel and broker
    CAPABILITY_LIMIT = "CAPABILITY_LIMIT"
    CAPABILITY_UNAVAILABLE = "CAPABILITY_UNAVAILABLE"
    RESULT_TOO_LARGE = "RESULT_TOO_LARGE"
    BROKER_ERROR = "BROKER_ERROR"
    PROVIDER_ERROR = "PROVIDER_ERROR"
    # network guard (security/guarded_http.py)
    NETWORK_ERROR = "NETWORK_ERROR"
    RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE"
    ALL_PROVIDERS_FAILED = "ALL_PROVIDERS_FAILED"
    # registry service (HTTP error bodies)
    NOT_FOUND = "NOT_FOUND"
    BAD_REQUEST = "BAD_REQUEST"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    STORAGE_UNAVAILABLE = "STORAGE_UNAVAILABLE"
    SERVER_STOPPING = "SERVER_STOPPING"  # a request body still arriving at the stop's cut: 503
    DEPENDENCIES_UNSUPPORTED = "DEPENDENCIES_UNSUPPORTED"
    NAMESPACE_RESERVED = "NAMESPACE_RESERVED"
    NAME_CONFUSABLE = "NAME_CONFUSABLE"  # a new name imitates a reserved or another's one
    TOKEN_SCOPE = "TOKEN_SCOPE"
    USER_EXISTS = "USER_EXISTS"
    ADMIN_DISABLED = "ADMIN_DISABLED"
    ARTIFACT_STORAGE_FAILED = "ARTIFACT_STORAGE_FAILED"
    METADATA_WRITE_FAILED = "METADATA_WRITE_FAILED"
    KEY_NOT_REGISTERED = "KEY_NOT_REGISTERED"
    KEY_REVOKED = "KEY_REVOKED"
    INVALID_SIGNATURE = "INVALID_SIGNATURE"


# Exit codes (docs/compatibility.md#cli): 0 ok, 1 failed, 2 usage.
EXIT_FAILED = 1
EXIT_USAGE = 2

_USAGE_CODES = frozenset(
    {
        ErrorCode.USAGE,
        ErrorCode.INVALID_NAME,
        ErrorCode.INVALID_REF,
        ErrorCode.INVALID_RANGE,
        ErrorCode.INVALID_VERSION,
        ErrorCode.INVALID_CONFIG,
    }
)


class SpliceError(Exception):
    """An error with a stable code, shown to people as ``error:`` / ``- detail`` / ``hint:``.

    ``hint`` defaults to the class attribute, so advice can live with an error family.
    """

    hint: str | None = None

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        details: Iterable[str] = (),
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.details: tuple[str, ...] = tuple(details)
        if hint is not None:
            self.hint = hint

    @property
    def exit_code(self) -> int:
        if self.code in _USAGE_CODES:
            return EXIT_USAGE
        return EXIT_FAILED

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape ``{code, message, details?, hint?}`` used by CLI, MCP and HTTP."""
        out: dict[str, Any] = {"code": str(self.code), "message": self.message}
        if self.details:
            out["details"] = list(self.details)
        if self.hint:
            out["hint"] = self.hint
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!s}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and copied) by its attributes, not by calling ``__init__`` with the
        message alone, which no ``SpliceError`` takes: a ``SpliceError`` raised in a worker of
        ``concurrent.futures.ProcessPoolExecutor`` could not be read back, and the pool broke
        (``BrokenProcessPool`` for that call and every later one)."""
        return (_restored, (type(self), self.message), self.__dict__)


def _restored(cls: type[SpliceError], message: str) -> SpliceError:
    """A ``cls`` holding ``message`` as its argument; pickle then sets its attributes."""
    error = cls.__new__(cls, message)
    Exception.__init__(error, message)
    return error


class SpecError(SpliceError):
    """A manifest, name, range, version or archive is not valid."""


class ProjectError(SpliceError):
    """splice.json, splice.lock or user state is missing or malformed."""


class InstallError(SpliceError):
    """Resolving, downloading, verifying or installing a package failed."""


class NotDerivedError(InstallError):
    """``NOT_INSTALLED`` for a tree that is there but was never checked on this machine
    against its artifact (install/derived.py): unlike a package that is missing, it has a
    step to take (``splice install``), which ``splice mcp`` says rather than calling the tool
    unknown (mcp/backend.py)."""


class RegistryError(SpliceError):
    """The registry refused a request or could not be reached."""


class SandboxError(SpliceError):
    """A package could not be loaded or run by the runtime."""


class BrokerError(SpliceError):
    """A host capability could not be served."""


class UsageError(SpliceError):
    """The command line was wrong (exit 2)."""

    def __init__(self, message: str, *, details: Iterable[str] = (), hint: str | None = None):
        super().__init__(ErrorCode.USAGE, message, details=details, hint=hint)


_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_NOT_WRITABLE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
# What creating or entering a directory answers when a file stands in its place.
_IN_THE_WAY_ERRNOS = frozenset({errno.EEXIST, errno.ENOTDIR})
# No descriptor left: the process's open-file limit, or the system's table.
_OUT_OF_FILES_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE})


def out_of_files(where: object) -> ProjectError:
    """No file descriptor was left to open ``where``: a limit the user can raise, not a bug.
    A workspace sync makes room for its members' locks up front
    (tasks/sync.py room_for_members), but each install's own files come on top: a first sync
    of 20 members under ``ulimit -n 36`` ended in ``INTERNAL_ERROR`` with a crash report."""
    return ProjectError(
        ErrorCode.INVALID_CONFIG,
        f"no file descriptor was left to open {where}: the open-file limit is too low",
        hint="raise it (ulimit -n) and run the command again; an install it cut short is "
        "finished or undone then",
    )


def disk_full(where: object) -> ProjectError:
    """A write found no room (``where``: the file or database)."""
    return ProjectError(
        ErrorCode.DISK_FULL,
        f"no space left to write {where}",
        hint="free some space and run the command again; no file was left half-written",
    )


def not_writable(where: object, reason: str) -> ProjectError:
    """A write was refused by the file system (read-only mount, permissions)."""
    return ProjectError(
        ErrorCode.NOT_WRITABLE,
        f"the file system refused access to {where}: {reason}",
        hint="make it writable and run the command again; no file was left half-written",
    )


def storage_error(exc: OSError) -> ProjectError | None:
    """The coded error for a file system refusal a user can fix (a full disk, no write access,
    a file in the way, no descriptor left), or None for anything else.

    A full disk, a read-only tree and a file where a directory belongs are the user's to fix,
    not bugs: every writer of state writes atomically (docs/lifecycle.md#failure-and-recovery),
    so the previous files are intact and the same command succeeds once there is room, write
    access or the directory.
    """
    where = exc.filename or "a file"
    if exc.errno in _OUT_OF_FILES_ERRNOS:
        return out_of_files(where)
    if exc.errno in _DISK_FULL_ERRNOS:
        return disk_full(where)
    if exc.errno in _NOT_WRITABLE_ERRNOS:
        return not_writable(where, exc.strerror or "refused")
    if exc.errno in _IN_THE_WAY_ERRNOS and exc.filename is not None:
        return _in_the_way(exc.filename, exc.strerror or "in the way")
    return None


def _in_the_way(filename: object, reason: str) -> ProjectError | None:
    """``NOT_WRITABLE`` naming what stands where Splice creates or enters a directory
    (``SPLICE_HOME/keys``, ``SPLICE_HOME/registry`` or ``.splice/packages`` made a regular
    file: ``FileExistsError`` or ``NotADirectoryError``, an ``INTERNAL_ERROR`` before): the
    first part of ``filename``'s path that exists, when it is not a directory; else None (a
    directory there is no user's to fix)."""
    if not isinstance(filename, str | bytes | os.PathLike):
        return None
    path = Path(os.fsdecode(filename))
    for part in (path, *path.parents):
        try:
            mode = os.lstat(part).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            return None
        return ProjectError(
            ErrorCode.NOT_WRITABLE,
            f"{part} is in the way: {reason}",
            hint=f"remove or move {part}; the next command creates what it needs",
        )
    return None
