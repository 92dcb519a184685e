"""The bytes of a project's state (``splice.json``, ``splice.lock``, ``.splice/``), to assert that
a refused command changed none of them.

Two files of ``.splice/`` are bookkeeping of the run itself, not state: the doit graph
(``graph.sqlite3``, which records every task run, failed ones included) and the writers' lock
file ``state.lock``; they are left out.
"""

from __future__ import annotations

from pathlib import Path

STATE = ("splice.json", "splice.lock", ".splice")
BOOKKEEPING = frozenset({".splice/graph.sqlite3", ".splice/state.lock"})


def state_bytes(project: Path) -> dict[str, bytes | None]:
    """Every file of the project state by relative path; a missing top-level entry is None."""
    found: dict[str, bytes | None] = {}
    for name in STATE:
        top = project / name
        if not top.exists():
            found[name] = None
        elif top.is_file():
            found[name] = top.read_bytes()
        else:
            for path in sorted(top.rglob("*")):
                key = path.relative_to(project).as_posix()
                if key in BOOKKEEPING:
                    continue
                found[key] = path.read_bytes() if path.is_file() else b"<dir>"
    return found
