"""The no-op fast path: ``splice sync`` and ``splice install`` skip the graph when nothing can
have changed (issue #22).

docs/lifecycle.md#the-no-op-fast-path. A writing run of the graph that finds a project a
complete no-op (every package of ``splice.json`` locked, installed, verified and kept, nothing
else asked for) records a :class:`NoopState` with the project's stat cache
(:func:`save_stat_caches`). A later ``sync`` or ``sync --check`` first tries
:func:`unchanged_workspace`, and ``install`` :func:`unchanged_install`: holding each project's
lock as the graph would, they re-check for every member

- that no interrupted install waits for recovery (no ``.splice/tmp``),
- the ``splice.json`` and ``splice.lock`` bytes against the texts the state holds (compared,
  not hashed: a no-op loads no hashing library), the project's real path and the Splice
  version,
- every installed directory's and file's ``(device, inode, size, mtime_ns, ctime_ns, mode)``
  against the record taken after it was verified (an added, hidden, removed or renamed file
  changes its directory's ``ctime``: nothing is listed, install/statcache.py),
- ``.splice``, ``.splice/packages``, each scope's directory and each installed entry that is
  not this user's alone: none that a user beyond the project's may write, by the rule of
  the check before a run (whom a stat lets write depends on the project's directory too),
- every ``fs`` entry of the packages' grants and manifests, judged again against the project's
  state and this run's ``SPLICE_HOME`` as the graph's ``verify`` judges them (a granted
  directory that became a link to ``.splice``, or a home moved inside a granted one, changes
  no byte the state compares), and each of them leading out of the project (through a link)
  accepted by this machine's consent record leading where it leads now, for every package
  (install/consent.py asks for one that is not; a project whose packages do not all share
  the link runs the graph),
- every package's record, in this run's ``SPLICE_HOME`` (this user's alone, as the graph
  requires), of the files digest derived from its artifact (install/derived.py; the graph
  found it equal to the lock's),

and answer "unchanged" for every project only when all of that holds (``install`` then reports
each package as the graph reports a kept one, from the lock and the installed manifest); any
difference, in any member, runs the whole graph as before. Nothing here decides what to
install: the graph stays the one implementation, this only recognises its last answer.
``splice run``, ``splice verify`` and ``splice mcp`` never come here (they hash from bytes,
always).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.file_keys import FileIdentity, file_identity
from splice_build.install.statcache import NoopState, StatCache, only_mine
from splice_build.project.layout import ProjectLayout
from splice_build.project.locking import BlockedOn, blocked_on, lock
from splice_build.project.state_dir import state_lock
from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES
from splice_build.spec.project_state import ProjectState, RunMemo, Walks
from splice_build.spec.regular_file import read_regular_file_and_stat

if TYPE_CHECKING:
    from splice_build.install.cache import ArtifactCache
    from splice_build.install.install_report import InstallReport
    from splice_build.install.installed import InstalledPackage
    from splice_build.project.home import SpliceHome
    from splice_build.project.project_file import ProjectFile
    from splice_build.project.workspace import Workspace
    from splice_build.tasks.reporter import TaskRecord
    from splice_build.tasks.request import GraphRun, WorkspaceRun
    from splice_build.tasks.summary import SyncResult


def save_stat_caches(workspace: WorkspaceRun) -> None:
    """Write each project's stat cache, with its no-op state when the run changed nothing.

    Called after the graph ran, still under the project locks. Best effort: a cache that
    cannot be written costs the next run its hashing, nothing else."""
    for run in workspace.members:
        if run.stat_cache is None or run.stat_before is None:
            continue
        with contextlib.suppress(OSError):
            run.stat_cache.save(run.ids, before_ns=run.stat_before, state=_noop_state(run))


def _noop_state(run: GraphRun) -> NoopState | None:
    """The state to record when ``run`` found its project a complete no-op, else None."""
    from splice_build import __version__
    from splice_build.project.lockfile import NO_LOCK_FILE
    from splice_build.tasks.loader import is_kept

    project, lock_file, request = run.project, run.lock, run.request
    if run.error is not None or project is None or lock_file is None:
        return None
    if project.source is None or lock_file.source is None:
        return None  # read from the legacy lock file, or not from bytes
    if request.ids is not None or request.resolve or not request.stat_cache:
        return None
    if run.reports or run.changes or run.damaged or run.unresolved:
        return None
    ids = set(run.ids)
    if ids != set(project.packages) or ids != set(lock_file.packages):
        return None
    if not all(is_kept(run, package_id) for package_id in ids):
        return None
    if any(_signer_in_home(project, run.installed[package_id]) for package_id in ids):
        return None
    versions = {package_id: lock_file.packages[package_id].version for package_id in ids}
    fs = _fs_entries(run.installed[package_id] for package_id in ids)
    root = os.path.realpath(run.layout.root)
    project_read = _text_of(run.layout.project_file, project.source)
    if project_read is None:
        return None  # changed since the run parsed it: nothing to recognise next time
    lock_read: tuple[str, FileIdentity] | None = None
    if lock_file.source != NO_LOCK_FILE:
        lock_read = _text_of(run.layout.lock_file, lock_file.source)
        if lock_read is None:
            return None
    return NoopState(
        __version__,
        root,
        project_read[0],
        None if lock_read is None else lock_read[0],
        versions,
        project_file=project_read[1],
        lock_file=None if lock_read is None else lock_read[1],
        fs=fs,
        artifacts=tuple(
            sorted(
                run.installer.cache.files_digest_path_for(lock_file.packages[i].integrity).name
                for i in ids
            )
        ),
        warnings=tuple(project.unknown_keys()),  # answered again by each no-op (_result)
    )


def _fs_entries(packages: Iterable[InstalledPackage]) -> tuple[tuple[str, bool], ...]:
    """Every ``(entry, write)`` of the packages' manifests and lock grants, which
    ``refuse_project_state`` judged (install/installed.py)."""
    found: set[tuple[str, bool]] = set()
    for package in packages:
        grant = package.lock_entry.known(package.id).permissions
        for permissions in (package.manifest.permissions, grant):
            found.update((entry, False) for entry in permissions.fs_read)
            found.update((entry, True) for entry in permissions.fs_write)
    return tuple(sorted(found))


def _signer_in_home(project: ProjectFile, package: InstalledPackage) -> bool:
    """The graph checks the signer of this kept package against splice.json's policy from a
    file of SPLICE_HOME, which the state does not compare (another home, or the cached
    signatures removed: ``SIGNATURE_REQUIRED``), so only the graph may answer for it."""
    from splice_build.install.installer import signer_from_cache

    if not signer_from_cache(package.lock_entry):
        return False
    return project.requires_signature(package.id) or bool(project.trusted_for(package.id))


def _text_of(path: Path, source: str) -> tuple[str, FileIdentity] | None:
    """The text of ``path`` and the identity of the file it was read from, if its bytes
    are still those whose SHA-256 the run parsed."""
    from splice_build.spec.digests import sha256_hex

    try:
        data, info = read_regular_file_and_stat(path, MAX_PROJECT_STATE_BYTES)
        if sha256_hex(data) != source:
            return None
        return data.decode("utf-8"), file_identity(info)
    except (OSError, UnicodeDecodeError):
        return None


def unchanged_workspace(
    workspace: Workspace,
    *,
    home: Path,
    check: bool,
    on_blocked: BlockedOn | None = None,
) -> SyncResult | None:
    """The result of a no-op ``sync`` when every member is as its recorded state, else None;
    ``home``: this run's SPLICE_HOME, which no grant may reach."""
    layouts = {directory: ProjectLayout(directory) for directory in workspace.members}
    if not all(os.path.isfile(layout.stat_cache) for layout in layouts.values()):
        return None  # never synced, or the cache was deleted: no state to compare
    states: dict[Path, NoopState] = {}
    digests = _digests_dir(home)  # the same for every member: named once
    if digests is None:
        return None
    derived: set[str] = set()  # records found there, each looked at once for all members
    from splice_build.project.walk_record import recorded_walks

    # The real paths of the members and of everything their grants are judged against (the
    # members' shared parents resolved once), and the walks below those grants the last
    # no-op kept (project/walk_record.py), read only for a member with a grant.
    memo = RunMemo(recorded_walks(workspace.root))
    with contextlib.ExitStack() as stack:
        for directory in sorted(workspace.members, key=str):  # run_workspace's lock order
            layout = layouts[directory]
            waiting = blocked_on(on_blocked, directory)
            if not check:
                stack.enter_context(state_lock(layout, waiting))
            elif layout.state_lock.exists():
                stack.enter_context(lock(layout.state_lock, waiting))
            real = memo.real_text(os.fspath(directory))
            cache = _unchanged(layout, home, real, digests, derived, memo)
            if cache is None or cache.state is None:
                return None
            states[directory] = cache.state
    if not check:
        _keep_walks(workspace.root, memo.walks)
    return _result(workspace, check, states)


