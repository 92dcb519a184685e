"""The project's state as a doit build graph: ``splice.json → lock → fetch → install → verify``.

``graph.run_graph`` runs one project's graph and ``graph.run_workspace`` one graph over many
(``sync.sync_workspace`` for ``splice sync``); ``loader`` builds the tasks, ``checker`` is the
SHA-256 file checker, ``reporter`` records which tasks ran, ``summary`` shapes a sync's
result, and ``pipeline.splice_tasks`` puts the same graph into a user's ``dodo.py``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["splice_tasks"]


def __getattr__(name: str) -> Any:
    """``splice_tasks`` imported on first use: ``splice sync`` imports this package too."""
    if name == "splice_tasks":
        from splice_build.tasks.pipeline import splice_tasks

        return splice_tasks
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
