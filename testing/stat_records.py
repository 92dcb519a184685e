"""Tampering the way the stat cache cannot see (docs/lifecycle.md#the-stat-cache): a same-size
edit with the mtime put back, then a cache record forged to call the edited file unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path

from splice_build.project.layout import ProjectLayout


def edit_keeping_mtime(path: Path, text: str) -> None:
    """Rewrite ``path`` in place with ``text`` (same length) and put its times back."""
    before = path.stat()
    if len(text.encode()) != before.st_size:
        raise AssertionError("BUG: the edit must keep the size")
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def forge_clean_record(project: Path, package_id: str, relative: str) -> None:
    """Make ``.splice/statcache.json`` record the file's stat now with its old hash."""
    layout = ProjectLayout(project)
    cache = json.loads(layout.stat_cache.read_text())
    info = (layout.package_dir(package_id) / relative).stat()
    record = cache["packages"][package_id][relative]
    record[:6] = [
        info.st_dev,
        info.st_ino,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
        info.st_mode,
    ]
    layout.stat_cache.write_text(json.dumps(cache))
    later = info.st_ctime_ns + 10**9  # the cache is newer than the record (not racy)
    os.utime(layout.stat_cache, ns=(later, later))