def _keep_walks(root: Path, walks: Walks) -> None:
    """Keep the walks and index reads this no-op trusted for the next (project/walk_record.py)."""
    if walks.trusted or walks.indexes:
        from splice_build.project.walk_record import write_walks

        write_walks(root, walks.trusted, walks.recorded, walks.indexes, walks.recorded_indexes)


def unchanged_install(
    layout: ProjectLayout, home: SpliceHome, *, on_blocked: Callable[[], None] | None = None
) -> tuple[list[InstallReport], TaskRecord] | None:
    """The reports of a no-op ``splice install`` when the project is as its recorded state
    (every package kept, in the order the graph reports them), else None: run the graph."""
    if not os.path.isfile(layout.stat_cache):
        return None
    digests = _digests_dir(home.path)
    if digests is None:
        return None
    with state_lock(layout, on_blocked):
        from splice_build.project.walk_record import recorded_walks

        memo = RunMemo(recorded_walks(layout.root))
        cache = _unchanged(layout, home.path, os.path.realpath(layout.root), digests, set(), memo)
        if cache is None or cache.state is None:
            return None
        reports = _kept_reports(layout, home, cache)
        if reports is not None:
            _keep_walks(layout.root, memo.walks)
    if reports is None:
        return None
    return reports, _up_to_date([("", cache.state.packages)])


