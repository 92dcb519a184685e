"""POSIX access ACLs written as the kernel's extended attribute (no ``setfacl`` needed), and
whether the temporary directory's file system keeps them (tests/project/
test_other_users_grants.py, tests/tasks/test_other_writers.py)."""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

_ANYONE = 0xFFFFFFFF


def set_access_acl(path: Path, named: int, perm: int, group: int = 5) -> None:
    """As ``setfacl -m u:<named>:<perm>`` with mask rwx: owner rwx, the named user ``perm``,
    the owning group ``group`` (r-x), mask rwx, others r-x."""
    entries = [(1, 7, _ANYONE), (2, perm, named), (4, group, _ANYONE), (0x10, 7, _ANYONE)]
    entries.append((0x20, 5, _ANYONE))
    value = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
    os.setxattr(path, "system.posix_acl_access", value)


def set_default_group_acl(path: Path, group: int, perm: int) -> None:
    """As ``setfacl -d -m g:<group>:<perm>`` on a ``2775`` directory: a default ACL of owner
    rwx, the named group ``perm``, group rwx, mask rwx, others r-x."""
    entries = [(1, 7, _ANYONE), (4, 7, _ANYONE), (8, perm, group), (0x10, 7, _ANYONE)]
    entries.append((0x20, 5, _ANYONE))
    value = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
    os.setxattr(path, "system.posix_acl_default", value)


def posix_acls_kept() -> bool:
    """Whether the file system of the temporary directory (where ``tmp_path`` lies) keeps
    POSIX ACLs."""
    with tempfile.NamedTemporaryFile() as probe:
        try:
            set_access_acl(Path(probe.name), 65534, 6)
        except OSError:
            return False
    return True
