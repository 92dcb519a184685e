"""Tampering the way the stat cache cannot see (docs/lifecycle.md#the-stat-cache): a same-size
edit with the mtime put back, then a cache record forged to call the edited file unchanged;
and the cache's packed tables read and written as one list per name, for tests that forge
them."""

from __future__ import annotations

import json
import os
import struct
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
    records = unpacked(cache["packages"][package_id])
    records[relative][:6] = [
        info.st_dev,
        info.st_ino,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
        info.st_mode,
    ]
    cache["packages"][package_id] = packed(records)
    layout.stat_cache.write_text(json.dumps(cache))
    later = info.st_ctime_ns + 10**9  # the cache is newer than the record (not racy)
    os.utime(layout.stat_cache, ns=(later, later))


_KEY = "<QQQqqQ"  # as install/statcache.py packs a key: written here to check it independently


def unpacked(table: dict) -> dict[str, list]:
    """A package's table of ``.splice/statcache.json`` as ``name -> [dev, ino, size,
    mtime_ns, ctime_ns, mode]``, and the hex SHA-256 after them for a files table."""
    names, keys = table["names"], bytes.fromhex(table["keys"])
    shas = table.get("sha256")
    rows = {}
    for i, name in enumerate(names):
        row = list(struct.unpack_from(_KEY, keys, i * struct.calcsize(_KEY)))
        rows[name] = row if shas is None else [*row, shas[64 * i : 64 * (i + 1)]]
    return rows


def packed(rows: dict[str, list]) -> dict:
    """The table of ``rows`` (as :func:`unpacked` gives them), names in sorted order; each
    hash is joined as it is, whatever it holds."""
    names = sorted(rows)
    table: dict = {
        "names": names,
        "keys": b"".join(struct.pack(_KEY, *rows[name][:6]) for name in names).hex(),
    }
    if names and len(rows[names[0]]) == 7:
        table["sha256"] = "".join(rows[name][6] for name in names)
    return table
