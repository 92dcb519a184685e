"""Whether a file system keeps change times no process sets, which a remembered walk below a
grant relies on (spec/project_below.py).

A walk is trusted again while every directory it listed keeps its device, inode and change
time. That holds where the kernel sets the change time at every change and nothing sets it
back. Not everywhere: FAT keeps no change time (the kernel's vfat, and FUSE's, give the
modification time for it), and SFTP carries none (sshfs does the same), so ``utime`` sets
it. A tool granted ``out`` on a FAT file system made ``out/sub/.git`` and put ``out/sub``'s
modification time back: the check of the next call in the same process (``splice mcp``, one
``Splice``) trusted the walk and passed the write grant, while a fresh process refused it.

So a walk is remembered and trusted only where every directory it listed lies on a file
system of an allow-list whose change time the kernel alone sets (Linux ``statfs`` types);
elsewhere (FUSE, network and FAT file systems, other systems) each check lists afresh.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

# statfs f_type of Linux file systems whose change time only the kernel sets (linux/magic.h)
_KEEPING = frozenset(
    (
        0xEF53,  # ext2, ext3, ext4
        0x58465342,  # xfs
        0x9123683E,  # btrfs
        0x01021994,  # tmpfs
        0x794C7630,  # overlayfs (the change time of its upper file system)
        0xF2F52010,  # f2fs
        0x2FC12FC1,  # zfs
    )
)


def keeps_change_times(path: str) -> bool:
    """Whether the file system holding ``path`` is one of ``_KEEPING``; False where it is
    not, cannot be told (another system than Linux) or ``statfs`` fails (fail closed)."""
    if not sys.platform.startswith("linux"):
        return False
    statfs, buffer = _statfs()
    found = buffer()
    if statfs(os.fsencode(path), found) != 0:
        return False
    return found.f_type & 0xFFFFFFFF in _KEEPING


@functools.cache
def _statfs() -> tuple[Callable[..., int], Any]:
    """libc's ``statfs`` and a buffer type for its answer: ``f_type`` (a long) first, then
    room for the other fields."""
    import ctypes

    class StatFs(ctypes.Structure):
        _fields_ = (("f_type", ctypes.c_long), ("rest", ctypes.c_byte * 256))

    statfs = ctypes.CDLL(None, use_errno=True).statfs
    statfs.argtypes = (ctypes.c_char_p, ctypes.POINTER(StatFs))
    return statfs, StatFs
