"""A doit file checker that compares SHA-256 digests (doit's MD5 and timestamp ones are not integrity).

The state of a file is ``(mtime_ns, size, sha256 hex)``. Like doit's ``MD5Checker`` it may use
the stat shortcut (same mtime and size → unchanged): it only decides whether the ``lock`` task
has work to do, never whether bytes are trusted (docs/architecture.md#invariants, 3). A changed mtime with the
same size is settled by re-hashing, so touching a file re-runs nothing.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from doit.dependency import FileChangedChecker

_CHUNK = 1024 * 1024


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class Sha256Checker(FileChangedChecker):
    """``check_modified`` / ``get_state`` over ``(mtime_ns, size, sha256)``."""

    def check_modified(self, file_path: str, file_stat: os.stat_result, state: Any) -> bool:
        if not _is_state(state):
            return True  # not a state this checker saved: the task runs, its check decides
        mtime_ns, size, sha = state
        if file_stat.st_size != size:
            return True
        if file_stat.st_mtime_ns == mtime_ns:
            return False
        return file_sha256(file_path) != sha

    def get_state(self, dep: str, current_state: Any) -> tuple[int, int, str] | None:
        stat = os.stat(dep)
        if _is_state(current_state) and tuple(current_state[:2]) == (
            stat.st_mtime_ns,
            stat.st_size,
        ):
            return None  # unchanged: keep the saved state
        return (stat.st_mtime_ns, stat.st_size, file_sha256(dep))


def _is_state(state: object) -> bool:
    """``state`` has the shape ``get_state`` gives (a list once doit's JSON database has held
    it). The database is a file in ``.splice/``, which can come with a checkout: any other
    value is read as "changed", never unpacked into a crash."""
    return (
        isinstance(state, list | tuple)
        and len(state) == 3
        and all(type(v) is int for v in state[:2])
        and isinstance(state[2], str)
    )
