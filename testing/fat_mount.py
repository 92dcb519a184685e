"""A FAT file system mounted through FUSE (``fusefat``) for a test: FAT keeps no change time,
so a directory's is its modification time, which ``utime`` sets (spec/change_times.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# fusefat and mkfs.vfat installed, and /dev/fuse this user may open (root)
FAT_AVAILABLE = (
    shutil.which("fusefat") is not None
    and shutil.which("mkfs.vfat") is not None
    and os.access("/dev/fuse", os.R_OK | os.W_OK)
)


@contextmanager
def fat_mount(where: Path) -> Iterator[Path]:
    """A fresh 16 MiB FAT file system mounted at ``where / "fat"``, unmounted after."""
    image, mount = where / "fat.img", where / "fat"
    mount.mkdir()
    with image.open("wb") as file:
        file.truncate(16 * 1024 * 1024)
    subprocess.run(["mkfs.vfat", str(image)], check=True, capture_output=True, timeout=30)
    subprocess.run(["fusefat", "-o", "rw+", str(image), str(mount)], check=True,
                   capture_output=True, timeout=30)  # fmt: skip
    try:
        yield mount
    finally:
        subprocess.run(["fusermount", "-u", "-z", str(mount)], capture_output=True, timeout=30)
