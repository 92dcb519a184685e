"""Nesting depth of JSON values, counted without recursion (hostile input is 100,000 deep)."""

from __future__ import annotations

from typing import Any


def nesting_depth(value: Any, stop_after: int) -> int:
    """Depth of nested objects/arrays (a scalar is 0), counted iteratively.

    Counted a level at a time, so nothing is allocated per value but the lists of one
    level's containers; stops early once ``stop_after`` is exceeded, so a hostile
    100,000-deep value costs little.
    """
    level = [value] if isinstance(value, dict | list | tuple) else []
    depth = 0
    while level:
        depth += 1
        if depth > stop_after:
            return depth
        below: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            below.extend(child for child in children if isinstance(child, dict | list | tuple))
        level = below
    return depth
