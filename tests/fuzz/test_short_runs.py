"""Each fuzz target for a few seconds, so a regression in any parser of outside input shows up.

The real command (``python -m fuzz <target> --seconds 3``) in a subprocess: atheris where the
``test`` extra installed it (Linux x86_64), else Hypothesis — the engine reports which.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]
NEEDS_NODE = {"url_diff", "files_paths", "mcp_stdio", "mcp_http"}


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(name, marks=[pytest.mark.node] if name in NEEDS_NODE else [])
        for name in sorted(TARGETS)
    ],
)
def test_target_runs_clean_for_a_short_budget(target: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fuzz", target, "--seconds", "3", "--timeout", "10"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "Done " in output or f"fuzz {target}: " in output, output[-4000:]
