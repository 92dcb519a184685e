"""The one way Splice starts git in a checkout that may be anyone's.

A repository's own configuration can name commands that git runs while it only reads
(``core.fsmonitor`` is run on every read of the index, so ``git ls-files`` runs it), and a
directory of a clone that looks like a bare repository (``HEAD``, ``objects/``, ``refs/``,
``config``) is a repository of its own to a git started inside it. Settings given on the
command line win over any repository's: an implicit bare repository is refused, no monitor
command, hook or pager ever runs and no transport is allowed (a partial clone's lazy fetch).
``tests/security/test_checkout_git.py`` sets every key ``git help --config`` lists to a
command and checks that none runs.

git itself is looked up only in the absolute directories of ``PATH``: an empty entry (a
trailing ``:``) or ``.`` means the current directory, which is the checkout, and a ``git``
file in it was run. It gets an allow-listed environment (no ``GIT_*`` variable of the caller
redirects the repository, index, configuration or helper programs), no input, and a time
limit: a checkout's ``.gitignore``, index or ``HEAD`` can be a FIFO, whose opening never
returns, and the caller then does without git. Used by the workspace's member listing
(``project/workspace.py``) and ``splice secret-scan`` (``security/secret_scan.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# Long enough for ``ls-files --others`` over a large work tree; a FIFO blocks forever.
TIMEOUT_SECONDS = 60.0

_OVERRIDES = (
    "--no-pager",
    "-c",
    "safe.bareRepository=explicit",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "protocol.allow=never",
)

# What git needs from the caller: where the user's own (global) configuration is.
_KEPT = ("HOME", "XDG_CONFIG_HOME")


def trusted_path() -> str:
    """The absolute directories of ``PATH`` (a relative one is looked up from the cwd)."""
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(e for e in entries if os.path.isabs(e))


def _environment(path: str) -> dict[str, str]:
    env = {name: os.environ[name] for name in _KEPT if name in os.environ}
    env.update(PATH=path, LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_NO_LAZY_FETCH="1")
    return env


def run_git(cwd: Path, *args: str) -> bytes | None:
    """git's standard output, or None when git is missing, fails or outlasts the limit."""
    path = trusted_path()
    git = shutil.which("git", path=path)
    if git is None:
        return None
    try:
        done = subprocess.run(
            [os.path.abspath(git), *_OVERRIDES, *args],
            cwd=cwd,
            env=_environment(path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
            timeout=TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None
