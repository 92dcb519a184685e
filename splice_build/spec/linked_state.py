"""Another name of the project's state inside a grant (docs/security.md#grants-and-project-state).

A hard link is the same file under a second name, and the rules of spec/project_state.py
compare paths: a grant of ``data`` holding ``data/cfg``, a hard link of ``.env`` (``ln``,
``cp -al``, an archive unpacked with its links), handed the broker's provider keys to a tool
that may only read ``data``, and one of ``splice.json`` in a write grant let a tool name the
registry the next install asks. So these are looked at: the files Splice reads at the
project's root (``STATE_FILES``) and every other ``.env*`` file there (``.env.production``,
protected by name for the secrets it holds), once per check (one listing of the root, one
``lstat`` each); and once for every member of a run (spec/project_state.py ``RunMemo``)
``STATE_FILES`` of each directory above the root (the broker reads the nearest ``.env``
above a project that has none, and a workspace root keeps its members' lock), and
SPLICE_HOME's ``config.json`` (``isolation``), ``credentials.json`` (registry tokens),
``.env`` (``HOME_FILES``) and every file of its ``keys/`` (private signing keys) and
``consent/`` (what this machine granted each project, which a tool rewriting it would
widen). Only one that has another link (``st_nlink`` above 1, rare) costs more: each grant
is then walked, at every check (nothing is remembered), for an entry with its device and
inode (``DirEntry.inode`` comes with the listing), following no link, as spec/project_below.py
walks.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import PurePath

from splice_build.file_keys import same_file
from splice_build.spec.project_state import (
    ENV_FILE_PREFIX,
    ENV_FILES,
    HOME_CONFIG_FILE,
    HOME_CREDENTIALS_FILE,
    LEGACY_LOCK_FILE,
    LOCK_FILE,
    PROJECT_FILE,
)

STATE_FILES = (PROJECT_FILE, LOCK_FILE, LEGACY_LOCK_FILE, *ENV_FILES)
# SPLICE_HOME's: its isolation setting, registry tokens and provider keys (project/home.py)
HOME_FILES = (HOME_CONFIG_FILE, HOME_CREDENTIALS_FILE, ".env")
# SPLICE_HOME's directories whose every file is state: signing keys and consent records
# (project/home.py keys_dir, consent_dir)
HOME_DIRECTORIES = ("keys", "consent")

# (device, inode) of a state file -> what it is ("the project's splice.json")
Linked = Mapping[tuple[int, int], str]


def linked_state(root: PurePath) -> Linked:
    """The state files of the project at ``root`` that are regular files with another name:
    ``STATE_FILES`` and every ``.env*`` file (its name folded, as spec/project_state.py
    protects it)."""
    names = (*STATE_FILES, *_other_env_files(root))
    return _linked(root, names, lambda name: f"the project's {name}")


def _other_env_files(root: PurePath) -> list[str]:
    """The names at ``root`` beside ``ENV_FILES`` that start with ``.env``, folded."""
    from splice_build.spec.paths import fold_name

    try:
        with os.scandir(root) as entries:
            names = [entry.name for entry in entries]
    except OSError:  # gone (the lstats of STATE_FILES find nothing either)
        return []
    return [
        name
        for name in names
        if name not in ENV_FILES
        and (
            name[:4].lower() == ENV_FILE_PREFIX
            if name.isascii()
            else fold_name(name).startswith(ENV_FILE_PREFIX)
        )
    ]


def linked_home(home: PurePath | None) -> Linked:
    """Those of the SPLICE_HOME ``home``, if known (the same for every member of a run)."""
    if home is None:
        return {}
    names = list(HOME_FILES)
    for directory in HOME_DIRECTORIES:
        try:
            with os.scandir(os.path.join(home, directory)) as entries:
                names += [f"{directory}/{entry.name}" for entry in entries]
        except OSError:  # none yet, or not to be listed
            continue
    return _linked(home, tuple(names), lambda name: f"SPLICE_HOME's {name}")


def linked_above(directory: PurePath) -> Linked:
    """Those of ``STATE_FILES`` in ``directory``, one above a project: the broker reads
    the nearest ``.env`` above a project that has none (broker/keys.py), and a workspace
    root keeps its members' ``splice.json`` and ``splice.lock`` there."""
    return _linked(directory, STATE_FILES, lambda name: f"{directory / name}, above the project")


def _linked(directory: PurePath, names: tuple[str, ...], what: Callable[[str], str]) -> Linked:
    found: dict[tuple[int, int], str] = {}
    for name in names:
        try:
            info = os.lstat(os.path.join(directory, name))
        except OSError:
            continue
        if info.st_nlink > 1 and stat.S_ISREG(info.st_mode):
            found[same_file(info)] = what(name)
    return found


def other_name(real: str, linked: Linked) -> tuple[str, str] | OSError | None:
    """The first path at or below the real path ``real`` that is a file of ``linked``, and
    what that file is; None when there is none (or nothing is there yet); or the error of a
    directory there that could not be listed for another reason than being gone, no
    directory or closed to the tool (its names unknown: spec/project_below.py's rule)."""
    from splice_build.spec.project_below import passed_over

    try:
        info = os.lstat(real)
    except OSError:
        return None
    if (key := same_file(info)) in linked:
        return real, linked[key]
    pending = [(real, info.st_dev)] if stat.S_ISDIR(info.st_mode) else []
    while pending:
        current, device = pending.pop()
        try:
            with os.scandir(current) as listing:
                entries = list(listing)
        except OSError as exc:
            if passed_over(exc, current):
                continue
            return exc
        for entry in entries:
            if (device, entry.inode()) in linked:
                return entry.path, linked[(device, entry.inode())]
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, entry.stat(follow_symlinks=False).st_dev))
            except OSError:  # gone since the listing
                continue
    return None
