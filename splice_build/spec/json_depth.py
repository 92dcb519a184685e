"""Nesting depth of JSON values, counted without recursion (hostile input is 100,000 deep)."""

from __future__ import annotations

from typing import Any


def nesting_depth(value: Any, stop_after: int) -> int:
    """Depth of nested objects/arrays (a scalar is 0), counted iteratively.

    Stops early once ``stop_after`` is exceeded, so a hostile 100,000-deep value costs little.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > stop_after:
            return deepest
        stack.extend((child, depth) for child in children)
    return deepest
