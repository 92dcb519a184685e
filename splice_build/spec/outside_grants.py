"""File grants whose real path leaves the project, and whether this machine accepted them.

A manifest's ``fs`` entry is relative and has no ``..`` (``is_grantable_path``), so the only
way its real path leaves the project's real directory is a symbolic link on the way: a
checkout's ``docs -> ~/.ssh``, or a pull that replaced a directory with one. The lock cannot
say where a link of this checkout leads, so such a grant holds only where this machine's
consent record (install/consent_record.py) names that entry with that very real path: each
is shown ``(a link to …)`` and asked for at install (install/consent.py), and refused at
every run (``PERMISSIONS_NOT_GRANTED``: sdk.py, runtime/runtime.py ``_granted_paths``).
A link that stays inside the project (``out -> ws``) and a project reached through a link
of its own are no such grant (docs/security.md#consent-on-this-machine).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import PurePath
from typing import TYPE_CHECKING

from splice_build.spec.project_state import RunMemo, effective_fs_path

if TYPE_CHECKING:
    from splice_build.spec.permissions import Permissions

# What a path that could not be resolved (a link swapped while realpath read it) is recorded
# as leading to: no record names it, so the grant is asked for, or refused, again.
UNRESOLVED = ""


def in_project(real_root: str, real: str) -> bool:
    """Whether the real path ``real`` is the project's real directory ``real_root`` or lies
    below it."""
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def outside_links(
    root: PurePath, permissions: Permissions, memo: RunMemo | None = None
) -> dict[str, str]:
    """Each ``fs`` entry of ``permissions`` (read, then write) whose real path in the project
    at ``root`` is neither the project's real directory nor below it, with that real path;
    ``memo``: the real paths this run took already (spec/project_state.py)."""
    entries = (*permissions.fs_read, *permissions.fs_write)
    if not entries:
        return {}
    memo = RunMemo() if memo is None else memo
    real_root = memo.real_text(os.fspath(root))
    found: dict[str, str] = {}
    for entry in entries:
        if entry in found:
            continue
        try:
            real = str(memo.real_grant(effective_fs_path(PurePath(real_root), entry)))
        except OSError:
            found[entry] = UNRESOLVED
            continue
        if not in_project(real_root, real):
            found[entry] = real
    return found


def unaccepted_links(
    root: PurePath,
    permissions: Permissions,
    accepted: Mapping[str, str] | None,
    found: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """:func:`outside_links` (``found``: as the caller resolved them) that ``accepted``
    (entry: the real path this machine accepted it leading to; None: nothing accepted) does
    not name with that same real path."""
    held = accepted or {}
    links = outside_links(root, permissions) if found is None else found
    return {
        entry: real
        for entry, real in links.items()
        if real == UNRESOLVED or held.get(entry) != real
    }
