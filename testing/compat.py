"""Load the compatibility vectors of ``tests/compat/*.json`` (docs/compatibility.md, "How the
suite checks it").

Each file holds facts about the TypeScript Splice in our own format; the runners beside them
turn every entry into one test case, so a vector can fail on its own and is named after its
content.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

VECTORS = Path(__file__).resolve().parents[1] / "tests" / "compat"


@functools.cache
def load(name: str) -> Any:
    """The parsed ``tests/compat/<name>.json`` (read once; treat it as read-only)."""
    return json.loads((VECTORS / f"{name}.json").read_text(encoding="utf-8"))


def params(items: Iterable[Any], *, label: str | None = None) -> list[Any]:
    """``pytest.param`` per vector, its id taken from ``label`` (a key) or its text."""
    out = []
    for index, item in enumerate(items):
        shown = item.get(label) if label and isinstance(item, dict) else None
        if shown is None:
            shown = json.dumps(item, ensure_ascii=True)
        out.append(pytest.param(item, id=f"{index}:{_short(str(shown))}"))
    return out


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def deepen(value: Any, path: Sequence[str | int], depth: int) -> Any:
    """``value`` with an array nested ``depth`` levels deep placed at ``path`` (built without
    recursion, as deep as a JSON parser must accept)."""
    nested: list[Any] = []
    for _ in range(depth - 1):
        nested = [nested]
    target = value
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = nested
    return value
