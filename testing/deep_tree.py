"""A directory nested far deeper than Python's recursion limit (``root/a/a/…/a``), and its
removal: code that walks a checkout must refuse or walk it, never fail with RecursionError."""

from __future__ import annotations

import os
from pathlib import Path


def nested(root: Path, levels: int) -> Path:
    """``root/a/a/…/a`` (``levels`` deep), made one level at a time: its full path may be
    longer than the system lets one call name."""
    parent = os.open(root, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("a", dir_fd=parent)
            child = os.open("a", os.O_RDONLY, dir_fd=parent)
            os.close(parent)
            parent = child
    finally:
        os.close(parent)
    return root.joinpath(*["a"] * levels)


def unnested(root: Path) -> None:
    """Remove ``root/a/a/…`` from the top, one level at a time (``shutil.rmtree`` recurses)."""
    while (root / "a").exists():
        inner = root / "a" / "a"
        if inner.exists():
            inner.rename(root / "lifted")
        (root / "a").rmdir()
        if (root / "lifted").exists():
            (root / "lifted").rename(root / "a")
