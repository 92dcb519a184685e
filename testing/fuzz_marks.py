"""The pytest marks of a fuzz target's tests (tests/fuzz/): what its set-up needs here."""

from __future__ import annotations

import pytest

from testing.isolation import needs_os_layer

# Targets that start Node (a long-lived oracle or a real sandbox).
NEEDS_NODE = frozenset(
    {
        "url_diff",
        "files_paths",
        "mcp_stdio",
        "mcp_http",
        "mcp_wire",
        "fs_walk",
        "fs_walk_os",
        "net_walk",
        "net_walk_os",
    }
)
# Targets whose sandbox must have the OS layer (fuzz/sandbox_targets.py).
NEEDS_OS_LAYER = frozenset({"fs_walk_os"})


def target_marks(target: str) -> list[pytest.MarkDecorator]:
    """The marks of a test that runs ``target``."""
    marks = [pytest.mark.node] if target in NEEDS_NODE else []
    return marks + ([needs_os_layer()] if target in NEEDS_OS_LAYER else [])
