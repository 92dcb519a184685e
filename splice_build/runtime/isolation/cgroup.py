"""cgroup v2 detection: can a per-tool memory limit be set on this machine?

A memory limit per tool needs the unified hierarchy mounted at ``/sys/fs/cgroup``, the
``memory`` controller enabled for the children of this process's cgroup
(``cgroup.subtree_control``) and that cgroup writable (a delegated subtree). The reason
found first is reported by ``splice doctor``.
"""

from __future__ import annotations

import os
from pathlib import Path

from splice_build.records import dataclass

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class CgroupStatus:
    usable: bool
    detail: str  # the usable cgroup, or why there is none


def _own_cgroup() -> str | None:
    try:
        text = Path("/proc/self/cgroup").read_text("utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("0::"):
            return line[3:]
    return None


def detect_cgroup() -> CgroupStatus:
    if not (CGROUP_ROOT / "cgroup.controllers").is_file():
        return CgroupStatus(
            False, "cgroup v2 is not the hierarchy at /sys/fs/cgroup (v1 or hybrid)"
        )
    relative = _own_cgroup()
    if relative is None:
        return CgroupStatus(False, "this process has no cgroup v2 entry in /proc/self/cgroup")
    path = CGROUP_ROOT / relative.lstrip("/")
    try:
        enabled = (path / "cgroup.subtree_control").read_text("utf-8").split()
    except OSError as exc:
        return CgroupStatus(False, f"{path}/cgroup.subtree_control cannot be read: {exc.strerror}")
    if "memory" not in enabled:
        return CgroupStatus(False, f"the memory controller is not delegated to {relative}")
    if not os.access(path, os.W_OK):
        return CgroupStatus(False, f"{path} is not writable (no delegated cgroup)")
    return CgroupStatus(True, str(path))
