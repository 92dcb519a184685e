"""Who a directory's POSIX ACLs let write, read from the kernel's extended attributes.

With an access ACL a file's group bits are its mask, not its owning group's permission: a
project directory ``2755`` given ``setfacl -m u:them:rwx`` shows ``drwxrwsr-x+`` while its
group may not write it. Read as the group's, a team member who could not write the project
could write the ``.splice`` Splice then made there, and rewrite a tool the check let run
(project/creation_modes.py, project/state_owner.py ``added_writer``). And a directory's
default ACL is copied onto every entry made in it, its mask taken from the group bits asked
for: a named user of a default ACL (``setfacl -d -m u:them:rwx``) who may not write the
directory itself could write every file Splice made there with the group's write.

Fail closed: an ACL that cannot be read or parsed lets no group write here.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from pathlib import Path

ACCESS = "system.posix_acl_access"
DEFAULT = "system.posix_acl_default"
# The tags of acl_ea_entry (linux/posix_acl_xattr.h) and the write permission.
_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
_WRITE = 0x02
_VERSION = 2


def entries(path: Path | str, name: str) -> list[tuple[int, int, int]] | None:
    """The ``(tag, perm, id)`` entries of the ACL ``name`` of ``path`` (followed); None when it
    has none (or the file system keeps none). Raises ``OSError`` when it cannot be read and
    ``ValueError`` when it is not a valid version 2 ACL (``_valid``)."""
    getxattr = getattr(os, "getxattr", None)
    if getxattr is None:
        return None  # not Linux: no ACL this code can see
    try:
        value = getxattr(path, name)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            return None
        raise
    return parse(value)


def parse(value: bytes) -> list[tuple[int, int, int]]:
    """The ``(tag, perm, id)`` entries of an ACL's extended attribute ``value``; raises
    ``ValueError`` when it is not a valid version 2 ACL (``_valid``). A FUSE or network file
    system hands back any bytes (fuzz/targets.py ``posix_acl``)."""
    if len(value) < 4 or (len(value) - 4) % 8 or struct.unpack_from("<I", value)[0] != _VERSION:
        raise ValueError(f"not a POSIX ACL: {len(value)} bytes")
    found = [struct.unpack_from("<HHI", value, at) for at in range(4, len(value), 8)]
    if not _valid(found):
        raise ValueError(f"not a valid POSIX ACL: {found[:8]}")
    return found


def _valid(found: list[tuple[int, int, int]]) -> bool:
    """Whether ``found`` is an ACL the kernel would accept (``posix_acl_valid``): known tags
    and permission bits only, one owner, owning group and others entry each, named users
    and groups each named once and under a mask, one mask at most. The kernel refuses any
    other on a local file system, but a FUSE or network file system may hand back what it
    likes: a second mask without write made every named writer count as none, a tag this
    code does not know would be skipped (fail closed: no group writes, every user may)."""
    tags = [tag for tag, _, _ in found]
    named = [(tag, ident) for tag, _, ident in found if tag in (_USER, _GROUP)]
    masks = tags.count(_MASK)
    return (
        all(tag in _TAGS and not perm & ~0o7 for tag, perm, _ in found)
        and all(tags.count(tag) == 1 for tag in (_USER_OBJ, _GROUP_OBJ, _OTHER))
        and masks <= 1
        and (masks == 1 or not named)
        and len(set(named)) == len(named)
    )


_TAGS = frozenset({_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER})


def group_may_write(info: os.stat_result, path: Path | str) -> bool:
    """Whether every member of the owning group of ``path`` (``info``: its ``stat``) may
    write it (``whole_groups``)."""
    if not info.st_mode & stat.S_IWGRP:
        return False  # no ACL entry writes past a mask without write
    try:
        return info.st_gid in whole_groups(info, path)
    except (OSError, ValueError):
        return False


def whole_groups(info: os.stat_result, path: Path | str) -> set[int]:
    """The groups every member of which may write ``path`` (``info``: its ``stat``): its
    owning group by its group bits, or with an access ACL the groups its entries let write
    under the mask, less those of a user it names without write (``u:them:r-x``, whose own
    entry decides for them: a member of a ``2775`` team's project so named could not write
    it, yet wrote every tool there the team's write let the check trust). A named user the
    user database does not know takes every group. Raises ``OSError`` or ``ValueError``
    when the ACL cannot be read."""
    found = entries(path, ACCESS)  # read once: the writers and the users named without write
    if found is None:
        return {info.st_gid} if info.st_mode & stat.S_IWGRP else set()
    from splice_build.project.state_owner import groups_of_user

    groups = _writers_in(found, info)[1]
    for tag, perm, ident in found:
        if tag == _USER and not perm & _WRITE and ident != info.st_uid and groups:
            held = groups_of_user(ident)
            groups = set() if held is None else groups - held
    return groups


def writers(info: os.stat_result, path: Path | str) -> tuple[set[int], set[int]] | None:
    """The users and groups the access ACL of ``path`` (``info``: its ``stat``) lets write
    it besides its owner, under its mask (its owning group's entry as its ``st_gid``); None
    when it has none. Raises ``OSError`` or ``ValueError`` when it cannot be read."""
    found = entries(path, ACCESS)
    return None if found is None else _writers_in(found, info)


def _writers_in(
    found: list[tuple[int, int, int]], info: os.stat_result
) -> tuple[set[int], set[int]]:
    """``writers``' answer from the entries of an access ACL."""
    users: set[int] = set()
    groups: set[int] = set()
    if any(tag == _MASK and not perm & _WRITE for tag, perm, _ in found):
        return users, groups
    for tag, perm, ident in found:
        if perm & _WRITE:
            if tag == _USER:
                users.add(ident)
            elif tag in (_GROUP, _GROUP_OBJ):
                groups.add(info.st_gid if tag == _GROUP_OBJ else ident)
    return users, groups


def lets_write(
    path: Path | str, uid: int, groups: frozenset[int], gid: int, *, unreadable: bool = True
) -> bool | None:
    """Whether the access ACL of ``path`` (owned by another user than ``uid``, owning group
    ``gid``) lets ``uid``, of ``groups``, write it: its named user entry, else any entry of one
    of its groups (the owning group's included), each under the mask. None: ``path`` has no
    access ACL. Unreadable: ``unreadable`` (fail closed: a writer for a claim, none for
    trust)."""
    try:
        found = entries(path, ACCESS)
    except (OSError, ValueError):
        return unreadable
    if found is None:
        return None
    if any(tag == _MASK and not perm & _WRITE for tag, perm, _ in found):
        return False
    mine = [perm for tag, perm, ident in found if tag == _USER and ident == uid]
    if mine:
        return bool(mine[0] & _WRITE)
    return any(
        perm & _WRITE
        for tag, perm, ident in found
        if (tag == _GROUP and ident in groups) or (tag == _GROUP_OBJ and gid in groups)
    )


def default_adds_writers(info: os.stat_result, directory: Path | str) -> bool:
    """Whether ``directory``'s (``info``: its ``stat``) default ACL names a user or group with
    write access that may not write the directory itself (by its access ACL under its mask;
    its owner, or its owning group where that may write it, as ``setfacl -d -m g:team:rwx``
    on a team's ``2775`` directory names): an entry made there with the group's write would
    open to them. Unreadable: True."""
    try:
        default = entries(directory, DEFAULT)
        if default is None:
            return False
        access = entries(directory, ACCESS) or []
    except (OSError, ValueError):
        return True
    wanted = [
        (tag, ident) for tag, perm, ident in default if tag in (_USER, _GROUP) and perm & _WRITE
    ]
    if not wanted:
        return False
    own = {(_USER, info.st_uid)}
    if group_may_write(info, directory):
        own.add((_GROUP, info.st_gid))
    masked = any(tag == _MASK and not perm & _WRITE for tag, perm, _ in access)
    return any(key not in own and (masked or not _writes(access, key)) for key in wanted)


def _writes(found: list[tuple[int, int, int]], key: tuple[int, int]) -> bool:
    return any((tag, ident) == key and perm & _WRITE for tag, perm, ident in found)
