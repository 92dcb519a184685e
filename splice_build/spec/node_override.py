"""The Node.js binary ``SPLICE_NODE`` names (docs/cli.md, docs/security.md#grants-and-project-state).

Splice runs it with ``--version`` as the user, outside any sandbox, before it starts a tool
(runtime/node.py), so no grant may write it (spec/project_state.py). Both take its path from
here, as the probe runs it: a relative path from the current directory, a bare name from the
default search path (the probe's environment is empty).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def override_path(env: Mapping[str, str] | None = None) -> Path | None:
    """The binary ``SPLICE_NODE`` of ``env`` (default: this process's) names, or None when
    it is unset or names nothing."""
    override = (os.environ if env is None else env).get("SPLICE_NODE")
    if not override:
        return None
    if os.sep not in override:
        import shutil

        found = shutil.which(override, path=os.defpath)
        return None if found is None else Path(os.path.abspath(found))
    return Path(os.path.abspath(override))
