"""Scratch directories of fuzz runs, and their removal.

A run needs two kinds: the copy of a target's seeds that libFuzzer grows (``engine.py``) and
the files a target writes per input (``targets.py``, on a RAM file system when there is
one). Each is named after the process that made it, ``splice-fuzz-<pid>-<label>-…``, and is
removed when that process exits normally (``atexit``). libFuzzer ends its process with C's
``exit()``, before Python's exit handlers can run, so every new scratch directory first
removes those whose process is gone: a run leaves at most its own behind, and only until the
next one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "splice-fuzz-"


def scratch_dir(label: str, base: str | None = None) -> Path:
    """A new directory under ``base`` (the temporary directory by default) for this process."""
    root = Path(base if base is not None else tempfile.gettempdir())
    remove_stale(root)
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-{label}-", dir=root))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def remove_stale(root: Path) -> list[Path]:
    """Remove the scratch directories in ``root`` whose process no longer exists."""
    removed = []
    for entry in root.glob(f"{PREFIX}*"):
        pid = entry.name[len(PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