def _kept_reports(
    layout: ProjectLayout, home: SpliceHome, stat_cache: StatCache
) -> list[InstallReport] | None:
    """What the graph reports for each package it keeps, read from the lock and the installed
    manifests the recorded state covers; None when anything reads differently from what the
    graph saw (it then runs and says why). A manifest is parsed only from bytes whose hash
    is the one recorded for it."""
    from splice_build.errors import SpliceError
    from splice_build.install.install_report import kept_report
    from splice_build.install.installed import verified_manifest
    from splice_build.project.lockfile import lock_entries
    from splice_build.spec.manifest import MANIFEST_FILE
    from splice_build.spec.paths import utf16_sort_key

    @functools.cache
    def cache() -> ArtifactCache:  # opened only for a package whose lock entry pins no signer
        from splice_build.install.cache import ArtifactCache

        return ArtifactCache(home.check().artifacts_dir)

    state = stat_cache.state
    if state is None or state.lock is None:
        return None
    root = Path(os.path.realpath(layout.root))
    reports = []
    try:
        entries = lock_entries(state.lock.encode("utf-8"))  # the bytes just compared
        for package_id in sorted(state.packages, key=utf16_sort_key):
            entry = entries.get(package_id)
            recorded = stat_cache.records.get(package_id, {}).get(MANIFEST_FILE)
            if entry is None or recorded is None:
                return None
            directory = layout.package_dir(package_id)
            manifest = verified_manifest(package_id, directory, recorded[1])
            if (manifest.id, manifest.version) != (package_id, entry.version):
                return None
            reports.append(kept_report(cache, root, package_id, manifest, entry))
    except SpliceError:
        return None
    return reports


