"""Whose write grant it is: a grant another user recorded holds only what that user can write.

Workspace discovery and ``enclosing_write_grant`` (project/tool_written.py) read the locks
and grant records of every directory above the root, ``/tmp`` included, and SPLICE_HOME's.
On a shared machine any local user may create ``/tmp/splice.lock`` or
``/tmp/.splice/write-grants.json`` (``/tmp`` is world-writable) naming a write grant over
another user's project below: that project then ran nothing (``PERMISSIONS_NOT_GRANTED``)
and synced nothing (``NOT_A_PROJECT``), and sibling projects could be hidden.

Ignoring such files outright would forget real grants: a project of another user whose tool
wrote into a directory this user later syncs. But a tool runs as the user who ran it, so
everything it wrote there is owned by, or was writable for, that user. So state whose file
(or a link to it, or the ``.splice`` holding it) is owned by someone other than this user,
root and the owner of the directory it belongs to (who controls what lies below it anyway)
is that user's, and its grants hold a project only when that user can write the project
(its directory, ``splice.json``, either lock or ``.splice``: owner, a group of that user,
others with write permission, or an entry of theirs in a POSIX ACL, under its mask:
project/posix_acl.py; any ACL counted for every user, so in a team's checkout with a
``g:team:rwx`` ACL a member who had left the group still owned, and could rewrite, the tools
the others ran). A project that user cannot write is this user's own: the
grant is ignored for it, with a warning (workspace.py). Fail closed: a user or group that
cannot be looked up (a group without an entry: every user's), or a project that cannot be
examined, counts as writable.

A file of this user or root is not always theirs: in a directory another user may write
(``/tmp``, a team's checkout) that user may have put it there, as a hard link (the kernel
allows one to any file they may read and write) or by a rename, and written into it. A team
checkout's ``splice.lock`` of yours, writable for its group, linked as ``/tmp/splice.lock``
by a member who then wrote a grant over your ``/tmp/victim`` into it, stopped that project
as a lock of yours would. Such a file (another user may write it, or it has another link,
and a directory holding it another user may write) is ``ANYONE``'s: its grants hold only
projects some user other than this one and root may write.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

# The writer of a file of this user or root that another user may have put and written
# (module docstring): not a uid, so never a file's owner.
ANYONE = -1


def other_writer(info: os.stat_result, entries: Iterable[Path], place: Path | None) -> int | None:
    """The user whose claim a state file is, when it is neither this process's user, nor
    root, nor the owner of ``place`` (the project or SPLICE_HOME the file belongs to, who
    may rename and replace anything in it anyway: a checkout owned by another user that
    root syncs in a container is theirs, and its tools' grants hold; None: no such owner is
    trusted); None otherwise.

    Owners looked at: the file read (``info``, its ``fstat``) and ``entries`` (its path and
    the ``.splice`` holding it) not followed: another user's link ``/tmp/splice.lock`` to a
    lock of yours is theirs. ``ANYONE`` for such a file of this user or root that another
    user may write, or that has another link, in a directory another user may write (the
    file's or one holding an entry: they may have put it there, module docstring). A
    platform without uids: always None."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:
        return None
    trusted = {geteuid(), 0}
    owners = [info.st_uid]
    for entry in entries:
        try:
            owners.append(os.lstat(entry).st_uid)
        except OSError:
            continue  # gone since the file was read: its own owner decides
    if all(owner in trusted for owner in owners):
        return ANYONE if _maybe_put_by_another(info, entries) else None
    if place is not None:
        with contextlib.suppress(OSError):  # fail closed: only this user and root
            trusted.add(os.stat(place).st_uid)
    return next((owner for owner in owners if owner not in trusted), None)


def _maybe_put_by_another(info: os.stat_result, entries: Iterable[Path]) -> bool:
    """Whether another user may have written the file read (``info``, reached at the first
    of ``entries``) and put it where it lies: they may write it or it has another link, and
    a directory holding one of ``entries`` they may write. Nothing more is looked at for a
    file only its owner may write, with one link (every file Splice writes, atomically)."""
    paths = list(entries)
    if info.st_nlink < 2 and not open_to_others(info, paths[0]):
        return False
    return any(others_may_write(path.parent) for path in paths)


def open_to_others(info: os.stat_result, path: Path, *, root_trusted: bool = True) -> bool:
    """Whether a user other than this process's and root (``root_trusted=False``: and other
    than this process's alone) may write the inode ``info`` (``path``'s, followed): its
    owner, others' write, a group's unless it is this user's alone (``_group_of_one``: umask
    002's user private group), or a POSIX ACL whose mask allows writing (``_has_acl``)."""
    euid = os.geteuid()
    if info.st_uid not in ((euid, 0) if root_trusted else (euid,)):
        return True
    if info.st_mode & stat.S_IWOTH:
        return True
    if not info.st_mode & stat.S_IWGRP:
        return False
    return not _group_of_one(info.st_gid, euid) or _has_acl(path)


def claimed_above(
    path: Path, info: os.stat_result | None, start: Path, beside: Iterable[str] = ()
) -> int | None:
    """The other user whose claim the file ``path`` in a directory above ``start`` is
    (``other_writer``; ``info``: the ``fstat`` of what was read, None to look at ``path``
    itself: ``entry_writer``), or whose claim an entry ``beside`` it is (a project's locks
    and ``.splice``, which decide what runs there), when they cannot write ``start``
    (``Writers.may_write``); else None, as for a file in ``start`` itself (the user's
    choice). The directory's owner is not trusted here: owning a directory above yours lets
    them move what lies below, not make your commands run their project's tools. The walk
    up to a project's ``splice.json``, a workspace's ``pyproject.toml`` or git's ``.git``
    passes such a claim over: any local user may make ``/tmp/splice.json``, and your
    ``splice run`` in ``/tmp/mywork`` ran their installed tool with the environment
    variables and your files their lock granted.

    Only ``start`` counts, not a directory between that they may write: a claim of theirs
    in that directory would be passed over, so one above it is too (their world-writable
    ``pub`` between their project and your ``mywork`` made it yours to run)."""
    directory = path.parent
    if directory == start or not start.is_relative_to(directory):
        return None
    writer = entry_writer(path) if info is None else other_writer(info, [path], None)
    for name in beside:
        if writer is not None:
            break
        writer = entry_writer(directory / name)
    if writer is None:
        return None
    return None if Writers().may_write(writer, start) else writer


def entry_writer(path: Path) -> int | None:
    """``other_writer`` for whatever ``path`` is (None when absent), its owner's trust
    alone: a directory of this user or root (and a link to one, of theirs) is ``ANYONE``'s
    only when another user may write it (a directory's link count is its subdirectories,
    not other names for it)."""
    if getattr(os, "geteuid", None) is None:
        return None  # a platform without uids, as other_writer
    try:
        info = os.lstat(path)
    except OSError:
        return None
    trusted = (os.geteuid(), 0)
    if stat.S_ISLNK(info.st_mode):
        if info.st_uid not in trusted:
            return info.st_uid  # their link: they chose what it reaches
        with contextlib.suppress(OSError):  # a dangling link: its own owner decides
            info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        return other_writer(info, [path], None)
    if info.st_uid not in trusted:
        return info.st_uid
    return ANYONE if open_to_others(info, path) else None


class Writers:
    """Whether a user can write a project, each user's groups looked up once per call."""

    def __init__(self) -> None:
        self._groups: dict[int, frozenset[int] | None] = {}

    def may_write(self, uid: int, project: Path) -> bool:
        """Whether ``uid`` can have written the project at ``project`` (module docstring);
        for ``ANYONE``, whether any user other than this one and root can."""
        from splice_build.project.layout import LEGACY_LOCK_FILE, LOCK_FILE, PROJECT_FILE, STATE_DIR

        try:
            if self._writable(os.stat(project), uid, project):
                return True
        except OSError:
            return True
        for name in (PROJECT_FILE, LOCK_FILE, LEGACY_LOCK_FILE, STATE_DIR):
            try:
                info = os.lstat(project / name)
            except FileNotFoundError:
                continue
            except OSError:
                return True
            if self._writable(info, uid, project / name):
                return True
        return False

    def member(self, uid: int, project: os.stat_result, root: Path) -> bool:
        """Whether ``uid`` may write the project's directory ``root`` (``project``: its
        ``stat``), as one trusted with what it runs: a user the user database does not know
        is not (``_writable`` counts them as a writer, which fails closed for a claim and
        open for trust: a deleted member's files, whose uid a process of theirs still holds,
        were run)."""
        return self._groups_of(uid) is not None and self._writable(
            project, uid, root, unknown=False
        )

    def _writable(
        self, info: os.stat_result, uid: int, path: Path, *, unknown: bool = True
    ) -> bool:
        """Whether ``uid`` may write ``path`` (``info``: its ``lstat``); ``unknown`` when it
        depends on what cannot be known (a group without an entry, an unreadable ACL): True
        for a claim, False for trust (``member``: a checkout whose group had no entry,
        ``groupdel team``, trusted the files of every user the user database knows)."""
        if uid == ANYONE:  # a link's owner made it: another's counts, this user's not
            return info.st_uid not in (os.geteuid(), 0) or (
                not stat.S_ISLNK(info.st_mode) and open_to_others(info, path)
            )
        if info.st_uid == uid:
            return True  # its owner may change its mode at will
        if stat.S_ISLNK(info.st_mode):
            return False  # a link's own mode means nothing; its owner made it
        if info.st_mode & stat.S_IWOTH:
            return True
        if info.st_mode & stat.S_IWGRP:
            from splice_build.project.posix_acl import lets_write

            groups = self._groups_of(uid)
            if groups is None or _unnamed_group(info.st_gid):
                return unknown
            by_acl = lets_write(path, uid, groups, info.st_gid, unreadable=unknown)
            return info.st_gid in groups if by_acl is None else by_acl
        return False

    def _groups_of(self, uid: int) -> frozenset[int] | None:
        if uid not in self._groups:
            self._groups[uid] = groups_of_user(uid)
        return self._groups[uid]


def _has_acl(path: Path) -> bool:
    """Whether ``path`` carries a POSIX access ACL (followed, as its ``stat`` was: an entry
    that is a link never gets here). With one, the group bits are its mask: a named user or
    group entry (``setfacl -m u:them:rwx``, or a shared directory's default ACL that every
    new file inherits) may write up to it whatever the owning group is, and rather than
    parse the entries any ACL whose mask allows writing counts as writable for every user
    (fail closed). A file system without ACLs has none; any other failure to look counts
    as one."""
    import errno

    try:
        os.getxattr(path, "system.posix_acl_access")
    except OSError as exc:
        return exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP)
    except AttributeError:  # no getxattr (not Linux): no ACL this code can see
        return False
    return True


