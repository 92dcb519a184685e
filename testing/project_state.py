"""The bytes of a project's state (``splice.json``, ``splice.lock``, ``.splice/``), to assert that
a refused command changed none of them.

Four files of ``.splice/`` are bookkeeping of the run itself, not state: the doit graph
(``graph.sqlite3``, which records every task run, failed ones included), the writers' lock
file ``state.lock``, the stat cache ``statcache.json`` (file states seen by a run, never
trusted by a check that runs code) and a workspace root's memo ``workspace.json``; they are
left out.
"""

from __future__ import annotations

from pathlib import Path

STATE = ("splice.json", "splice.lock", ".splice")
BOOKKEEPING = frozenset(
    {
        ".splice/graph.sqlite3",
        ".splice/state.lock",
        ".splice/statcache.json",
        ".splice/workspace.json",
    }
)


def state_bytes(project: Path) -> dict[str, bytes | None]:
    """Every file of the project state by relative path; a missing file is None, and a state
    directory holding only bookkeeping counts as no directory."""
    found: dict[str, bytes | None] = {}
    for name in STATE:
        top = project / name
        if top.is_dir():
            for path in sorted(top.rglob("*")):
                key = path.relative_to(project).as_posix()
                if key not in BOOKKEEPING and path.is_file():
                    found[key] = path.read_bytes()
        elif name != ".splice":
            found[name] = top.read_bytes() if top.exists() else None
    return found