def _unchanged(
    layout: ProjectLayout,
    home: Path,
    real_root: str,
    digests: str,
    derived: set[str],
    memo: RunMemo,
) -> StatCache | None:
    """The project's stat cache if everything its recorded state covers is as recorded
    and no recorded ``fs`` entry reaches the project's state or ``home``, else None;
    ``real_root``: the real path of the project's directory (``os.path.realpath``);
    ``digests``: ``home``'s files digest records (:func:`_digests_dir`); ``derived``: the
    records this run found there already (:func:`_still_derived`); ``memo``: the real paths
    and projects this run found (spec/project_state.py)."""
    from splice_build import __version__

    if os.path.lexists(layout.tmp_dir):
        return None  # a staging copy or journal: the graph's lock recovers it first
    cache = StatCache.load(layout.stat_cache)
    state = cache.state
    if state is None or state.splice != __version__:
        return None
    if state.root != real_root:
        return None
    if not _holds(layout.project_file, state.project, state.project_file):
        return None
    if not _lock_holds(layout, state.lock, state.lock_file):
        return None
    # Each id is valid (``@ns/name``, checked as the state was parsed), so it names its
    # directory below ``packages_dir`` as ``layout.package_dir`` does, without parsing it
    # again into a PackageId and a Path for every package of every member.
    packages = os.fspath(layout.packages_dir)
    shared: list[tuple[str, os.stat_result]] = []
    for package_id in state.packages:
        if not cache.unchanged(package_id, os.path.join(packages, package_id), shared=shared):
            return None
    if _open_to_others(layout.root, packages, state.packages, shared):
        return None
    if not _still_derived(digests, state.artifacts, derived):
        return None
    if state.fs and (
        _reaches_state(state.root, home, state.fs, memo)
        or not _links_accepted(state.root, home, state.packages, state.fs, memo)
    ):
        return None
    return cache


def _digests_dir(home: Path) -> str | None:
    """The directory of ``home``'s files digest records (``SpliceHome.files_digest_dir``),
    or None when the home is not this user's alone (``SpliceHome.check``): another user may
    have put any record there, and the graph then says so (``INVALID_CONFIG``, as ``splice
    run`` does). Trusting its records, a no-op ``sync`` answered exit 0 from a home made
    ``chmod 777``."""
    from splice_build.errors import SpliceError
    from splice_build.project.home import SpliceHome

    try:
        return os.fspath(SpliceHome(home).check().files_digest_dir)
    except SpliceError:
        return None


def _still_derived(digests: str, artifacts: Iterable[str], found: set[str]) -> bool:
    """Each artifact's files digest record (install/cache.py) is still in ``digests``: the
    run that wrote the state found it equal to the lock's, and only a verification of those
    very bytes writes it. One ``stat`` per record and run, not per member naming it
    (``found``: the records this run found there, which this adds to; a workspace's
    members share their packages: 30 × 3 named 20); a removed cache sends the project
    through the graph, which derives the digest again, so ``splice run`` is never refused
    for good."""
    for name in artifacts:
        if name not in found:
            if not os.path.isfile(os.path.join(digests, name)):
                return False
            found.add(name)
    return True


def _open_to_others(
    root: Path, packages: str, ids: Iterable[str], shared: list[tuple[str, os.stat_result]]
) -> bool:
    """Whether a user beyond the project's may write ``.splice``, ``.splice/packages``, a
    scope's directory there (or one cannot be examined) or one of ``shared``, the installed
    entries not only this user's (``StatCache.unchanged``), as the check before a run judges
    each (project/state_owner.py ``added_writer``): the graph then runs, takes that write
    where this user owns the directory and installs an open tree again (install/modes.py).

    Their stats are as recorded, but whom they let write counts by the project's directory
    and groups, which no record holds: with others' write alone looked at, a scope
    directory a POSIX ACL or a group let another user write, or a team's checkout made
    ``chmod g-w``, had a no-op ``install`` report every package kept while ``splice run``
    refused them, its hint ``splice install`` changing nothing.

    A directory that does not exist is no one's to write into; the one above it is looked
    at here too (``.splice``, which holds the stat cache, always exists). A project without
    packages has no ``.splice/packages``: counted as one that could not be examined, such a
    member sent every sync of its workspace through the graph."""
    directories = {os.path.dirname(packages), packages}
    directories.update(f"{packages}/{package_id.partition('/')[0]}" for package_id in ids)
    entries = list(shared)
    for directory in directories:
        try:
            info = os.stat(directory)
        except FileNotFoundError:
            continue
        except OSError:
            return True
        if info.st_mode & stat.S_IWOTH:
            return True
        if not only_mine(info):
            entries.append((directory, info))
    if not entries:
        return False
    from splice_build.project.state_owner import added_writer, project_team

    try:
        project = os.stat(root)
        team = project_team(project, root)
        return any(
            added_writer(info, Path(path), project, root, team=team) is not None
            for path, info in entries
        )
    except OSError:
        return True


