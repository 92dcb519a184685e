"""Loading a package directory for execution (docs/compatibility.md#runtime).

The directory is canonicalised, manifest.json parsed by ``spec.manifest``, SKILL.md checked
by ``spec.package``, and every tool entry must resolve (after realpath) to a regular file
strictly inside the package; nothing here starts a process.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.errors import ErrorCode, SandboxError, SpliceError
from splice_build.records import dataclass
from splice_build.spec.limits import MAX_FILES

if TYPE_CHECKING:
    from splice_build.spec.manifest import Manifest


@dataclass(frozen=True)
class LoadedPackage:
    """A validated package directory; ``dir`` is canonical (realpath)."""

    id: str
    version: str
    dir: Path
    manifest: Manifest


def _invalid(message: str, details: list[str] | tuple[str, ...] = ()) -> SandboxError:
    return SandboxError(ErrorCode.INVALID_PACKAGE, message, details=details)


def _entry_inside(package_dir: Path, entry: str) -> str | None:
    """None when ``entry`` is a regular file inside the package, else the problem."""
    candidate = package_dir / entry
    try:
        real = Path(os.path.realpath(candidate, strict=True))
    except OSError:
        return f'entry "{entry}" does not exist'
    if package_dir not in real.parents:
        return f'entry "{entry}" resolves outside the package'
    if not stat.S_ISREG(real.stat().st_mode):
        return f'entry "{entry}" is not a regular file'
    return None


def _check_tree(package_dir: Path) -> None:
    """INVALID_PACKAGE unless the tree holds only directories and regular files, at most
    ``MAX_FILES`` of them: what a packed package can hold (spec/entry_rules.py).

    A package directory run in place (``splice run --dir``, ``SpliceRuntime.load``) is often
    someone else's checkout, and a link in it to a file outside would otherwise be read by
    the tool wherever no file view hides it (docs/security.md#the-os-layer)."""
    from splice_build.spec.tree_digest import NotAPackageTree, package_files

    try:
        for _ in package_files(os.fspath(package_dir)):
            pass
    except NotAPackageTree as exc:
        where = Path(str(exc)).relative_to(package_dir).as_posix()
        raise _invalid(
            "Invalid package",
            [
                f"{where}: a package holds only directories and regular files (at most "
                f"{MAX_FILES}), no symbolic link or special file"
            ],
        ) from None
    except OSError as exc:
        raise _invalid(f"The package directory cannot be read ({exc.strerror})") from None


def load_package(
    path: str | os.PathLike[str], *, manifest_sha256: str | None = None
) -> LoadedPackage:
    """Validate and describe the package at ``path``; raises SandboxError(INVALID_PACKAGE).

    ``manifest_sha256``: the hash ``manifest.json`` had when the caller hashed the tree; bytes
    that hash otherwise (the file changed since) are ``INSTALLED_PACKAGE_MODIFIED``, so the
    description is always of the bytes the caller's digest covers."""
    from splice_build.spec.manifest import MANIFEST_FILE, Manifest
    from splice_build.spec.regular_file import read_regular_file

    try:
        package_dir = Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        raise _invalid("Package directory not found") from exc
    if not package_dir.is_dir():
        raise _invalid("Package directory not found")
    _check_tree(package_dir)
    try:
        manifest_bytes = read_regular_file(package_dir / MANIFEST_FILE)
    except OSError as exc:
        raise _invalid("manifest.json is missing") from exc
    if manifest_sha256 is not None:
        from splice_build.spec.digests import sha256_hex

        if sha256_hex(manifest_bytes) != manifest_sha256:
            raise SandboxError(
                ErrorCode.INSTALLED_PACKAGE_MODIFIED,
                "manifest.json changed while the package was being hashed",
                hint="load the package again",
            )
    try:
        manifest = Manifest.from_json(manifest_bytes)
    except SpliceError as exc:
        raise _invalid(f"Invalid manifest: {exc.message}", exc.details) from exc
    return describe_package(package_dir, manifest)


def describe_package(package_dir: Path, manifest: Manifest) -> LoadedPackage:
    """The package in ``package_dir`` (a real path) as ``manifest`` describes it, a manifest
    the caller parsed from bytes it verified; SKILL.md and the tool entries are checked as
    ``load_package`` checks them. Raises SandboxError(INVALID_PACKAGE)."""
    from splice_build.spec.package import validate_skill_md
    from splice_build.spec.regular_file import read_regular_file

    try:
        skill_md = read_regular_file(package_dir / "SKILL.md")
    except OSError as exc:  # missing, or no regular file (a FIFO is refused, never waited on)
        raise _invalid("SKILL.md is missing") from exc
    problems = list(validate_skill_md(skill_md))
    problems += [p for tool in manifest.tools if (p := _entry_inside(package_dir, tool.entry))]
    if problems:
        raise _invalid("Invalid package", problems)
    return LoadedPackage(
        id=manifest.id, version=str(manifest.version), dir=package_dir, manifest=manifest
    )
