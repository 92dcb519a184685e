"""The entries on the way to a path: where another user could put a tree of their own.

Whoever may rename an entry on the way to a directory may replace what the path reaches:
the checks of a project's writers (install/installed.py), of SPLICE_HOME
(project/home_owner.py) and of a registry's data directory (registry/data_owner.py) each
look at every such entry, with their own rule for who may.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def entries_above(path: str | Path) -> Iterator[tuple[str, str]]:
    """``(directory, entry)`` for each directory above ``path`` and the entry in it on the
    way, nearest first, by the path given and then by its real path (a link on the way is a
    second way there), each entry once."""
    seen: set[str] = set()
    for start in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):
        entry = start
        while (directory := os.path.dirname(entry)) != entry and entry not in seen:
            seen.add(entry)
            yield directory, entry
            entry = directory