def _reaches_state(
    root: str, home: Path, entries: Iterable[tuple[str, bool]], memo: RunMemo
) -> bool:
    """Some entry reaches the project's state or ``home``, by the rule (and the real paths)
    the graph's ``verify`` applies (``refuse_project_state``); ``memo``: the run's."""
    try:
        checked = ProjectState(Path(root), home, memo=memo)
        # write grants first, as project_state_problems: a directory granted both ways is
        # walked once (spec/project_below.py)
        ordered = sorted(entries, key=lambda each: not each[1])
        return any(checked.fs_problem(entry, write=write) is not None for entry, write in ordered)
    except (OSError, ValueError):  # a name no path can have: the graph says what it is
        return True


def _links_accepted(
    root: str,
    home: Path,
    packages: Iterable[str],
    entries: Iterable[tuple[str, bool]],
    memo: RunMemo,
) -> bool:
    """No entry's real path leaves the project at ``root``, or this machine's consent record
    (in ``home``) accepted each that does leading where it leads now, for every package of
    the state (spec/outside_grants.py). The state keeps the entries of all its packages
    together, so this asks of each package what the graph asks only of those granted the
    entry: it may run the graph where nothing would be asked, never skip it where
    something would (a project whose packages do not all share the link runs it); ``memo``:
    the real paths :func:`_reaches_state` took."""
    from splice_build.errors import SpliceError
    from splice_build.install.consent_record import read_record
    from splice_build.spec.outside_grants import outside_links, unaccepted_links
    from splice_build.spec.permissions import Permissions

    granted = Permissions(fs_read=tuple(e for e, _ in entries))
    try:
        found = outside_links(Path(root), granted, memo)
        if not (outside := unaccepted_links(Path(root), granted, {}, found)):
            return True
        record = read_record(home, Path(root))
    except (ValueError, SpliceError):  # a name no path can have, a home not the user's alone
        return False  # the graph says what it is
    return record is not None and not any(
        unaccepted_links(Path(root), granted, record.links_for(package), outside)
        for package in packages
    )


def _lock_holds(layout: ProjectLayout, text: str | None, identity: FileIdentity | None) -> bool:
    """``splice.lock`` holds ``text`` (None: neither lock file exists, as the run saw)."""
    if os.path.lexists(layout.lock_file):
        return (
            text is not None and identity is not None and _holds(layout.lock_file, text, identity)
        )
    return text is None and not os.path.lexists(layout.legacy_lock_file)


def _holds(path: Path, text: str, identity: FileIdentity) -> bool:
    """The bytes of ``path`` are exactly ``text`` in UTF-8, read from the very file the
    state was recorded from (``NoopState``: a state shipped in a checkout never is)."""
    try:
        data, info = read_regular_file_and_stat(path, MAX_PROJECT_STATE_BYTES)
        return file_identity(info) == identity and data == text.encode("utf-8")
    except (OSError, UnicodeEncodeError):
        return False


def _result(workspace: Workspace, check: bool, states: dict[Path, NoopState]) -> SyncResult:
    """What the graph answered last time: every package unchanged, every task up to date."""
    from splice_build.spec.paths import utf16_sort_key
    from splice_build.tasks.summary import Pinned, ProjectOutcome, SyncResult

    projects = [(workspace.label(d), states[d].packages) for d in workspace.members]
    outcomes = tuple(
        ProjectOutcome(
            label,
            unchanged=tuple(
                Pinned(package_id, versions[package_id])
                for package_id in sorted(versions, key=utf16_sort_key)
            ),
            warnings=states[directory].warnings,  # the graph's run gave them (_noop_state)
        )
        for directory, (label, versions) in zip(workspace.members, projects, strict=True)
    )
    return SyncResult(str(workspace.root), check, outcomes, _up_to_date(projects))


def _up_to_date(projects: list[tuple[str, Mapping[str, str]]]) -> TaskRecord:
    """The task record of a graph run that found every ``(label, packages)`` project a no-op."""
    from splice_build.spec.paths import utf16_sort_key
    from splice_build.tasks.reporter import TaskRecord, task_name

    record = TaskRecord()
    ids: set[str] = set()
    for label, versions in projects:
        record.up_to_date += [task_name(step, label) for step in ("lock", "verify", "install")]
        ids.update(versions)
    record.up_to_date += [f"fetch:{package_id}" for package_id in sorted(ids, key=utf16_sort_key)]
    return record