def others_may_write(path: Path) -> bool:
    """Whether a user other than this process's may replace what the directory ``path``
    holds: it is another user's, or others may write it, or a group may, unless that group
    is this user's alone (``_group_of_one``: umask 002's user private group) and no ACL
    lets anyone else in. Fail closed: what cannot be examined counts."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:
        return False
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return open_to_others(info, path, root_trusted=False)


@functools.lru_cache(maxsize=16)
def _group_of_one(gid: int, uid: int) -> bool:
    """Whether ``uid`` is the only user of group ``gid``: its primary group, named as the
    user, with no other member in the group or user database; False when unsure. Cached:
    the user database is read whole (``getpwall``), once per group and process."""
    import grp
    import pwd

    try:
        user, group = pwd.getpwuid(uid), grp.getgrgid(gid)
        everyone = pwd.getpwall()
    except (KeyError, OSError):
        return False
    if user.pw_gid != gid or group.gr_name != user.pw_name:
        return False
    if set(group.gr_mem) - {user.pw_name}:
        return False
    return all(entry.pw_uid == uid or entry.pw_gid != gid for entry in everyone)


@functools.lru_cache(maxsize=16)
def _unnamed_group(gid: int) -> bool:
    """Whether the group database has no entry for ``gid``: who holds it is then unknown
    (a process may hold any group as a supplementary one, ``setpriv --groups``, a
    container's added group, while the database lists it nowhere), so it counts as every
    user's. Cached per group and process."""
    import grp

    try:
        grp.getgrgid(gid)
    except KeyError:
        return True
    return False


def groups_of_user(uid: int) -> frozenset[int] | None:
    """The groups of ``uid``, or None when they cannot be known (no such user in the user
    database: every group then counts)."""
    import pwd

    try:
        entry = pwd.getpwuid(uid)
        return frozenset(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except (KeyError, OSError):
        return None


def project_team(project: os.stat_result, root: Path) -> Callable[[], set[int]]:
    """The groups every member of which may write the project's directory ``root``
    (``project``: its ``stat``; posix_acl ``whole_groups``) for one check of many entries
    (``added_writer``'s ``team``): read at the first entry that needs them, then kept. Read
    again per entry, they were one ``getxattr`` of the project's directory per file and
    directory of a package before each run of a group-writable project. A read that
    fails is not kept: each entry that needs it fails alike."""
    kept: list[set[int]] = []

    def team() -> set[int]:
        if not kept:
            from splice_build.project.posix_acl import whole_groups  # only where a group writes

            kept.append(whole_groups(project, root))
        return kept[0]

    return team


def added_writer(
    info: os.stat_result,
    path: Path,
    project: os.stat_result,
    root: Path,
    *,
    team: Callable[[], set[int]] | None = None,
) -> str | None:
    """Why a user who may not write the project's directory ``root`` (``project``: its
    ``stat``) may write the inode ``info`` (``path``'s): a directory from the project down to
    an installed package, or one of the package's own directories and files (the code a
    call is about to run, install/installed.py). None when only those who already decide
    what the project runs may write it: this user, root, the project's owner and those
    ``Writers.may_write`` lets write the project's directory (a teammate's file in a shared
    checkout).

    Counted as ``others_may_write`` counts them: others' write (always: the project's
    directory itself too), a POSIX ACL entry allowing writing (under its mask; whatever the
    owning group: a named user's entry counts with your private group's too) for a user or
    group who may not write the project's directory (a team directory's default ACL
    ``d:g:team:rwx`` names one who may: the entries Splice made there were refused while
    the directory had only that default ACL, and the sync that closed them took the team's
    write), a group unless it is this user's alone (``_group_of_one``) or one the project's
    directory is writable for (a team's setgid checkout under umask 002; by its ACL entries
    where it has an access ACL, whose mask its group bits then are: project/posix_acl.py). Their owner set these modes; what they open
    to a user beyond the project's lets that user change the code between its check and
    Node reading it, or rename a directory away and put theirs in its place. ``team``: the
    project's groups for a check of many entries (``project_team``), read here otherwise."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:
        return None  # a platform without uids, as other_writer
    euid, owner = geteuid(), info.st_uid
    if owner not in (euid, 0, project.st_uid) and not Writers().member(owner, project, root):
        return f"it is owned by user {owner}, who may not write the project"
    if info.st_mode & stat.S_IWOTH:
        return "every user may write it"
    if not info.st_mode & stat.S_IWGRP:
        return None
    from splice_build.project.posix_acl import writers

    try:
        named = writers(info, path)
        if named is not None and os.path.samestat(info, project):
            groups_writing = named[1]  # who may write the project's directory may write it
        else:  # every member of which may write the project
            groups_writing = (team or project_team(project, root))()
    except (OSError, ValueError):
        return "its POSIX ACL cannot be read"
    if named is not None:  # before the owning group: the bits are the mask, not the group's
        users, groups = named
        trusted = (euid, 0, project.st_uid)
        if any(u not in trusted and not Writers().member(u, project, root) for u in users) or any(
            g not in groups_writing and not _group_of_one(g, euid) for g in groups
        ):
            return "a POSIX ACL lets other users write it"
        return None
    if _group_of_one(info.st_gid, euid) or info.st_gid in groups_writing:
        return None  # this user's own group, or the team's, which may write the project anyway
    return f"group {info.st_gid} may write it and not the project"


def renamer_above(
    info: os.stat_result, path: Path, entry: os.stat_result, project: os.stat_result, root: Path
) -> str | None:
    """Why a user beyond the project's may rename away the entry on the way to the project
    (``entry``: its ``lstat``) held by the directory ``path`` above it (``info``: its
    ``stat``), and put theirs in its place between the check and Node reading the code:
    ``added_writer``'s reasons for the directory, unless it is sticky (``/tmp``) and both
    it and the entry belong to those who decide what the project runs (only the owners of
    the directory and of the entry may rename an entry of a sticky directory)."""
    why = added_writer(info, path, project, root)
    if why is None or not info.st_mode & stat.S_ISVTX:
        return why
    trusted = (os.geteuid(), 0, project.st_uid)
    if info.st_uid not in trusted:
        return why  # added_writer's: owned by a user who may not write the project
    owner = entry.st_uid
    if owner in trusted or Writers().member(owner, project, root):
        return None
    return f"it is sticky, but user {owner} owns the entry on the way and may rename it"
