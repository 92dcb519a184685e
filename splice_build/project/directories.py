"""Directories named by a caller (the command line, the SDK), checked before anything is
created in them.

A path that is a file, sits under a file, cannot be looked up (a name too long, a parent this
user may not search) or (when it must exist) is missing, is a usage error (exit 2) that names
it, rather than an ``OSError`` from deep inside a command.
"""

from __future__ import annotations

import os
from pathlib import Path

from splice_build.errors import UsageError


def usable_directory(
    path: Path, what: str, *, must_exist: bool = False, hint: str | None = None
) -> Path:
    """``path`` when it is a directory this user can use, or can be created (not ``must_exist``)."""
    try:
        return _usable(path, what, must_exist=must_exist, hint=hint)
    except OSError as exc:  # a name too long, a parent this user may not search
        raise UsageError(f"{what} {path} cannot be used: {exc.strerror}", hint=hint) from None


def _usable(path: Path, what: str, *, must_exist: bool, hint: str | None) -> Path:
    if path.is_dir():
        if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
            raise UsageError(f"{what} {path} cannot be read and written by this user", hint=hint)
        return path
    if path.exists() or path.is_symlink():
        raise UsageError(f"{what} {path} is not a directory", hint=hint)
    parent = next(p for p in path.parents if p.exists() or p.is_symlink())
    if not parent.is_dir():
        raise UsageError(f"{what} {path} is inside {parent}, which is not a directory", hint=hint)
    if must_exist:
        raise UsageError(f"{what} {path} does not exist", hint=hint)
    return path


def existing_directory(path: Path, what: str, *, hint: str | None = None) -> Path:
    """``path`` when it is a directory; else ``USAGE`` "``what`` ``path`` does not exist" (or
    "is not a directory"). For a directory a command reads from, which a mistake must not
    turn into another: a mistyped one was walked up from like a working directory."""
    if path.is_dir():
        return path
    problem = "is not a directory" if path.exists() or path.is_symlink() else "does not exist"
    raise UsageError(f"{what} {path} {problem}", hint=hint)
