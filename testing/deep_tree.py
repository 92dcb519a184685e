"""A directory nested far deeper than Python's recursion limit (``root/a/a/…/a``), and its
removal: code that walks a checkout must refuse or walk it, never fail with RecursionError."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path


def nested(root: Path, levels: int, bottom: str | None = None, name: str = "a") -> Path:
    """``root/a/a/…/a`` (``levels`` deep; each level ``name``), made one level at a time: its
    full path may be longer than the system lets one call name. ``bottom``: a directory of
    that name made in the deepest level."""
    parent = os.open(root, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=parent)
            child = os.open(name, os.O_RDONLY, dir_fd=parent)
            os.close(parent)
            parent = child
        if bottom is not None:
            os.mkdir(bottom, dir_fd=parent)
    finally:
        os.close(parent)
    return root.joinpath(*[name] * levels)


def unnested(root: Path, name: str = "a") -> None:
    """Remove ``root/a/a/…`` (each level ``name``; and what the levels hold besides the next,
    a ``bottom`` of :func:`nested`) by descriptors from the bottom up: ``shutil.rmtree``
    recurses, and a path from ``root`` at each level costs a walk of its depth."""
    current = os.open(root, os.O_RDONLY)
    depth = 0
    try:
        while _holds_directory(current, name):
            child = os.open(name, os.O_RDONLY, dir_fd=current)
            os.close(current)
            current, depth = child, depth + 1
        for _ in range(depth):
            parent = os.open("..", os.O_RDONLY, dir_fd=current)
            os.close(current)
            current = parent
            shutil.rmtree(name, dir_fd=current)
    finally:
        os.close(current)


def _holds_directory(directory: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False
