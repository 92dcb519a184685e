"""The project's state as a doit build graph: ``splice.json → lock → fetch → install → verify``.

``graph.run_graph`` is the one entry point; ``loader`` builds the tasks, ``checker`` is the
SHA-256 file checker, ``reporter`` records which tasks ran.
"""
