"""Whether SPLICE_HOME is this user's alone: nobody else may have chosen what it holds.

Later commands trust what the home holds: ``config.json`` picks the registry (which then
gets ``SPLICE_TOKEN``) and the isolation setting, ``credentials.json`` the token sent,
``keys/`` the key that signs and is registered, ``registry/`` the embedded registry's
packages, and the cache and ``logs/`` are written into. A home in a shared place
(``SPLICE_HOME=/tmp/splice-home``) that another local user made first, or could rename away
and replace, was theirs: their ``config.json`` naming a registry on ``127.0.0.1`` received
the user's ``SPLICE_TOKEN`` on the next ``splice whoami``.

So the home, by the path given and by its real path, must be a directory of this user that
no other user may write (project/state_owner.py ``others_may_write``'s rule: others' write, a
group with another member, an ACL), and in every directory above it no other user may
rename the entry on the way: one only this user or root may write, or a sticky one (``/tmp``)
of this user or root in which the entry is this user's or root's. A home that does not exist yet is
no problem here: it is made 0700 by this user, and looked at again once made
(``SpliceHome.ensure``). Root is held to the same rule: a ``sudo`` that keeps the caller's
``HOME`` reads that user's ``~/.splice``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from splice_build.errors import ErrorCode, ProjectError
from splice_build.file_keys import same_file

# Homes found to be a user's alone, by path and uid, with the identity of the directory
# found (``_identity``). No other user may change that directory or the way to it (that is
# what was checked), so while the path still reaches that directory, unchanged, one stat
# stands for the walk (about 10 system calls, and a run reads config.json more than once).
# The path alone was not enough: a home in a sticky directory that its user removed (or a
# cleaner of /tmp did) could be made again by anyone, and a long-lived process (the SDK,
# ``splice mcp``) went on using theirs.
_SOUND: dict[tuple[Path, int], tuple[int, ...]] = {}


def _identity(info: os.stat_result) -> tuple[int, ...]:
    """What a home that is still the one checked keeps: the same directory, owner and mode
    (a chmod or an ACL's mask of the user's own shows in the mode)."""
    return (*same_file(info), info.st_uid, info.st_mode)


def home_problem(home: Path) -> str | None:
    """Why another user may have chosen what ``home`` holds, or None (module docstring)."""
    from splice_build.project.paths_above import entries_above
    from splice_build.project.state_owner import open_to_others

    if getattr(os, "geteuid", None) is None:
        return None  # a platform without uids, as state_owner
    euid = os.geteuid()
    try:
        if _SOUND.get((home, euid)) == _identity(os.stat(home)):
            return None
    except OSError:
        pass  # looked at below
    real = os.path.realpath(home)
    try:
        info = os.stat(real)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"it cannot be examined ({exc.strerror or exc})"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    if info.st_uid != euid:
        return f"it is owned by user {info.st_uid}"
    if open_to_others(info, Path(real), root_trusted=False):
        return "other users may write it"
    for directory, path in entries_above(home):
        try:
            above = os.stat(directory)
            entry = os.lstat(path)
        except OSError as exc:
            return f"{directory} cannot be examined ({exc.strerror or exc})"
        if open_to_others(above, Path(directory)) and not (
            above.st_mode & stat.S_ISVTX and above.st_uid in (euid, 0) and entry.st_uid in (euid, 0)
        ):
            return f"another user may replace {path} (in {directory}, which they may write)"
    _SOUND[(home, euid)] = _identity(info)
    return None


def check_home(home: Path) -> None:
    """``INVALID_CONFIG`` when another user may have chosen what ``home`` holds."""
    problem = home_problem(home)
    if problem is not None:
        raise ProjectError(
            ErrorCode.INVALID_CONFIG,
            f"SPLICE_HOME {home} cannot be used: {problem}",
            hint="Set SPLICE_HOME to a directory only you may write (mode 0700), "
            "in a directory only you or root may write (`mktemp -d -p /tmp` makes one).",
        )
