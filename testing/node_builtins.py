"""The built-in module names of the Node the sandbox runs, asked of that Node when tests run."""

from __future__ import annotations

import json
import subprocess
from functools import lru_cache

from splice_build.runtime.node import find_node


@lru_cache(maxsize=1)
def bundled_builtins() -> tuple[str, ...]:
    """``module.builtinModules`` of the Node the sandbox runs, asked of that Node now."""
    done = subprocess.run(
        [
            str(find_node().path),
            "-e",
            "process.stdout.write(JSON.stringify(require('node:module').builtinModules))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={},
        check=True,
    )
    names = json.loads(done.stdout)
    assert isinstance(names, list) and len(names) > 40, names
    return tuple(names)
