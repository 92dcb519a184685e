"""The Node.js built-ins a tool may load: ``splice_build/schemas/builtins.json``, loaded once.

The list travels in every job (``Job.encode``) and the host's module guard refuses every
other built-in on every route (docs/security.md#built-in-modules). Kept as data so the host,
the tests and the documentation read one list.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def allowed_builtins() -> tuple[str, ...]:
    """The allowed module names, without the ``node:`` prefix, sorted.

    Raises ``ValueError`` when the data file is malformed (a packaging bug): the runtime then
    runs nothing rather than guess.
    """
    text = (resources.files("splice_build.schemas") / "builtins.json").read_text("utf-8")
    allowed = json.loads(text).get("allowed")
    if not isinstance(allowed, dict) or not allowed:
        raise ValueError("schemas/builtins.json: 'allowed' must be a non-empty object")
    names = tuple(sorted(allowed))
    for name in names:
        if not name or name.startswith(("node:", "_")) or not isinstance(allowed[name], str):
            raise ValueError(f"schemas/builtins.json: bad entry {name!r}")
    return names
