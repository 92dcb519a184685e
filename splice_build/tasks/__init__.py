"""The project's state as a doit build graph: ``splice.json → lock → fetch → install → verify``.

``graph.run_graph`` runs one project's graph and ``graph.run_workspace`` one graph over many
(``sync.sync_workspace`` for ``splice sync``); ``loader`` builds the tasks, ``checker`` is the
SHA-256 file checker, ``reporter`` records which tasks ran, ``summary`` shapes a sync's
result, and ``pipeline.splice_tasks`` puts the same graph into a user's ``dodo.py``.
"""

from __future__ import annotations

from splice_build.tasks.pipeline import splice_tasks

__all__ = ["splice_tasks"]
