"""Acting as another local user (uid 65534) from a test run as root (tests/tasks/
test_other_writers.py, tests/project/test_home_owner.py)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

NOBODY = 65534

as_another_user = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="acts as another local user (root and setpriv)",
)


def as_nobody(script: str, *args: str) -> None:
    """Run the shell ``script`` (its arguments ``$1``…) as the other local user."""
    subprocess.run(
        [
            *("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"),
            *("sh", "-c", script, "sh", *args),
        ],
        check=True,
    )
