"""Packing a package directory into its artifact (docs/compatibility.md#package-format, ``packages/core/src/pack.ts``).

The walk skips every name starting with ``.`` (``.git``, ``.env``, ``.DS_Store``) and every
``node_modules``, refuses symbolic links and anything that is not a regular file or a
directory, and stops at 500 files, at 2 MiB per file without reading further, and at a
directory whose path leaves no room for a file (256 characters; a checkout nested thousands
of levels deep is refused, never walked to the end). Files are
opened with ``O_NOFOLLOW`` and ``O_NONBLOCK`` so a file swapped for a link or a FIFO during
the walk is refused too, never followed or waited on.

A file that is itself a packed artifact (``archive.is_packed_archive``, by its bytes, not its
name) is refused: it is an earlier ``splice pack`` output left in the package directory, and
packing it would publish the previous release inside the next one (and each pack would hold
all the ones before it).

Every error is SpecError(INVALID_PACKAGE), as the TypeScript ``splice pack`` reports them: the
message says what is wrong and the details name the path (relative to the package directory)
or list every problem of an invalid package.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.errors import ErrorCode, SpecError
from splice_build.records import dataclass
from splice_build.spec.archive import is_packed_archive, pack_archive
from splice_build.spec.digests import integrity_of
from splice_build.spec.entry_rules import PackageFiles, quote_path
from splice_build.spec.limits import MAX_FILE_BYTES
from splice_build.spec.paths import MAX_RELATIVE_PATH, utf16_len, utf16_sort_key
from splice_build.spec.regular_file import READ_FLAGS

if TYPE_CHECKING:
    from splice_build.spec.manifest import Manifest

_SKIPPED_NAME = "node_modules"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True)
class PackResult:
    """A packed package: its validated manifest, files, artifact bytes and their integrity."""

    manifest: Manifest
    files: dict[str, bytes]
    archive: bytes
    integrity: str
    size: int


def _refuse(message: str, relative: str, reason: str) -> SpecError:
    return SpecError(
        ErrorCode.INVALID_PACKAGE, message, details=[f"entry {quote_path(relative)}: {reason}"]
    )


def _as_package_error(exc: SpecError) -> SpecError:
    """An archive rule broken while packing is a package problem: same message and details."""
    return SpecError(ErrorCode.INVALID_PACKAGE, exc.message, details=exc.details)


def _read_regular(path: Path, relative: str) -> bytes:
    """Read at most one byte over the file limit from a regular file that is not a link.

    Opened without blocking (``READ_FLAGS``): a file swapped for a FIFO after the walk saw a
    regular file would otherwise hold the open until some writer came."""
    try:
        descriptor = os.open(path, READ_FLAGS | _NOFOLLOW)
    except OSError as exc:
        raise _refuse("Cannot read package file", relative, exc.strerror or str(exc)) from exc
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise _refuse("Only regular files can be packed", relative, "not a regular file")
        return handle.read(MAX_FILE_BYTES + 1)


def _walk(directory: Path, prefix: str, out: PackageFiles) -> None:
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError as exc:
        raise _refuse("Cannot read package directory", prefix or ".", str(exc)) from exc
    for entry in entries:
        if entry.name.startswith(".") or entry.name == _SKIPPED_NAME:
            continue
        relative = prefix + entry.name
        try:
            relative.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _refuse("File names must be valid UTF-8", relative, "invalid UTF-8") from exc
        if entry.is_symlink():
            raise _refuse("Symbolic links are not allowed in packages", relative, "symbolic link")
        if entry.is_dir(follow_symlinks=False):
            if utf16_len(relative) + 2 > MAX_RELATIVE_PATH:  # "<dir>/x" would be too long
                raise _refuse(
                    f"Package paths are at most {MAX_RELATIVE_PATH} characters",
                    relative,
                    "a directory too deep for any file in it to be packed",
                )
            _walk(Path(entry.path), relative + "/", out)
        elif entry.is_file(follow_symlinks=False):
            content = _read_regular(Path(entry.path), relative)
            if is_packed_archive(content):
                raise SpecError(
                    ErrorCode.INVALID_PACKAGE,
                    "A package cannot contain a packed package archive",
                    details=[f"entry {quote_path(relative)}: an archive `splice pack` wrote"],
                    hint="Move it out of the package directory; `splice pack` now writes its "
                    "archive outside the package (docs/packages.md#the-artifact-a-deterministic-targz).",
                )
            out.add(relative, content)
        else:
            raise _refuse("Only regular files can be packed", relative, "not a regular file")


def collect_package_files(directory: Path) -> dict[str, bytes]:
    """The files ``directory`` would pack, sorted by path (UTF-16 code units).

    Raises SpecError(INVALID_PACKAGE) for a missing directory, a symbolic link, a special file,
    an unreadable entry, an unsafe or non-UTF-8 name, case-insensitive duplicates, more than
    500 files or a file over 2 MiB.
    """
    if not directory.is_dir():  # a mistyped path: the message alone said what, not which
        error = _refuse("Not a package directory", str(directory), "not a directory")
        error.hint = "Name the package's directory, the one holding manifest.json."
        raise error
    collected = PackageFiles(ErrorCode.INVALID_PACKAGE)
    _walk(directory, "", collected)
    return {path: collected.files[path] for path in sorted(collected.files, key=utf16_sort_key)}


def collect_package(directory: Path, *, command: str = "pack") -> dict[str, bytes]:
    """``collect_package_files`` of a directory that holds a ``manifest.json``, refused
    before anything in it is read when it does not: no package is there (most often the
    project, or the directory above the package where `splice pack ./my-skill` left its
    archive), so what the walk would find in it (that archive, a link, 500 files) is beside
    the point. ``command``: the ``splice`` command the hint shows naming the package."""
    from splice_build.spec.manifest import MANIFEST_FILE
    from splice_build.spec.package import no_manifest

    if directory.is_dir() and not os.path.lexists(directory / MANIFEST_FILE):
        raise no_manifest(str(directory), command)
    return collect_package_files(directory)


def pack_directory(directory: Path, *, command: str = "pack") -> PackResult:
    """Collect, validate (``validate_package_files``) and pack a package directory.

    Raises SpecError(INVALID_PACKAGE) for every problem: collecting, validating or packing;
    ``command`` as for ``collect_package``.
    """
    from splice_build.spec.package import validate_package_files

    files = collect_package(directory, command=command)
    manifest = validate_package_files(files, directory=str(directory), command=command)
    try:
        archive = pack_archive(files)
    except SpecError as exc:
        raise _as_package_error(exc) from exc
    return PackResult(
        manifest=manifest,
        files=files,
        archive=archive,
        integrity=integrity_of(archive),
        size=len(archive),
    )
