"""Is an installed package still the verified copy the lock describes? (invariants 3 and 4)

:func:`check_installed` recomputes the files digest **from bytes** (``tree_hashes``; only the
graph's ``verify`` task of install/sync passes the stat cache's hashes instead,
docs/lifecycle.md#the-stat-cache), compares it with the lock's ``files``, reads the manifest
it just verified, and checks that the manifest asks for nothing beyond the lock's grant. It
raises instead of returning a flag:
``NOT_INSTALLED``, ``INSTALLED_PACKAGE_MODIFIED`` (hint: ``splice install`` restores it) or
``PERMISSIONS_NOT_GRANTED`` (also when the lock's grant or the manifest reaches the project's
own state: :func:`refuse_project_state`). An entry that does not record ``files``, ``size`` or
``permissions`` is ``LOCK_INCOMPLETE`` before anything is read: no check is ever skipped for a
field the lock lacks (docs/security.md#incomplete-lock-entries). Checked from bytes, a tree
that a user beyond the project's may write (a file, a directory of it, or one from the
project down to it; or a directory above the project, in which they may rename it away:
:func:`refuse_other_writers`) is ``INSTALLED_PACKAGE_MODIFIED`` too: that
user could change the code between the check and Node reading it
(docs/security.md#who-may-write-the-code).

The manifest it describes the package with is bound to the verified bytes: the check hashes
every file (``tree_hashes``), builds the digest from those hashes, and then parses only a
``manifest.json`` whose bytes hash to the one the digest was built from. A manifest changed
while the package was being hashed, even if changed back before the hash ended, is refused
(``INSTALLED_PACKAGE_MODIFIED``), never described. Parses are remembered by that hash
(issue #7): equal bytes always parse to the same manifest, so the reuse trusts nothing the
check did not prove just now. A sync over many projects sharing a package parses it once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.errors import ErrorCode, InstallError, SpliceError
from splice_build.project.layout import ProjectLayout
from splice_build.records import dataclass
from splice_build.spec.digests import files_digest_from_hashes, sha256_hex
from splice_build.spec.limits import MAX_FILE_BYTES
from splice_build.spec.tree_digest import tree_hashes

if TYPE_CHECKING:
    from splice_build.project.lockfile import LockEntry
    from splice_build.spec.manifest import Manifest
    from splice_build.spec.permissions import Permissions
    from splice_build.spec.project_state import RunMemo

RESTORE_HINT = "Run `splice install` to restore the verified copy."
# A locked package with no directory (a fresh clone, .splice/ ignored by git) had no copy
# here to restore.
MISSING_HINT = "Run `splice install` to install what splice.lock pins."
_MANIFESTS_MAX = 1024  # distinct manifests one process remembers, by the SHA-256 of their bytes
_manifests: dict[str, Manifest] = {}


@dataclass(frozen=True)
class InstalledPackage:
    """A package whose files and grant were checked just now."""

    id: str
    version: str
    directory: Path
    manifest: Manifest
    lock_entry: LockEntry
    # SHA-256 of SKILL.md in the tree just verified: what `splice mcp` serves as the package's
    # resource must be these bytes, read afterwards (mcp/backend.py).
    skill_sha: str | None = None
    # The file grants leading out of the project (through a link) that this machine's consent
    # record accepted, each with the real path it led to (spec/outside_grants.py): set by the
    # SDK's grant check (sdk.py ``_require_listed``), which refuses any other; the runtime
    # checks them again at each call (``SpliceRuntime.load_verified``).
    accepted_links: tuple[tuple[str, str], ...] = ()


def _modified(package_id: str, reason: str) -> InstallError:
    return InstallError(
        ErrorCode.INSTALLED_PACKAGE_MODIFIED,
        f"Installed package {package_id} was modified",
        details=[reason],
        hint=RESTORE_HINT,
    )


def read_installed_manifest(directory: Path) -> Manifest:
    """Parse ``manifest.json`` of an installed package; raises ``SpliceError``.

    The project-state rule is left to :func:`refuse_project_state`, so that a package
    installed before the rule is refused as not granted, not as modified."""
    from splice_build.spec.manifest import MANIFEST_FILE, Manifest
    from splice_build.spec.regular_file import read_regular_file

    try:
        data = read_regular_file(directory / MANIFEST_FILE, MAX_FILE_BYTES)
    except OSError as exc:
        raise InstallError(
            ErrorCode.INVALID_PACKAGE, f"manifest.json cannot be read: {exc.strerror}"
        ) from exc
    return Manifest.from_json(data, check_project_state=False)


def verified_manifest(package_id: str, directory: Path, verified_sha: str | None) -> Manifest:
    """The manifest parsed from bytes whose SHA-256 is ``verified_sha``: the hash the files
    digest was just built from, or the one the stat cache recorded for it (tasks/noop.py).
    ``INSTALLED_PACKAGE_MODIFIED`` for any other bytes (the file changed after it was hashed,
    or changed and changed back while the tree was hashed)."""
    from splice_build.spec.manifest import MANIFEST_FILE, Manifest
    from splice_build.spec.regular_file import read_regular_file

    try:
        data = read_regular_file(directory / MANIFEST_FILE, MAX_FILE_BYTES)
    except OSError as exc:
        raise _modified(package_id, f"manifest.json cannot be read: {exc.strerror}") from exc
    if verified_sha is None or sha256_hex(data) != verified_sha:
        raise _modified(package_id, "manifest.json changed while the package was being verified")
    manifest = _manifests.get(verified_sha)
    if manifest is None:
        try:
            manifest = Manifest.from_json(data, check_project_state=False)
        except SpliceError as exc:
            raise _modified(package_id, f"manifest.json: {exc.message}") from exc
        if len(_manifests) >= _MANIFESTS_MAX:
            _manifests.clear()
        _manifests[verified_sha] = manifest
    return manifest


ENCLOSING_HINT = "Narrow that grant so that it holds no project, or move this project out of it."


def enclosing_grant(root: Path, home: Path | None) -> str | None:
    """Why no tool of the project at ``root`` runs, when it lies in a write grant of a project
    above it (docs/security.md#grants-and-project-state), else None."""
    from splice_build.project.home import SpliceHome
    from splice_build.project.tool_written import enclosing_write_grant

    known_home = home if home is not None else SpliceHome.from_env(os.environ).path
    holder = enclosing_write_grant(root, known_home)
    if holder is None:
        return None
    above, write = holder
    return (
        f"this project lies in the write grant {write!r} of the project {above}, whose tools "
        "may have rewritten its splice.lock and installed files"
    )


def refuse_project_state(
    layout: ProjectLayout,
    package_id: str,
    version: str,
    manifest: Manifest,
    grant: Permissions,
    home: Path | None,
    *,
    enclosing: bool = True,
    memo: RunMemo | None = None,
) -> None:
    """``PERMISSIONS_NOT_GRANTED`` when the lock's grant or the manifest reaches the project's
    state or ``home`` (SPLICE_HOME), e.g. a lock written before the rule or by hand, or
    (``enclosing``) when the project lies in a write grant of a project above it. ``memo``:
    what the caller's other checks of the copy look up (``grant_memo``)."""
    from splice_build.spec.project_state import grant_unresolved, project_state_problems

    root = Path(os.path.realpath(layout.root))
    memo = grant_memo(layout) if memo is None else memo  # the same paths resolved for both
    try:
        problems = project_state_problems(
            manifest.permissions, "manifest.json", root=root, home=home, memo=memo
        )
        problems += project_state_problems(
            grant, "splice.lock grant", root=root, home=home, memo=memo
        )
    except OSError as exc:  # a link renamed as it was read, or unreadable
        raise grant_unresolved(
            InstallError,
            ErrorCode.PERMISSIONS_NOT_GRANTED,
            f"{package_id}@{version}",
            exc,
            "nothing was run",
        ) from exc
    held = enclosing_grant(layout.root, home) if enclosing else None
    if held is not None:
        raise InstallError(
            ErrorCode.PERMISSIONS_NOT_GRANTED,
            f"{package_id}@{version} will not run: {held}",
            hint=ENCLOSING_HINT,
        )
    if problems:
        raise InstallError(
            ErrorCode.PERMISSIONS_NOT_GRANTED,
            f"{package_id}@{version} is granted access to a project's state; it will not run",
            details=problems,
            hint=f"Install a version that does not ask for it (`splice add {package_id}@<version>`) "
            f"or remove it (`splice remove {package_id}`), or move out of the grant what a line "
            "says it holds.",
        )


def chain_to(layout: ProjectLayout, package_id: str) -> list[Path]:
    """The directories from the project down to the one holding the package's directory:
    a user who may write one of them may rename what it holds away and put theirs there."""
    packages = layout.package_dir(package_id).parent
    return [layout.root, layout.state_dir, layout.packages_dir, packages]


def other_writers(
    layout: ProjectLayout, package_id: str, stats: list[tuple[str, os.stat_result]]
) -> list[tuple[str, str]]:
    """``(path, why)`` of each directory on the package's way (:func:`chain_to`), of the lock
    (its grants decide what the verified code may reach) and of each of the package's files
    and directories (``stats``: as ``tree_hashes`` read them) that a user beyond those who
    may write the project may write (project/state_owner.py ``added_writer``)."""
    from splice_build.project.state_owner import added_writer, project_team

    try:
        project = os.stat(layout.root)
    except OSError as exc:
        return [(str(layout.root), f"it cannot be examined: {exc.strerror or exc}")]
    found = _renamers_above(layout.root, project)
    team = project_team(project, layout.root)
    locks = (layout.lock_file, layout.legacy_lock_file)
    for path in (*chain_to(layout, package_id), *locks):
        try:
            info = os.stat(path)
        except OSError as exc:
            if path in locks and isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                continue  # no such lock (one stat where exists() and stat() took two)
            found.append((str(path), f"it cannot be examined: {exc.strerror or exc}"))
            continue
        why = added_writer(info, path, project, layout.root, team=team)
        if why is not None:
            found.append((str(path), why))
    mine = (os.geteuid(), 0) if hasattr(os, "geteuid") else ()
    for name, info in stats:
        if info.st_uid in mine and not info.st_mode & 0o022:
            continue  # only its owner may write it: added_writer's answer, without the call
        why = added_writer(info, Path(name), project, layout.root, team=team)
        if why is not None:
            found.append((name, why))
    return found


def _renamers_above(root: Path, project: os.stat_result) -> list[tuple[str, str]]:
    """``(path, why)`` of each directory above the project, by the path given and by its real
    path, in which a user beyond the project's may rename the entry on the way away
    (project/state_owner.py ``renamer_above``): with another tree put in its place
    between the check and the process's start, theirs is what runs (a team's
    group-writable ``/srv/shared`` holding your project writable by you alone)."""
    from splice_build.project.paths_above import entries_above
    from splice_build.project.state_owner import renamer_above

    found: list[tuple[str, str]] = []
    if not hasattr(os, "geteuid"):
        return found  # a platform without uids, as added_writer
    mine = (os.geteuid(), 0)
    for directory, path in entries_above(root):
        try:
            info = os.stat(directory)
            if info.st_uid in mine and not info.st_mode & 0o022:
                continue  # only its owner may rename what it holds
            entry = os.lstat(path)
        except OSError as exc:
            found.append((directory, f"it cannot be examined: {exc.strerror or exc}"))
        else:
            why = renamer_above(info, Path(directory), entry, project, root)
            if why is not None:
                found.append((directory, why))
    return found


def refuse_other_writers(
    layout: ProjectLayout, package_id: str, stats: list[tuple[str, os.stat_result]]
) -> None:
    """``INSTALLED_PACKAGE_MODIFIED`` when another user could change the code just verified
    before Node reads it (:func:`other_writers`): the bytes are right now, but are not
    the verified copy's for longer than that user lets them be, so the copy is treated as
    the one ``splice install`` restores (install/modes.py: it closes ``.splice`` down to the
    scope, and installs an open package again). The project's directory is the user's to
    mend."""
    found = other_writers(layout, package_id, stats)
    if not found:
        return
    root, package = str(layout.root), layout.package_dir(package_id)
    locks = {str(layout.lock_file), str(layout.legacy_lock_file)}
    if any(path == root for path, _ in found):
        hint = f"Take write access from other users: `chmod o-w {root}`."
    elif lock := next((path for path, _ in found if path in locks), None):
        # Its grants are what the verified code may reach: theirs to set while they may.
        hint = (
            f"{lock} grants the package what it may reach: review it, then make it writable "
            f"by you alone (`chmod go-w {lock}`, or for another user's file "
            f"`cp {lock} {lock}.mine && mv {lock}.mine {lock}`)."
        )
    elif any(Path(root).is_relative_to(path) for path, _ in found):
        hint = (
            f"Another user may move the project away: make {found[0][0]} writable by you "
            f"alone, sticky (`chmod +t {found[0][0]}`), or move the project out of it."
        )
    elif (theirs := _theirs_on_the_way(layout, package_id, found)) is not None:
        hint = (
            f"{theirs} belongs to another user, who alone may change its mode: move it away "
            f"(`mv {theirs} {theirs}.old`) and run `splice sync`, which makes it again."
        )
    elif any(Path(path).is_relative_to(package) for path, _ in found):
        # Not chmod: it leaves a descriptor they opened for writing while they could.
        hint = "Run `splice install`: it installs the package again, writable by you alone."
    else:
        hint = f"Run `splice install` or `chmod o-w,g-w {found[0][0]}`."
    raise InstallError(
        ErrorCode.INSTALLED_PACKAGE_MODIFIED,
        f"Installed package {package_id} may be changed by another user before it runs",
        details=[f"{path}: {why}" for path, why in found[:8]],
        hint=hint,
    )


def _theirs_on_the_way(
    layout: ProjectLayout, package_id: str, found: list[tuple[str, str]]
) -> str | None:
    """The first directory from ``.splice`` down to the package's scope that is refused and
    owned by another user (a teammate who has left the team's group): neither ``chmod``
    nor ``splice install`` can close it for this user."""
    refused = {path for path, _ in found}
    for directory in chain_to(layout, package_id)[1:]:
        if str(directory) not in refused:
            continue
        try:
            if os.lstat(directory).st_uid != os.geteuid():
                return str(directory)
        except OSError:
            continue
    return None


def grant_memo(layout: ProjectLayout) -> RunMemo:
    """What the grant checks of one copy, at one moment, share (spec/project_state.py): the
    real paths they take, and the walks the project's record holds."""
    from splice_build.project.walk_record import recorded_walks
    from splice_build.spec.project_state import RunMemo

    return RunMemo(recorded_walks(layout.root))


def check_installed(
    layout: ProjectLayout,
    package_id: str,
    entry: LockEntry | None,
    *,
    home: Path | None = None,
    hashes_of: Callable[[Path], Mapping[str, str] | None] | None = None,
    enclosing: bool = True,
    memo: RunMemo | None = None,
) -> InstalledPackage:
    """Verify the installed copy of ``package_id`` against ``entry`` (see the module docstring);
    ``home``: SPLICE_HOME, which no grant may reach. ``hashes_of`` hashes every file the
    files digest is built from: from bytes (None: ``tree_hashes``, and every file and
    directory read, and those from the project down to the package, is checked to be
    writable by no user beyond the project's: :func:`refuse_other_writers`), except in the
    graph's ``verify`` task of install/sync, which passes the stat cache's
    (install/statcache.py) and makes the modes right itself; ``splice run``/``verify``/
    ``mcp`` never do. ``enclosing=False`` (that ``verify`` task): a project in a
    write grant of a project above it is not refused here; its files are intact, and
    reinstalling them on every install changed nothing about why its tools do not run.
    ``memo``: as for ``refuse_project_state``."""
    directory = layout.package_dir(package_id)
    if entry is None or not directory.is_dir():
        raise InstallError(
            ErrorCode.NOT_INSTALLED,
            f"{package_id} is not installed",
            hint=f"Run `splice add {package_id}`." if entry is None else MISSING_HINT,
        )
    known = entry.known(package_id)  # LOCK_INCOMPLETE: no check runs on a field it lacks
    stats: list[tuple[str, os.stat_result]] | None = [] if hashes_of is None else None
    try:
        hashes = tree_hashes(directory, stats) if hashes_of is None else hashes_of(directory)
    except OSError as exc:  # a path nested past the system's limit, an unreadable directory
        raise _modified(package_id, f"its files cannot be read: {exc.strerror or exc}") from exc
    actual = None if hashes is None else files_digest_from_hashes(hashes)
    if hashes is None or actual != known.files:
        reason = (
            "it contains a link, a special file, a file too large or too many files"
            if actual is None
            else f"files digest {actual} differs from splice.lock ({known.files})"
        )
        raise _modified(package_id, reason)
    if stats is not None:
        refuse_other_writers(layout, package_id, stats)
    from splice_build.spec.manifest import MANIFEST_FILE

    manifest = verified_manifest(package_id, directory, hashes.get(MANIFEST_FILE))
    if manifest.id != package_id or manifest.version != entry.version:
        raise _modified(
            package_id,
            f"manifest says {manifest.id}@{manifest.version}, splice.lock {entry.version}",
        )
    refuse_project_state(
        layout,
        package_id,
        entry.version,
        manifest,
        known.permissions,
        home,
        enclosing=enclosing,
        memo=memo,
    )
    from splice_build.install.consent import ungranted_lines

    lines = ungranted_lines(manifest.permissions, known.permissions)
    if lines:
        raise InstallError(
            ErrorCode.PERMISSIONS_NOT_GRANTED,
            f"{package_id}@{entry.version} requests permissions this project has not granted",
            details=lines,
            hint=f"Run `splice add {package_id} --accept-permissions` to review and grant them.",
        )
    from splice_build.spec.package import SKILL_FILE

    return InstalledPackage(
        package_id, entry.version, directory, manifest, entry, hashes.get(SKILL_FILE)
    )
